package reconcile_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gitaso/gitaso/azure/emulator"
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
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rg.yaml"), []byte(
		"apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: flaky-rg\n  namespace: ops\nspec:\n  location: westeurope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	cfg.Interval = time.Hour // no polling: only the retry can run it again
	rec := reconcile.New(source.NewDir(dir, ""), db, env.Clients, cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Loop(ctx) }()
	defer func() { cancel(); <-done }()

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
