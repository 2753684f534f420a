package planner_test

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/harness/benchdata"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
)

// TestPlanOnAllCPUs checks that planning the nodes on several goroutines
// (a graph of hundreds of nodes, under -race) gives the plan one goroutine
// gives, byte for byte.
func TestPlanOnAllCPUs(t *testing.T) {
	dir := t.TempDir()
	if err := benchdata.Generate(dir, 20, 20, corpusSub); err != nil {
		t.Fatal(err)
	}
	snap, err := source.NewDir(dir, "").Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	g, err := planner.Build(snap, planner.Options{SubscriptionID: corpusSub})
	if err != nil {
		t.Fatal(err)
	}
	plan := func(procs int) []byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		p, err := g.Plan(planner.Input{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Resources) != 400 {
			t.Fatalf("%d resources planned, want 400", len(p.Resources))
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one, all := plan(1), plan(max(4, runtime.NumCPU()))
	if d := cmp.Diff(string(one), string(all)); d != "" {
		t.Errorf("plan on several CPUs differs (-one +several):\n%s", d)
	}
}
