package e2e_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// envOptions change what newEnvWith builds; the zero value gives newEnv's
// setup.
type envOptions struct {
	emulator []emulator.Option
	config   func(*reconcile.Config)
	client   func(*azure.Options)
	// renderer is the source's render stage (kustomize, substitution);
	// nil parses the files as they are.
	renderer source.Renderer
	// log receives the reconciler's log; nil discards it.
	log *slog.Logger
	// dir reads the repository's work clone as a directory source (--dir)
	// instead of following its branch.
	dir bool
}

// newEnvWith is newEnv with emulator options, reconcile settings (default
// policies) and ARM client options (retries) of the test's choosing.
func newEnvWith(t *testing.T, o envOptions) *env {
	t.Helper()
	em := emutest.New(t, emutest.Roles("Contributor", "User Access Administrator"),
		emutest.Emulator(o.emulator...), emutest.ClientOptions(o.client))
	dir := t.TempDir()
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("infra")
	src, err := source.NewGit(source.GitOptions{URL: repo.URL(), Branch: repo.Branch(), Path: "clusters/snd", CacheDir: filepath.Join(dir, "cache"), CABundle: srv.CABundle(), Renderer: o.renderer})
	if err != nil {
		t.Fatal(err)
	}
	var from source.Source = src
	if o.dir {
		from = source.NewDir(repo.Work(), "clusters/snd")
	}
	dbPath := filepath.Join(dir, "gitaso.db")
	db, err := state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cfg := reconcile.DefaultConfig()
	cfg.Global = em.Cred
	if o.config != nil {
		o.config(&cfg)
	}
	rec := reconcile.New(from, db, em.Clients, cfg, o.log)
	e := &env{t: t, emu: em.Emu, repo: repo, db: db, rec: rec, cli: em.Client, sub: em.Sub, files: map[string]string{}, dbPath: dbPath}
	e.reopen = func() {
		t.Helper()
		db, err := state.Open(dbPath)
		if err != nil {
			t.Fatalf("open the state again: %v", err)
		}
		t.Cleanup(func() { _ = db.Close() })
		e.db, e.rec = db, reconcile.New(from, db, em.Clients, cfg, o.log)
	}
	return e
}

// lookup returns a resource from state and whether it is there.
func (e *env) lookup(ns, group, kind, name string) (record.Resource, bool) {
	e.t.Helper()
	r, ok, err := e.db.Resource(record.ResourceKey(ns, group, kind, name))
	if err != nil {
		e.t.Fatalf("state: %v", err)
	}
	return r, ok
}

// armRequests returns the ARM requests the emulator saw since the last
// reset, as "METHOD path" (operation polls left out), for methods given
// (all when none).
func (e *env) armRequests(methods ...string) []string {
	var out []string
	for _, l := range e.emu.RequestLog() {
		if strings.Contains(l.Path, "/operations/") || strings.Contains(l.Path, "/operationResults/") ||
			!strings.HasPrefix(strings.ToLower(l.Path), "/subscriptions/") {
			continue
		}
		keep := len(methods) == 0
		for _, m := range methods {
			keep = keep || l.Method == m
		}
		if keep {
			out = append(out, l.Method+" "+strings.ToLower(l.Path))
		}
	}
	return out
}

// mustPut creates or replaces a resource behind gitaso's back and returns
// ARM's answer.
func (e *env) mustPut(id, apiVersion, body string) []byte {
	e.t.Helper()
	out, err := e.cli.Put(context.Background(), id, apiVersion, []byte(body))
	if err != nil {
		e.t.Fatalf("PUT %s: %v", id, err)
	}
	return out
}

// exists reports whether ARM has the resource.
func (e *env) exists(id, apiVersion string) bool {
	e.t.Helper()
	_, err := e.cli.Get(context.Background(), id, apiVersion)
	if err != nil && !strings.Contains(err.Error(), "404") {
		e.t.Fatalf("GET %s: %v", id, err)
	}
	return err == nil
}

// planned returns the plan entry of a resource, failing when it is absent.
func planned(t *testing.T, p *planner.Plan, ns, group, kind, name string) *planner.Resource {
	t.Helper()
	r := p.Get(record.ResourceKey(ns, group, kind, name))
	if r == nil {
		t.Fatalf("plan has no %s/%s/%s", ns, kind, name)
	}
	return r
}

// rgID is the ARM ID of a resource group of the emulator's subscription.
func (e *env) rgID(name string) string { return "/subscriptions/" + e.sub + "/resourceGroups/" + name }

// waitNextSecond sleeps until the wall clock has passed a second boundary
// (at most one second): lastTransitionTime has a resolution of one second.
func waitNextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 10*time.Millisecond).Sub(now))
}

// placeholder keeps clusters/snd in the commit once every manifest is gone
// (a source path missing from a commit is an error).
const placeholder = "# kept so that the directory exists\n"
