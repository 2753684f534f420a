package reconcile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// A run records the resources it touched (not the up-to-date ones), each
// resource the runs that touched it, and a changed resource the body before
// its change.
func TestRunRecordsWhatItTouched(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	env := emutest.New(t)
	dir := t.TempDir()
	write := func(tagValue string) {
		t.Helper()
		y := "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: ops\nspec:\n  location: westeurope\n" +
			"---\napiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: other\n  namespace: ops\nspec:\n  location: westeurope\n  tags:\n    team: " + tagValue + "\n"
		if err := os.WriteFile(filepath.Join(dir, "rg.yaml"), []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	rec := reconcile.New(source.NewDir(dir, ""), db, env.Clients, cfg, nil)
	ctx := context.Background()
	write("a")
	rep1, err := rec.Once(ctx, reconcile.Options{Trigger: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	write("b")
	rep2, err := rec.Once(ctx, reconcile.Options{Trigger: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	rg := record.ResourceKey("ops", "resources.azure.com", "ResourceGroup", "rg")
	other := record.ResourceKey("ops", "resources.azure.com", "ResourceGroup", "other")

	_, touched, ok, err := db.Run(rep1.Run.ID)
	if err != nil || !ok || len(touched) != 2 {
		t.Fatalf("run 1 touched %+v (%v, %v), want both resource groups", touched, ok, err)
	}
	for _, tc := range touched {
		if tc.Action != "create" || tc.Outcome != "applied" {
			t.Errorf("run 1: %+v, want created", tc)
		}
	}
	_, touched, _, _ = db.Run(rep2.Run.ID)
	if len(touched) != 1 || touched[0].Key != other || touched[0].Action != "update" {
		t.Errorf("run 2 touched %+v, want only the updated group", touched)
	}
	hist, err := db.ResourceRuns(other)
	if err != nil || len(hist) != 2 || hist[0].Run != rep2.Run.ID || hist[1].Run != rep1.Run.ID {
		t.Errorf("history of %s: %+v %v", other, hist, err)
	}
	if hist, _ := db.ResourceRuns(rg); len(hist) != 1 {
		t.Errorf("history of %s: %+v, want its create only", rg, hist)
	}
	c, ok, err := db.Change(other)
	if err != nil || !ok || c.Revision != rep2.Run.Revision || !strings.Contains(string(c.Previous), `"team":"a"`) {
		t.Errorf("last change of %s: %+v %v %v", other, c, ok, err)
	}
	if c, _, _ := db.Change(rg); len(c.Previous) != 0 {
		t.Errorf("last change of %s is its creation, got a previous body %s", rg, c.Previous)
	}
}
