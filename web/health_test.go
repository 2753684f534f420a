package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/metrics"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
	"github.com/gitaso/gitaso/web"
)

const gitPassword = "hunter2-git-token"

// daemon is the real loop (a source, the emulator, a state file) behind
// the API and the page, as gitaso serve runs them.
type daemon struct {
	srv *httptest.Server
	rec *reconcile.Reconciler
	env *emutest.Env
}

func startDaemon(t *testing.T, src source.Source, stateFile string) *daemon {
	t.Helper()
	env := emutest.New(t)
	db, err := state.Open(stateFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	cfg.Interval, cfg.SyncPeriod = time.Hour, time.Hour // only Poll and Sync run it
	cfg.UnreadyAfter = time.Nanosecond
	rec := reconcile.New(src, db, env.Clients, cfg, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Loop(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	d := &daemon{rec: rec, env: env, srv: httptest.NewServer(api.New(db, api.Options{Sync: rec.Sync, Ready: rec.Ready, Status: rec.Status,
		Metrics: metrics.New(), Logger: quiet, UI: web.Handler()}))}
	t.Cleanup(d.srv.Close)
	d.wait(t, "the startup run", func(h record.Health) bool { return h.Ready })
	return d
}

func (d *daemon) status(t *testing.T) record.Health {
	t.Helper()
	resp, err := http.Get(d.srv.URL + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h record.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

func (d *daemon) wait(t *testing.T, what string, ok func(record.Health) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for h := d.status(t); !ok(h); h = d.status(t) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %+v", what, h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// poll triggers one fetch of the source and waits until it was made.
func (d *daemon) poll(t *testing.T) {
	t.Helper()
	before := d.status(t).Source.LastAttemptAt
	if err := d.rec.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.wait(t, "the poll's fetch", func(h record.Health) bool { return h.Source.LastAttemptAt.After(before) })
}

// healthBanner loads the page in Chromium and returns the health banner
// and whether it is shown; the DOM never shows the Git password.
func (d *daemon) healthBanner(t *testing.T) (string, bool) {
	t.Helper()
	dom := dumpDOM(t, d.srv.URL+"/#resources")
	assertNoSecrets(t, "the page", dom, []string{gitPassword})
	b := element(t, dom, "section", `id="health"`)
	return b, !strings.Contains(b[:strings.Index(b, ">")], "hidden")
}

// TestBrowserSourceFailureBanner: a Git server that starts refusing, and
// one that accepts and never answers, show a banner after one poll: the
// repository (without its password), the error, since when, how many
// failures, the last revision fetched, and why /readyz answers 503. The
// next poll that fetches takes it away.
func TestBrowserSourceFailureBanner(t *testing.T) {
	chromiumPath(t)
	srv := gittest.NewServer(t, gittest.WithBasicAuth("gitaso", gitPassword))
	repo := srv.CreateRepo("platform")
	rev := repo.Commit(map[string]string{"infra/rg.yaml": "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: page-rg\n  namespace: ops\nspec:\n  location: westeurope\n"}, nil, "first")
	u := strings.Replace(repo.URL(), "https://", "https://gitaso:"+gitPassword+"@", 1)
	src, err := source.NewGit(source.GitOptions{URL: u, Path: "infra", CABundle: srv.CABundle(), CacheDir: t.TempDir(),
		Timeout: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, src, filepath.Join(t.TempDir(), "state.db"))
	if b, shown := d.healthBanner(t); shown || text(b) != "" {
		t.Fatalf("a health banner while the source fetches: %s", b)
	}
	for _, tc := range []struct {
		name  string
		fault gittest.Fault
		want  string
	}{
		{"refusing", gittest.FaultRefuse, "status code: 503"},
		{"never answering", gittest.FaultHang, "git server did not answer in time: no answer within 5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.SetFault(tc.fault)
			d.poll(t)
			b, shown := d.healthBanner(t)
			if !shown {
				t.Fatalf("no health banner after a failed poll: %s", b)
			}
			bt := text(b)
			for _, want := range []string{"The source cannot be fetched", repo.URL() + " (branch main) has failed 1 time in a row since",
				tc.want, "Last fetched", rev[:12], "Nothing new is applied until a fetch works", "/readyz answers 503: the source cannot be fetched since"} {
				if !strings.Contains(bt, want) {
					t.Errorf("banner lacks %q:\n%s", want, bt)
				}
			}
			if strings.Contains(bt, "state cannot be written") {
				t.Errorf("the banner speaks of the state:\n%s", bt)
			}
			srv.SetFault(gittest.FaultNone)
			d.poll(t)
			if b, shown := d.healthBanner(t); shown {
				t.Errorf("the banner stays after the source fetched again: %s", b)
			}
		})
	}
}

// TestBrowserFullDiskBanner: a state file on a full file system (a real
// tmpfs, filled) shows a banner with the error, since when and the next
// try, and the retry once there is room takes it away.
func TestBrowserFullDiskBanner(t *testing.T) {
	chromiumPath(t)
	disk := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Skipf("a full file system needs a tmpfs mount, which is not allowed here (uid %d): %v: %s", os.Getuid(), err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", disk).CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, out)
		}
	})
	dir := t.TempDir()
	write := func(n int) {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\napiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: full-rg-%03d\n  namespace: ops\nspec:\n  location: westeurope\n  tags:\n    purpose: a full disk must not lose this run %03d\n", i, i)
		}
		if err := os.WriteFile(filepath.Join(dir, "rg.yaml"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	d := startDaemon(t, source.NewDir(dir, ""), filepath.Join(disk, "state.db"))
	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 64<<10); ; {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	write(200)
	if err := d.rec.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.wait(t, "the state failure", func(h record.Health) bool { return h.State.Failing })
	b, shown := d.healthBanner(t)
	if !shown {
		t.Fatalf("no banner while the state cannot be written: %s", b)
	}
	bt := text(b)
	for _, want := range []string{"The state cannot be written", "could not record since", "nothing of them was applied",
		"Next try at", "no space left on device", "/readyz answers 503: the state cannot be written since"} {
		if !strings.Contains(bt, want) {
			t.Errorf("banner lacks %q:\n%s", want, bt)
		}
	}
	if strings.Contains(bt, "source cannot be fetched") {
		t.Errorf("the banner speaks of the source:\n%s", bt)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	d.wait(t, "the retry", func(h record.Health) bool { return !h.State.Failing })
	if b, shown := d.healthBanner(t); shown {
		t.Errorf("the banner stays after the state was written again: %s", b)
	}
}
