package render

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

const kustomizationHead = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"

// A kustomization with "resources: []" builds zero objects, as kustomize
// build and Flux do, with and without Flux, and whether gitaso rewrites
// it for a deprecated field or not; so does a Flux Kustomization whose
// path holds such a kustomization and sets nothing else. (gitaso wrote
// every kustomization back without its empty list, which kustomize refuses
// as "kustomization.yaml is empty".)
func TestKustomizeEmptyResources(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"clusters/a/rg.yaml":                  rg("entry-rg"),
		"clusters/a/empty.yaml":               fluxKustomizationDoc("empty", "./teams/empty", ""),
		"clusters/a/deprecated.yaml":          fluxKustomizationDoc("deprecated", "./teams/deprecated", ""),
		"teams/empty/kustomization.yaml":      kustomizationHead + "resources: []\n",
		"teams/deprecated/kustomization.yaml": kustomizationHead + "resources: []\nbases: []\n",
		"teams/nested/kustomization.yaml":     kustomizationHead + "resources:\n  - ../empty\n  - rg.yaml\n",
		"teams/nested/rg.yaml":                rg("nested-rg"),
	})
	for _, dir := range []string{"teams/empty", "teams/deprecated"} {
		snap, err := fetch(t, root, "teams", Options{Kustomize: true, KustomizeDirs: []string{dir}})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if len(snap.Objects) != 0 {
			t.Errorf("%s: objects %v, want none", dir, ids(snap.Objects))
		}
	}
	snap, err := fetch(t, root, "teams", Options{Kustomize: true, KustomizeDirs: []string{"teams/nested"}})
	if err != nil {
		t.Fatalf("nested: %v", err)
	}
	if diff := cmp.Diff([]string{"default/ResourceGroup/nested-rg"}, ids(snap.Objects)); diff != "" {
		t.Errorf("nested (-want +got):\n%s", diff)
	}
	snap, err = fluxFetch(t, root, "clusters/a", Options{})
	if err != nil {
		t.Fatalf("flux: %v", err)
	}
	if diff := cmp.Diff([]string{"default/ResourceGroup/entry-rg"}, ids(snap.Objects)); diff != "" {
		t.Errorf("flux (-want +got):\n%s", diff)
	}
}

// A deprecated field's warning is said once per kustomization file, not
// once per Flux Kustomization that builds (every kustomization file of
// the repository was checked for each), and not again when the same
// revision is rendered again by the same Renderer (a daemon's next run).
// A change to the file says it again.
func TestKustomizeDeprecationWarnedOnce(t *testing.T) {
	files := map[string]string{
		"clusters/a/one.yaml":            fluxKustomizationDoc("one", "./teams/one", ""),
		"clusters/a/two.yaml":            fluxKustomizationDoc("two", "./teams/two", ""),
		"clusters/a/three.yaml":          fluxKustomizationDoc("three", "./teams/three", ""),
		"teams/one/kustomization.yaml":   kustomizationHead + "resources: [rg.yaml]\ncommonLabels: {team: one}\n",
		"teams/one/rg.yaml":              rg("one-rg"),
		"teams/two/kustomization.yaml":   kustomizationHead + "resources: [rg.yaml]\n",
		"teams/two/rg.yaml":              rg("two-rg"),
		"teams/three/kustomization.yaml": kustomizationHead + "resources: [rg.yaml]\n",
		"teams/three/rg.yaml":            rg("three-rg"),
	}
	var logs strings.Builder
	r, err := New(Options{Flux: true, FluxPath: "clusters/a", Kustomize: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	run := func(root string) {
		t.Helper()
		if _, err := fetchWith(t, r, root); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		return strings.Count(logs.String(), `msg="deprecated kustomization field" file=teams/one/kustomization.yaml`)
	}
	root := writeRepo(t, files)
	run(root)
	if n := count(); n != 1 {
		t.Fatalf("first run: %d warnings for teams/one, want 1:\n%s", n, logs.String())
	}
	run(root)
	if n := count(); n != 1 {
		t.Errorf("same revision again: %d warnings for teams/one in all, want still 1", n)
	}
	files["teams/one/kustomization.yaml"] = kustomizationHead + "resources: [rg.yaml]\ncommonLabels: {team: uno}\n"
	run(writeRepo(t, files))
	if n := count(); n != 2 {
		t.Errorf("changed file: %d warnings for teams/one in all, want 2", n)
	}
}

// fetchWith reads the whole directory at root with the Renderer r.
func fetchWith(t *testing.T, r *Renderer, root string) (*manifest.Snapshot, error) {
	t.Helper()
	return source.NewDir(root, "", source.WithRenderer(r)).Fetch(context.Background())
}
