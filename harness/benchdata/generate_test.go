package benchdata_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/harness/benchdata"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
)

const sub = "11111111-2222-3333-4444-555555555555"

// analysis is a generated directory measured independently of the generator, through gitaso's own pipeline
// (source.Dir, then planner.Build): ASO resources per kind and per namespace, and the owner-chain depth of
// every resource.
type analysis struct {
	graph   *planner.Graph
	byKind  map[string]int // "apiVersion Kind"
	byNS    map[string]int
	byDepth map[int]int
	files   int
}

// analyse parses dir as gitaso does and builds its graph. planner.Build checks every document against ASO's
// catalog (kinds, fields with their casing, types, enums, required fields) and resolves owners, references,
// exported ConfigMaps, credentials, duplicates and cycles, returning every problem: any error it reports
// fails the test, which replaces checking unresolved owners and the schema here.
func analyse(t *testing.T, dir string) analysis {
	t.Helper()
	snap, err := source.NewDir(dir, "").Fetch(t.Context())
	if err != nil {
		t.Fatalf("generated files do not parse: %v", err)
	}
	checkNoEmptyDocuments(t, dir, snap)
	a := analysis{byKind: map[string]int{}, byNS: map[string]int{}, byDepth: map[int]int{}}
	files := map[string]bool{}
	for _, o := range slices.Concat(snap.Objects, snap.Ignored) {
		files[o.File] = true
		if aso.IsASOGroup(o.Group()) {
			a.byKind[o.APIVersion()+" "+o.Kind()]++
			a.byNS[o.Namespace()]++
		}
	}
	a.files = len(files)
	g, err := planner.Build(snap, planner.Options{SubscriptionID: sub})
	if err != nil {
		msg := err.Error()
		if l := diag.AsList(err).Sorted(); len(l) > 10 {
			msg = l[:10].Error() + fmt.Sprintf("\n... and %d more", len(l)-10)
		}
		t.Fatalf("planner.Build rejects the generated repository:\n%s", msg)
	}
	a.graph = g
	total := 0
	for _, c := range a.byNS {
		total += c
	}
	if len(g.Nodes) != total {
		t.Errorf("graph has %d nodes, parsed %d ASO resources", len(g.Nodes), total)
	}
	// Depth: 1 for a resource without an owner in the repository, +1 per owner up the chain (Build has
	// rejected cycles, the bound only guards this loop).
	for _, n := range g.Nodes {
		d := 1
		for o := g.Node(n.OwnerKey()); o != nil && d <= len(g.Nodes); o = g.Node(o.OwnerKey()) {
			d++
		}
		a.byDepth[d]++
	}
	return a
}

// checkPlan plans the graph from scratch: every resource converts to an ARM create request.
func checkPlan(t *testing.T, g *planner.Graph) {
	t.Helper()
	plan, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if len(plan.Resources) != len(g.Nodes) {
		t.Errorf("plan has %d resources, graph %d nodes", len(plan.Resources), len(g.Nodes))
	}
	for _, r := range plan.Resources {
		if r.Action != planner.Create || r.Request == nil || !strings.HasPrefix(r.ARMID, "/subscriptions/"+sub+"/") {
			t.Errorf("%s: action %v, ARM ID %s; want a create request in subscription %s", r.ID(), r.Action, r.ARMID, sub)
		}
	}
}

func TestGenerateCounts(t *testing.T) {
	tests := []struct {
		name       string
		opts       benchdata.Options
		wantDepths map[int]int // per namespace
		wantKinds  map[string]int
	}{
		{
			name:       "default shape, 20 per namespace, depth 4",
			opts:       benchdata.Options{Namespaces: 3, PerNamespace: 20, Subscription: sub, MaxDepth: 4},
			wantDepths: map[int]int{1: 1, 2: 4, 3: 8, 4: 7},
			wantKinds: map[string]int{
				benchdata.ResourceGroup: 1, benchdata.UserAssignedIdentity: 1, benchdata.RoleAssignment: 1,
				benchdata.StorageAccount: 1, benchdata.ServiceBusNamespace: 1, benchdata.FederatedCredential: 1,
				benchdata.BlobService: 1, benchdata.BlobContainer: 4, benchdata.ServiceBusQueue: 3,
				benchdata.ServiceBusTopic: 3, benchdata.ServiceBusSubscr: 3,
			},
		},
		{
			name:       "depth 3",
			opts:       benchdata.Options{Namespaces: 2, PerNamespace: 11, Subscription: sub, MaxDepth: 3},
			wantDepths: map[int]int{1: 1, 2: 4, 3: 6},
			wantKinds: map[string]int{
				benchdata.ResourceGroup: 1, benchdata.UserAssignedIdentity: 1, benchdata.RoleAssignment: 1,
				benchdata.StorageAccount: 1, benchdata.ServiceBusNamespace: 1, benchdata.FederatedCredential: 1,
				benchdata.BlobService: 1, benchdata.ServiceBusQueue: 2, benchdata.ServiceBusTopic: 2,
			},
		},
		{
			name:       "depth 2",
			opts:       benchdata.Options{Namespaces: 2, PerNamespace: 7, Subscription: sub, MaxDepth: 2},
			wantDepths: map[int]int{1: 1, 2: 6},
			wantKinds: map[string]int{
				benchdata.ResourceGroup: 1, benchdata.UserAssignedIdentity: 3, benchdata.RoleAssignment: 1,
				benchdata.StorageAccount: 1, benchdata.ServiceBusNamespace: 1,
			},
		},
		{
			name:       "depth 1",
			opts:       benchdata.Options{Namespaces: 2, PerNamespace: 3, Subscription: sub, MaxDepth: 1},
			wantDepths: map[int]int{1: 3},
			wantKinds:  map[string]int{benchdata.ResourceGroup: 3},
		},
		{
			name:       "fewer than the core resources",
			opts:       benchdata.Options{Namespaces: 4, PerNamespace: 3, Subscription: sub, MaxDepth: 4},
			wantDepths: map[int]int{1: 1, 2: 2},
			wantKinds:  map[string]int{benchdata.ResourceGroup: 1, benchdata.UserAssignedIdentity: 1, benchdata.RoleAssignment: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			sum, err := benchdata.GenerateWith(dir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			a := analyse(t, dir)
			n := tc.opts.Namespaces
			if len(a.byNS) != n || sum.Namespaces != n {
				t.Errorf("namespaces: parsed %d, summary %d, want %d", len(a.byNS), sum.Namespaces, n)
			}
			for ns, c := range a.byNS {
				if c != tc.opts.PerNamespace {
					t.Errorf("namespace %s has %d resources, want %d", ns, c, tc.opts.PerNamespace)
				}
			}
			want := map[string]int{}
			for k, v := range tc.wantKinds {
				want[k] = v * n
			}
			if !maps.Equal(a.byKind, want) || !maps.Equal(sum.ByKind, want) {
				t.Errorf("kinds: parsed %v, summary %v, want %v", a.byKind, sum.ByKind, want)
			}
			wantD := map[int]int{}
			for k, v := range tc.wantDepths {
				wantD[k] = v * n
			}
			if !maps.Equal(a.byDepth, wantD) || !maps.Equal(sum.ByDepth, wantD) {
				t.Errorf("depths: parsed %v, summary %v, want %v", a.byDepth, sum.ByDepth, wantD)
			}
			if sum.Resources != n*tc.opts.PerNamespace || a.files != sum.Files {
				t.Errorf("summary resources %d files %d, parsed files %d", sum.Resources, sum.Files, a.files)
			}
			checkPlan(t, a.graph)
		})
	}
}

func TestGenerateDefaultIsTenThousandInFiveHundredNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10,000 resources")
	}
	dir := t.TempDir()
	if err := benchdata.Generate(dir, 500, 20, sub); err != nil {
		t.Fatal(err)
	}
	a := analyse(t, dir)
	total := 0
	for _, c := range a.byKind {
		total += c
	}
	if total != 10000 || len(a.byNS) != 500 {
		t.Fatalf("got %d resources in %d namespaces, want 10000 in 500", total, len(a.byNS))
	}
	if a.byDepth[4] == 0 || a.byDepth[5] != 0 {
		t.Errorf("depths = %v, want chains of exactly up to 4", a.byDepth)
	}
	data, err := os.ReadFile(filepath.Join(dir, "team-0001", "identity.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("/subscriptions/"+sub+"/providers/Microsoft.Authorization/roleDefinitions/")) {
		t.Errorf("the subscription is not used in the role definition ID:\n%s", data)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := benchdata.Generate(d, 3, 20, sub); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		x, _ := os.ReadFile(p)
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs (%v)", rel, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGenerateRejects(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := benchdata.Generate(full, 1, 1, sub); !errors.Is(err, benchdata.ErrNotEmpty) {
		t.Errorf("non-empty dir: err = %v, want ErrNotEmpty", err)
	}
	if err := benchdata.GenerateApplyTree(full, 10); !errors.Is(err, benchdata.ErrNotEmpty) {
		t.Errorf("apply tree into non-empty dir: err = %v, want ErrNotEmpty", err)
	}
	for _, o := range []benchdata.Options{
		{Namespaces: 0, PerNamespace: 1, Subscription: sub, MaxDepth: 4},
		{Namespaces: 1, PerNamespace: 0, Subscription: sub, MaxDepth: 4},
		{Namespaces: 1, PerNamespace: 1, Subscription: "", MaxDepth: 4},
		{Namespaces: 1, PerNamespace: 1, Subscription: "a/b", MaxDepth: 4},
		{Namespaces: 1, PerNamespace: 1, Subscription: sub, MaxDepth: 5},
	} {
		if _, err := benchdata.GenerateWith(filepath.Join(t.TempDir(), "r"), o); err == nil {
			t.Errorf("GenerateWith(%+v) succeeded, want an error", o)
		}
	}
	if err := benchdata.GenerateApplyTree(t.TempDir(), 0); err == nil {
		t.Error("GenerateApplyTree(0) succeeded, want an error")
	}
}

func TestGenerateApplyTree(t *testing.T) {
	for _, tc := range []struct {
		n, groups, namespaces, queues int
	}{
		{1000, 10, 90, 900},
		{1, 1, 0, 0},
		{2, 1, 1, 0},
		{13, 1, 2, 10},
		{250, 2, 23, 225},
	} {
		g, ns, q := benchdata.ApplyTreeShape(tc.n)
		if g != tc.groups || ns != tc.namespaces || q != tc.queues {
			t.Errorf("ApplyTreeShape(%d) = %d, %d, %d; want %d, %d, %d", tc.n, g, ns, q, tc.groups, tc.namespaces, tc.queues)
		}
		dir := t.TempDir()
		if err := benchdata.GenerateApplyTree(dir, tc.n); err != nil {
			t.Fatal(err)
		}
		a := analyse(t, dir)
		want := map[int]int{1: tc.groups, 2: tc.namespaces, 3: tc.queues}
		maps.DeleteFunc(want, func(_ int, v int) bool { return v == 0 })
		if !maps.Equal(a.byDepth, want) {
			t.Errorf("n=%d: depths = %v, want %v", tc.n, a.byDepth, want)
		}
		if len(a.byNS) != 1 || a.byNS[benchdata.ApplyTreeNamespace] != tc.n || a.files != tc.groups {
			t.Errorf("n=%d: namespaces %v, files %d", tc.n, a.byNS, a.files)
		}
		if tc.n == 1000 {
			checkPlan(t, a.graph)
		}
	}
}

func BenchmarkGenerate10k(b *testing.B) {
	root := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		if err := benchdata.Generate(filepath.Join(root, strconv.Itoa(i)), 500, 20, sub); err != nil {
			b.Fatal(err)
		}
	}
}

// checkNoEmptyDocuments fails when a file has a "---" that does not separate two documents (a comment-only
// or empty document, which some YAML readers reject).
func checkNoEmptyDocuments(t *testing.T, dir string, snap *manifest.Snapshot) {
	t.Helper()
	perFile := map[string]int{}
	for _, o := range slices.Concat(snap.Objects, snap.Ignored) {
		perFile[o.File]++
	}
	for f, n := range perFile {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if seps := bytes.Count(append([]byte("\n"), data...), []byte("\n---\n")); seps != n-1 {
			t.Errorf("%s: %d documents but %d separators", f, n, seps)
		}
	}
}
