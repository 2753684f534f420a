package reconcile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
