package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/render"
	"github.com/gitaso/gitaso/state"
)

// A commit whose rendering fails (here an unset variable under strict
// substitution) is a refused run with its revision and its errors, once:
// not a source failure warned about on every poll.
func TestRenderErrorIsARefusedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	env := emutest.New(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rg.yaml"), []byte(
		"apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: ops\nspec:\n  location: ${LOCATION}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rnd, err := render.New(render.Options{Substitute: true, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	cfg.Interval = 50 * time.Millisecond
	rec := reconcile.New(source.NewDir(dir, "", source.WithRenderer(rnd)), db, env.Clients, cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Loop(ctx) }()
	time.Sleep(time.Second) // twenty polls
	cancel()
	<-done
	runs, err := db.Runs(100)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want one refused run: %+v", len(runs), runs)
	}
	r := runs[0]
	if r.Outcome != record.OutcomeRefused || !strings.HasPrefix(r.Revision, "dir-") || !strings.Contains(r.Error, "${LOCATION}") {
		t.Errorf("run %+v, want refused with its revision and the error", r)
	}
	if latest, _ := db.LatestRevision(); latest != r.Revision {
		t.Errorf("latest revision %q, want the refused one %q", latest, r.Revision)
	}
}

// refusedEnv is a reconciler over a directory against the emulator, with
// the API (metrics, runs, readiness) in front of its state.
type refusedEnv struct {
	env *emutest.Env
	dir string
	db  *state.DB
	rec *reconcile.Reconciler
	api *httptest.Server
}

const refusedRG = "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: refused-rg\n  namespace: ops\nspec:\n  location: westeurope\n"

func newRefusedEnv(t *testing.T) *refusedEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("emulator")
	}
	e := &refusedEnv{env: emutest.New(t), dir: t.TempDir()}
	e.write(t, "rg.yaml", refusedRG)
	e.open(t, filepath.Join(t.TempDir(), "state.db"))
	return e
}

// open opens the state file and a new reconciler on it (a daemon start).
func (e *refusedEnv) open(t *testing.T, path string) {
	t.Helper()
	db, err := state.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := reconcile.DefaultConfig()
	cfg.Global = e.env.Cred
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.db = db
	e.rec = reconcile.New(source.NewDir(e.dir, ""), db, e.env.Clients, cfg, quiet)
	e.api = httptest.NewServer(api.New(db, api.Options{Ready: e.rec.Ready, Approve: e.rec.ApproveDeletions, Logger: quiet}))
	t.Cleanup(e.api.Close)
}

func (e *refusedEnv) write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// poll runs what the daemon runs when a poll finds a new revision.
func (e *refusedEnv) poll(t *testing.T) (*reconcile.Report, error) {
	t.Helper()
	return e.rec.Once(context.Background(), reconcile.Options{Trigger: "interval", Refresh: true})
}

// get answers GET path of the API: the status and the body.
func (e *refusedEnv) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(e.api.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// gauge returns the value of an unlabelled metric in /metrics.
func (e *refusedEnv) gauge(t *testing.T, name string) string {
	t.Helper()
	_, body := e.get(t, "/metrics")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics has no %s:\n%s", name, body)
	return ""
}

// runsTail is the end of GET /api/v1/runs.
type runsTail struct {
	Items   []record.Run `json:"items"`
	Applied string       `json:"applied"`
	Refused *record.Run  `json:"refused"`
}

func (e *refusedEnv) runs(t *testing.T) runsTail {
	t.Helper()
	code, body := e.get(t, "/api/v1/runs?limit=5")
	var out runsTail
	if err := json.Unmarshal([]byte(body), &out); code != http.StatusOK || err != nil {
		t.Fatalf("GET /api/v1/runs: %d %v\n%s", code, err, body)
	}
	return out
}

// TestRefusedRevisionStands: a refused commit is followed at once by a run
// that refreshes the last good revision and succeeds; the refusal still
// stands after it (and after further resyncs): gitaso_revision_refused is
// 1, GET /api/v1/runs names the refused run, the state's latest revision is
// the refused one, and the daemon stays ready with the last good revision
// in force. A fixing commit ends it. Before the refusal was kept in state,
// the metric read 0 once the refresh run was recorded.
func TestRefusedRevisionStands(t *testing.T) {
	e := newRefusedEnv(t)
	if _, err := e.poll(t); err != nil {
		t.Fatal(err)
	}
	good, _ := e.db.LastGoodRevision()
	if got := e.gauge(t, "gitaso_revision_refused"); got != "0" {
		t.Fatalf("gitaso_revision_refused %s before any refusal", got)
	}
	e.write(t, "broken.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: broken\n  namespace: ops\nspec:\n  location: [westeurope\n")
	for i := range 3 { // the refused poll, then two resyncs of the same revision
		_, err := e.poll(t)
		if !errors.Is(err, reconcile.ErrRefused) {
			t.Fatalf("run %d: %v, want ErrRefused", i, err)
		}
		rs, err := e.db.Runs(2)
		if err != nil {
			t.Fatal(err)
		}
		// The refresh of the last good revision ran after the refusal and
		// is the newest run: what the page and the metric used to read.
		if len(rs) != 2 || rs[0].Outcome != record.OutcomeSucceeded || rs[0].Revision != good || rs[1].Outcome != record.OutcomeRefused {
			t.Fatalf("run %d: newest runs %+v, want the refresh of %s after the refused run", i, rs, good)
		}
		refused := rs[1]
		if got := e.gauge(t, "gitaso_revision_refused"); got != "1" {
			t.Errorf("run %d: gitaso_revision_refused %s after the refresh run, want 1", i, got)
		}
		tail := e.runs(t)
		if tail.Refused == nil || tail.Refused.ID != refused.ID || tail.Refused.Revision != refused.Revision ||
			!strings.Contains(tail.Refused.Error, "broken.yaml") || tail.Applied != good {
			t.Errorf("run %d: GET /api/v1/runs refused %+v applied %q, want run %d of %s and %s applied", i, tail.Refused, tail.Applied, refused.ID, refused.Revision, good)
		}
		if latest, _ := e.db.LatestRevision(); latest != refused.Revision {
			t.Errorf("run %d: latest revision %q, want the refused %q (the refresh of %s is not newer)", i, latest, refused.Revision, good)
		}
		if code, body := e.get(t, "/readyz"); code != http.StatusOK {
			t.Errorf("run %d: /readyz %d %q, want ready: the last good revision is in force", i, code, body)
		}
	}
	if err := os.Remove(filepath.Join(e.dir, "broken.yaml")); err != nil {
		t.Fatal(err)
	}
	e.write(t, "rg.yaml", strings.Replace(refusedRG, "location: westeurope", "location: westeurope\n  tags:\n    fixed: \"yes\"", 1))
	if _, err := e.poll(t); err != nil {
		t.Fatalf("the fixing commit: %v", err)
	}
	if got := e.gauge(t, "gitaso_revision_refused"); got != "0" {
		t.Errorf("gitaso_revision_refused %s after a fixing commit, want 0", got)
	}
	if tail := e.runs(t); tail.Refused != nil {
		t.Errorf("GET /api/v1/runs still names refused run %+v after a fixing commit", tail.Refused)
	}
	if _, ok, _ := e.db.Refused(); ok {
		t.Error("state keeps the refusal after a fixing commit")
	}
}

// TestReadyAfterRestartWithRefusedRevision: a daemon that restarts on a
// refused commit is ready (the revision applied before the restart stays in
// force, as in a daemon that did not restart) and shows the refusal; before
// its first run, /readyz names the revision state holds instead of saying
// that none was applied.
func TestReadyAfterRestartWithRefusedRevision(t *testing.T) {
	e := newRefusedEnv(t)
	if _, err := e.poll(t); err != nil {
		t.Fatal(err)
	}
	good, _ := e.db.LastGoodRevision()
	path := e.db.Path()
	e.api.Close()
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	e.write(t, "rg.yaml", strings.Replace(refusedRG, "westeurope", "${LOCATION}", 1)+"  badField: [1\n")
	e.open(t, path) // the restart
	code, body := e.get(t, "/readyz")
	if code != http.StatusServiceUnavailable || strings.Contains(body, "no revision applied yet") || !strings.Contains(body, good) {
		t.Errorf("/readyz before the first run: %d %q, want 503 naming the applied revision %s", code, body, good)
	}
	if _, err := e.poll(t); !errors.Is(err, reconcile.ErrRefused) {
		t.Fatalf("first run after the restart: %v, want ErrRefused", err)
	}
	if code, body := e.get(t, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after a refused first run: %d %q, want ready with %s in force", code, body, good)
	}
	if got := e.gauge(t, "gitaso_revision_refused"); got != "1" {
		t.Errorf("gitaso_revision_refused %s, want 1", got)
	}
}

// TestReadyWithoutAppliedRevision: with nothing ever applied, a refused
// first run leaves the daemon not ready, saying so and why.
func TestReadyWithoutAppliedRevision(t *testing.T) {
	e := newRefusedEnv(t)
	e.write(t, "rg.yaml", refusedRG+"  badField: [1\n")
	if _, err := e.poll(t); !errors.Is(err, reconcile.ErrRefused) {
		t.Fatalf("%v, want ErrRefused", err)
	}
	code, body := e.get(t, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "no revision applied yet: revision refused") || !strings.Contains(body, "rg.yaml") {
		t.Errorf("/readyz %d %q, want 503: no revision applied yet, with the refusal", code, body)
	}
}
