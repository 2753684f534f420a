package forge_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gitaso/gitaso/forge"
	"github.com/gitaso/gitaso/harness/benchdata"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
)

// checkParts checks what every comment must be: within the limit, the
// marker line first, "part i/n" when split, and block structure balanced in
// each part (code fences, <details>), tables reopened with their header.
func checkParts(t testing.TB, parts []string, limit int, marker string) {
	t.Helper()
	for i, p := range parts {
		if len(p) > limit {
			t.Errorf("part %d: %d bytes, over the limit %d", i+1, len(p), limit)
		}
		if want := "<!-- " + marker + " part "; !strings.HasPrefix(p, want) {
			t.Errorf("part %d does not start with the marker: %q", i+1, firstLine(p))
		}
		if len(parts) > 1 && !strings.Contains(p, "part "+itoa(i+1)+"/"+itoa(len(parts))) {
			t.Errorf("part %d has no visible part i/n line", i+1)
		}
		fences := 0
		inFence := false
		for _, l := range strings.Split(p, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				fences++
				inFence = !inFence
				continue
			}
			if !inFence && strings.HasPrefix(l, "|") && !strings.HasPrefix(l, "| action |") && !strings.HasPrefix(l, "|---") {
				// a table row: its table's header must be in this part
				if !strings.Contains(p, "| action | resource | ARM ID | changes |\n|---|---|---|---|\n") {
					t.Errorf("part %d: a table row without the table's header", i+1)
					break
				}
			}
		}
		if fences%2 != 0 {
			t.Errorf("part %d: %d code fences, one left open", i+1, fences)
		}
		if o, c := strings.Count(p, "<details>"), strings.Count(p, "</details>"); o != c {
			t.Errorf("part %d: %d <details> and %d </details>", i+1, o, c)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestCommentSplits cuts plans of several sizes at several limits; every
// part is valid and the parts hold the whole plan.
func TestCommentSplits(t *testing.T) {
	for _, limit := range []int{2048, 4096, 65536} {
		for _, n := range []int{0, 1, 30, 300} {
			p := makePlan(n, n/10)
			parts := forge.Comment(p, nil, limit, "m")
			checkParts(t, parts, limit, "m")
			if n > 0 && !strings.Contains(parts[0], "**"+strconv.Itoa(n)+" to create, ") {
				t.Errorf("n=%d limit=%d: part 1 lacks the summary line", n, limit)
			}
			all := strings.Join(parts, "\n")
			for _, r := range p.Resources {
				if !strings.Contains(all, "armId      = \""+r.ARMID+"\"") && r.Action != planner.NoOp {
					t.Errorf("n=%d limit=%d: %s missing from the full plan", n, limit, r.ARMID)
					break
				}
			}
		}
	}
}

// TestCommentLongLine: a line longer than a part is cut, still valid.
func TestCommentLongLine(t *testing.T) {
	p := makePlan(1, 0)
	p.Resources[0].Name = strings.Repeat("é", 5000) // 10,000 bytes in one line, cut between runes
	parts := forge.Comment(p, nil, 2048, forge.DefaultMarker)
	checkParts(t, parts, 2048, forge.DefaultMarker)
	for i, part := range parts {
		if !strings.ContainsRune(part, 'é') && i > 0 && i < len(parts)-1 {
			t.Errorf("part %d lost the long line", i+1)
		}
		if strings.ContainsRune(part, '\uFFFD') {
			t.Errorf("part %d cut a rune", i+1)
		}
	}
}

var (
	plan1kOnce sync.Once
	plan1k     *planner.Plan
	plan1kErr  error
)

// plan1000 plans the benchmark repository of 1,000 resources (50
// namespaces of 20: resource groups, storage accounts, blob services and
// containers, identities, role assignments) from scratch: 1,000 creations.
func plan1000(t testing.TB) *planner.Plan {
	t.Helper()
	plan1kOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gitaso-forge-1k")
		if err != nil {
			plan1kErr = err
			return
		}
		defer os.RemoveAll(dir)
		const sub = "00000000-0000-0000-0000-000000000000"
		if plan1kErr = benchdata.Generate(dir, 50, 20, sub); plan1kErr != nil {
			return
		}
		snap := &manifest.Snapshot{Revision: rev}
		plan1kErr = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			objs, err := source.ParseFile(rel, b)
			snap.Objects = append(snap.Objects, objs...)
			return err
		})
		if plan1kErr != nil {
			return
		}
		g, err := planner.Build(snap, planner.Options{SubscriptionID: sub})
		if err != nil {
			plan1kErr = err
			return
		}
		plan1k, plan1kErr = g.Plan(planner.Input{})
	})
	if plan1kErr != nil {
		t.Fatal(plan1kErr)
	}
	return plan1k
}

// TestComment1k reports the comment of a 1,000-resource plan on every
// forge (its size and how it splits) and posts it to each fake forge,
// which refuses a body over the forge's limit.
func TestComment1k(t *testing.T) {
	p := plan1000(t)
	if len(p.Resources) != 1000 {
		t.Fatalf("%d resources", len(p.Resources))
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			limit := forge.Limit(kind)
			parts := forge.Comment(p, nil, limit, forge.DefaultMarker)
			checkParts(t, parts, limit, forge.DefaultMarker)
			total := 0
			sizes := make([]int, len(parts))
			for i, part := range parts {
				total += len(part)
				sizes[i] = len(part)
			}
			t.Logf("1,000-resource plan on %s (limit %d): %d bytes in %d part(s) %v; summary %q",
				kind, limit, total, len(parts), sizes, planner.SummaryLine(p))
			f := newFake(t, kind)
			urls, err := f.forge(t).UpsertComment(context.Background(), 1, parts)
			if err != nil {
				t.Fatal(err)
			}
			if len(urls) != len(parts) || len(f.ours(1)) != len(parts) {
				t.Errorf("%d URLs, %d comments for %d parts", len(urls), len(f.ours(1)), len(parts))
			}
		})
	}
}

// BenchmarkComment1k renders and splits the comment of a 1,000-resource
// plan at GitHub's limit.
func BenchmarkComment1k(b *testing.B) {
	p := plan1000(b)
	var parts []string
	for b.Loop() {
		parts = forge.Comment(p, nil, forge.Limit("github"), forge.DefaultMarker)
	}
	total := 0
	for _, part := range parts {
		total += len(part)
	}
	b.ReportMetric(float64(total), "bytes")
	b.ReportMetric(float64(len(parts)), "parts")
}
