package planner_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/fixtures"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
)

// FuzzPlan feeds arbitrary YAML through the pipeline a plan runs: the source
// (source.Build: ParseFile and classification), planner.Build and
// Graph.Plan with no prior state. Nothing may panic, and the outcome (the
// plan as JSON, or the error text) must be the same on a second run of the
// same input: plans and errors are compared between runs and posted on pull
// requests. Seeded from the repository's real manifests: examples/, the
// planner's invalid corpus, the shared fixtures and, when present, the ASO
// conformance samples of ../shared.
func FuzzPlan(f *testing.F) {
	for _, s := range planSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		first := planOutcome(data)
		if second := planOutcome(data); second != first {
			t.Fatalf("outcome differs between two runs of the same input:\n--- first\n%s\n--- second\n%s", first, second)
		}
	})
}

// planOutcome runs the pipeline on one file and renders what came out.
func planOutcome(data []byte) string {
	snap, err := source.Build(context.Background(), "0123456789abcdef0123456789abcdef01234567",
		[]source.File{{Path: "fuzz/manifests.yaml", Data: data}}, nil)
	if err != nil {
		return "source: " + err.Error()
	}
	g, err := planner.Build(snap, planner.Options{SubscriptionID: sub})
	if err != nil {
		return "build: " + err.Error()
	}
	p, err := g.Plan(planner.Input{})
	if err != nil {
		return "plan: " + err.Error()
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "plan is not JSON: " + err.Error()
	}
	return string(b)
}

// planSeeds returns the seed inputs: every manifest file alone, and every
// directory's files together (so that owners and references resolve).
func planSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var seeds [][]byte
	byDir := map[string][]string{}
	var dirs []string
	for _, pattern := range []string{
		filepath.Join("..", "examples", "*", "*", "*.yaml"),
		filepath.Join("..", "examples", "*", "*.yaml"),
		filepath.Join("testdata", "invalid", "*", "*.yaml"),
		filepath.Join(sharedDir(), "conformance", "aso", "*", "*", "*.yaml"),
	} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			seeds = append(seeds, b)
			d := filepath.Dir(file)
			if _, ok := byDir[d]; !ok {
				dirs = append(dirs, d)
			}
			byDir[d] = append(byDir[d], strings.TrimSuffix(string(b), "\n"))
		}
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		if len(byDir[d]) > 1 {
			seeds = append(seeds, []byte(strings.Join(byDir[d], "\n---\n")+"\n"))
		}
	}
	seeds = append(seeds, []byte(fixtures.Onboarding))
	seeds = append(seeds, []byte("a: &a [x, *a]\n"), []byte("a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n"))
	return seeds
}

// sharedDir is ../shared (GITASO_SHARED when set).
func sharedDir() string {
	if d := os.Getenv("GITASO_SHARED"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared")
}

// TestPlanSeeds runs the fuzz pipeline once over its seeds (go test runs
// FuzzPlan's seeds too; this says how many reached a plan).
func TestPlanSeeds(t *testing.T) {
	seeds := planSeeds(t)
	planned := 0
	for _, s := range seeds {
		if out := planOutcome(s); strings.HasPrefix(out, "{") {
			planned++
		}
	}
	t.Logf("%d seeds, %d reach a plan", len(seeds), planned)
	if planned == 0 {
		t.Errorf("no seed reaches a plan: the fuzzer would test error paths only")
	}
}
