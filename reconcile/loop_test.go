package reconcile_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// TestLoopRetriesFailedResources: a resource that fails with a retryable
// error is retried by the daemon loop after a back-off, without a new
// commit and long before the sync period.
func TestLoopRetriesFailedResources(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	env := emutest.New(t)
	// Two provisioning failures (Warning, retryable), then success.
	env.Emu.SetFaults(emulator.Faults{ProvisioningFailures: []emulator.ProvisioningFailure{
		{Match: "/resourceGroups/flaky-rg", Code: "InternalServerError", Message: "try again", Count: 2}}})
	// No polling (an hour apart): only the retry can run it again.
	db, stop := startLoopOver(t, env, "flaky-rg", func(cfg *reconcile.Config) { cfg.Interval = time.Hour })
	defer stop()

	key := record.ResourceKey("ops", "resources.azure.com", "ResourceGroup", "flaky-rg")
	deadline := time.Now().Add(20 * time.Second)
	sawFailure := false
	for time.Now().Before(deadline) {
		r, ok, err := db.Resource(key)
		if err != nil {
			t.Fatal(err)
		}
		if ok && r.Ready.Status == record.StatusFalse {
			sawFailure = true
		}
		if ok && r.Ready.Status == record.StatusTrue {
			runs, _ := db.Runs(10)
			if !sawFailure && len(runs) < 2 {
				t.Errorf("ready without a failed run first: %+v", runs)
			}
			if runs[0].Trigger != "retry" {
				t.Errorf("the run that succeeded was triggered by %q, want retry", runs[0].Trigger)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r, _, _ := db.Resource(key)
	t.Fatalf("not Ready after retries: %+v", r.Ready)
}

// TestLoopResyncKeepsItsPeriod: resyncs run on their own clock, not on
// poll ticks (here one an hour), each due one sync period after the run that
// last read Azure started, never sooner.
func TestLoopResyncKeepsItsPeriod(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	period := 1500 * time.Millisecond
	db, stop := startLoopOver(t, emutest.New(t), "rg", func(cfg *reconcile.Config) { cfg.Interval, cfg.SyncPeriod = time.Hour, period })
	deadline := time.Now().Add(30 * time.Second)
	var starts []time.Time
	for time.Now().Before(deadline) && len(starts) < 3 {
		time.Sleep(100 * time.Millisecond)
		runs, err := db.Runs(20)
		if err != nil {
			t.Fatal(err)
		}
		starts = starts[:0]
		for i := len(runs) - 1; i >= 0; i-- {
			if runs[i].Trigger == "startup" || runs[i].Trigger == "refresh" {
				starts = append(starts, runs[i].StartedAt)
			}
		}
	}
	stop()
	if len(starts) < 3 {
		t.Fatalf("%d runs that read Azure in 30 s with a sync period of %s and polls an hour apart; want the startup and two resyncs", len(starts), period)
	}
	for i := 1; i < len(starts); i++ {
		if d := starts[i].Sub(starts[i-1]); d < period {
			t.Errorf("resync %d started %s after the previous read, before its period of %s", i, d, period)
		}
	}
}

// startLoopOver runs the daemon loop over a repository of one resource group in
// namespace ops, configured by set; stop ends it (and closes the state).
func startLoopOver(t *testing.T, env *emutest.Env, group string, set func(*reconcile.Config)) (db *state.DB, stop func()) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rg.yaml"), []byte(
		"apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: "+group+"\n  namespace: ops\nspec:\n  location: westeurope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	set(&cfg)
	rec := reconcile.New(source.NewDir(dir, ""), db, env.Clients, cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Loop(ctx) }()
	var once sync.Once
	return db, func() {
		once.Do(func() {
			cancel()
			<-done
			_ = db.Close()
		})
	}
}
