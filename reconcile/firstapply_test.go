package reconcile_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/azure/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// A first apply into an empty subscription reads no child one by one: the
// LIST of a collection whose resource group does not exist yet answers 404
// (ResourceGroupNotFound), which means it holds nothing.
func TestFirstApplyReadsNoChildOfAMissingGroup(t *testing.T) {
	env := emutest.New(t, emutest.Emulator(emulator.WithoutThrottling()),
		emutest.ClientOptions(func(o *azure.Options) { o.Limits.Disabled = true }))
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	if err := generateTracked(40)(repo); err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	rec := reconcile.New(source.NewDir(repo, ""), db, env.Clients, cfg, nil)
	env.Emu.ResetStats()
	rep, err := rec.Once(context.Background(), reconcile.Options{Trigger: "startup", Refresh: true, All: true})
	if err != nil || rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("first apply: %v %s %s", err, rep.Run.Outcome, rep.Run.Error)
	}
	var singleReads, lists404 int
	for _, l := range env.Emu.RequestLog() {
		if l.Method != "GET" || !strings.Contains(l.Path, "/userAssignedIdentities") {
			continue
		}
		switch {
		case strings.HasSuffix(l.Path, "/userAssignedIdentities"):
			if l.Status == 404 {
				lists404++
			}
		case l.Status == 404:
			singleReads++
		}
	}
	if lists404 == 0 || singleReads != 0 {
		t.Errorf("first apply of 30 identities in 10 new groups: %d collection lists answered 404, then %d identities read one by one; want some and none", lists404, singleReads)
	}
}
