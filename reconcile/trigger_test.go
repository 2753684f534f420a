package reconcile_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// loopEnv is a daemon loop over a one-resource directory against the
// emulator, with the API in front of it.
type loopEnv struct {
	db  *state.DB
	rec *reconcile.Reconciler
	api *httptest.Server
	dir string
}

func startLoop(t *testing.T) *loopEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("emulator")
	}
	env := emutest.New(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rg.yaml"), []byte(
		"apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: trigger-rg\n  namespace: ops\nspec:\n  location: westeurope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	cfg.Interval = time.Hour // only triggers run it
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec := reconcile.New(source.NewDir(dir, ""), db, env.Clients, cfg, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Loop(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(api.New(db, api.Options{Sync: rec.Sync, Approve: rec.ApproveDeletions, Webhook: rec.Poll, WebhookSecret: "hook", Logger: quiet}))
	t.Cleanup(srv.Close)
	e := &loopEnv{db: db, rec: rec, api: srv, dir: dir}
	e.waitRuns(t, func(rs []record.Run) bool { return len(rs) == 1 && rs[0].Outcome != "" }, "the startup run")
	return e
}

func (e *loopEnv) runs(t *testing.T) []record.Run {
	t.Helper()
	rs, err := e.db.Runs(0)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func (e *loopEnv) waitRuns(t *testing.T, ok func([]record.Run) bool, what string) []record.Run {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rs := e.runs(t)
		if ok(rs) {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; runs: %+v", what, rs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// idle waits until no run has started for quiet (and none is in progress).
func (e *loopEnv) idle(t *testing.T, quiet time.Duration) []record.Run {
	t.Helper()
	n, since := -1, time.Now()
	deadline := time.Now().Add(60 * time.Second)
	for {
		rs := e.runs(t)
		if len(rs) != n || (len(rs) > 0 && rs[0].Outcome == "") {
			n, since = len(rs), time.Now()
		}
		if time.Since(since) >= quiet {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the loop never went idle; %d runs", len(rs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countTrigger(rs []record.Run, trigger string) int {
	n := 0
	for _, r := range rs {
		if r.Trigger == trigger {
			n++
		}
	}
	return n
}

// TestSyncFloodIsCoalesced: 700 POST /api/v1/sync spread over a few seconds
// by concurrent clients produce a handful of runs, not one per request:
// triggers that arrive while one is pending are absorbed by it, and
// API-triggered runs start at least reconcile.MinTriggerInterval apart.
func TestSyncFloodIsCoalesced(t *testing.T) {
	e := startLoop(t)
	const (
		posts   = 700
		clients = 8
		spread  = 3 * time.Second
	)
	var accepted atomic.Int32
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := c; i < posts; i += clients {
				// Pace the requests evenly over spread.
				time.Sleep(time.Until(start.Add(spread * time.Duration(i) / posts)))
				req, _ := http.NewRequest(http.MethodPost, e.api.URL+"/api/v1/sync", nil)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					accepted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	rs := e.idle(t, reconcile.MinTriggerInterval+time.Second)
	n := countTrigger(rs, "api")
	t.Logf("%d POSTs (%d accepted) in %s: %d API-triggered runs", posts, accepted.Load(), elapsed.Round(time.Millisecond), n)
	if accepted.Load() != posts {
		t.Errorf("%d of %d POSTs accepted", accepted.Load(), posts)
	}
	// One run at once, then at most one per MinTriggerInterval, plus the
	// one absorbing the requests after the last.
	limit := 2 + int(elapsed/reconcile.MinTriggerInterval)
	if n < 1 || n > limit {
		t.Errorf("%d API-triggered runs for %d POSTs in %s, want 1..%d", n, posts, elapsed, limit)
	}
	// Runs started at least MinTriggerInterval after the previous one ended.
	for i := 0; i+1 < len(rs); i++ {
		if rs[i].Trigger != "api" {
			continue
		}
		if gap := rs[i].StartedAt.Sub(rs[i+1].FinishedAt); gap < reconcile.MinTriggerInterval-50*time.Millisecond {
			t.Errorf("run %d started %s after run %d finished, want at least %s", rs[i].ID, gap, rs[i+1].ID, reconcile.MinTriggerInterval)
		}
	}
}

// TestRefreshAfterPendingPoll: a refresh asked for while a poll (a webhook)
// is pending is honoured: the pending trigger becomes a refresh run.
func TestRefreshAfterPendingPoll(t *testing.T) {
	e := startLoop(t)
	// Within MinTriggerInterval of the startup run both triggers wait.
	e.rec.Trigger(false)
	e.rec.Trigger(true)
	rs := e.idle(t, reconcile.MinTriggerInterval+time.Second)
	if len(rs) != 2 || rs[0].Trigger != "api" {
		t.Fatalf("runs after a poll then a refresh: %+v, want the startup run and one api (refresh) run", rs)
	}
	// A poll alone of an unchanged revision runs nothing.
	e.rec.Trigger(false)
	if rs := e.idle(t, reconcile.MinTriggerInterval+time.Second); len(rs) != 2 {
		t.Errorf("a poll of an unchanged revision ran: %+v", rs[0])
	}
}

// post sends a JSON POST to the API and returns the status and body.
func (e *loopEnv) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(e.api.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (e *loopEnv) metric(t *testing.T, name string) string {
	t.Helper()
	resp, err := http.Get(e.api.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return ""
}

// TestApproveThroughTheAPI: a revision that deletes everything is held; the
// metrics say so; POST /api/v1/approve with a prefix of its revision
// releases the deletion and the triggered run applies it.
func TestApproveThroughTheAPI(t *testing.T) {
	e := startLoop(t)
	if err := os.Remove(filepath.Join(e.dir, "rg.yaml")); err != nil {
		t.Fatal(err)
	}
	if code, body := e.post(t, "/api/v1/sync", "{}"); code != http.StatusAccepted {
		t.Fatalf("sync: %d %s", code, body)
	}
	rs := e.waitRuns(t, func(rs []record.Run) bool { return len(rs) == 2 && rs[0].Outcome != "" }, "the run of the emptied directory")
	held := rs[0]
	if held.Outcome != record.OutcomeHeld || held.Held == nil || held.Held.Deletions != 1 {
		t.Fatalf("run of an emptied directory: %+v", held)
	}
	if a, b := e.metric(t, "gitaso_revision_held"), e.metric(t, "gitaso_deletions_held"); a != "1" || b != "1" {
		t.Errorf("held gauges %s %s, want 1 1", a, b)
	}
	if code, body := e.post(t, "/api/v1/approve", `{"revision":"0123456789abcdef"}`); code != http.StatusConflict || !strings.Contains(body, "no deletions of that revision are held") {
		t.Errorf("approve another revision: %d %s", code, body)
	}
	if code, body := e.post(t, "/api/v1/approve", `{"revision":"`+held.Revision[:12]+`"}`); code != http.StatusAccepted {
		t.Fatalf("approve: %d %s", code, body)
	}
	rs = e.waitRuns(t, func(rs []record.Run) bool { return len(rs) == 3 && rs[0].Outcome != "" }, "the approved run")
	if rs[0].Outcome != record.OutcomeSucceeded || rs[0].Trigger != "api" || rs[0].Counts["delete"] != 1 {
		t.Errorf("approved run: %+v", rs[0])
	}
	if _, ok, _ := e.db.Resource(record.ResourceKey("ops", "resources.azure.com", "ResourceGroup", "trigger-rg")); ok {
		t.Error("the resource group is still in state")
	}
	if a, b := e.metric(t, "gitaso_revision_held"), e.metric(t, "gitaso_deletions_held"); a != "0" || b != "0" {
		t.Errorf("held gauges after the approval %s %s, want 0 0", a, b)
	}
}
