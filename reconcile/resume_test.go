package reconcile_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

const resumeManifests = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
  namespace: platform
spec:
  location: westeurope
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: logs
  namespace: platform
spec:
  azureName: resumelogs
  location: westeurope
  kind: StorageV2
  sku:
    name: Standard_LRS
  owner:
    name: rg
`

// TestResumeOperation stops a run while a storage account's PUT is in
// flight (as a crash would) and checks that the next process resumes
// polling the recorded operation instead of sending the PUT again.
func TestResumeOperation(t *testing.T) {
	env := emutest.New(t, emutest.Emulator(emulator.WithLatency("Microsoft.Storage/storageAccounts", 2*time.Second)))
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "all.yaml"), []byte(resumeManifests), 0o600); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "state.db")
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	const key = "platform/storage.azure.com/StorageAccount/logs"

	// First process: stopped once the PUT's operation is recorded.
	db, err := state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := reconcile.New(source.NewDir(repo, ""), db, env.Clients, cfg, nil).Once(ctx, reconcile.Options{Trigger: "startup"})
		errc <- err
	}()
	var op record.Operation
	for deadline := time.Now().Add(10 * time.Second); op.Key == ""; {
		ops, err := db.Operations()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range ops {
			if o.Key == key {
				op = o
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the storage account's operation was never recorded")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled run reported no error")
	}
	ops, err := db.Operations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].Key != key || ops[0].Method != "PUT" || ops[0].PollURL == "" || !strings.HasSuffix(strings.ToLower(ops[0].ARMID), "/storageaccounts/resumelogs") {
		t.Fatalf("operations after the crash = %+v, want the storage account's PUT with a poll URL", ops)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if env.Emu.Stats().InFlightOps == 0 {
		t.Fatal("the operation ended before the first process stopped; the test proves nothing")
	}
	env.Emu.ResetStats()

	// Second process: new clients, same state file.
	db, err = state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	copts := azure.DefaultOptions()
	copts.PollInterval = 10 * time.Millisecond
	clients := azure.NewClients(env.Cloud, copts)
	rep, err := reconcile.New(source.NewDir(repo, ""), db, clients, cfg, nil).Once(context.Background(), reconcile.Options{Trigger: "startup"})
	if err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(op.PollURL)
	if err != nil {
		t.Fatal(err)
	}
	polls, puts := 0, 0
	for _, e := range env.Emu.RequestLog() {
		switch {
		case e.Method == "GET" && strings.EqualFold(e.Path, pu.Path):
			polls++
		case e.Method == "PUT" && strings.EqualFold(e.Path, op.ARMID):
			puts++
		}
	}
	if polls == 0 || puts != 0 {
		t.Errorf("second process: %d polls of %s and %d PUTs of the account, want polls and no PUT", polls, pu.Path, puts)
	}
	if pr := rep.Plan.Get(key); pr == nil || pr.Action != planner.NoOp {
		t.Errorf("plan for the resumed account = %+v, want no-op", pr)
	}
	res, ok, err := db.Resource(key)
	if err != nil || !ok {
		t.Fatalf("resource %s in state: %v %v", key, ok, err)
	}
	if res.Ready.Status != record.StatusTrue || res.AppliedHash == "" {
		t.Errorf("resumed account in state: Ready %+v, applied hash %q; want Ready True and the manifest recorded as applied", res.Ready, res.AppliedHash)
	}
	if ops, err := db.Operations(); err != nil || len(ops) != 0 {
		t.Errorf("operations after resuming = %+v (%v), want none", ops, err)
	}
	// A third run has nothing to do.
	rep, err = reconcile.New(source.NewDir(repo, ""), db, clients, cfg, nil).Once(context.Background(), reconcile.Options{Trigger: "interval"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plan.HasChanges() {
		t.Errorf("plan after resuming has changes: %+v", rep.Plan.Summary())
	}
}
