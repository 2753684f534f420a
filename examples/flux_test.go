package examples_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/render"
)

// fluxClusters are the Flux objects of a cluster directory that reconciles
// the onboarding example as the seeds' platform team would: a platform
// Kustomization and a team Kustomization (after it), both substituting from
// the ConfigMap platform-vars of their namespace.
var fluxClusters = map[string]string{
	"clusters/snd/platform.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: platform
  namespace: platform
spec:
  interval: 10m
  path: ./onboarding/platform
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
    namespace: flux-system
  postBuild:
    substituteFrom:
      - kind: ConfigMap
        name: platform-vars
`,
	"clusters/snd/team-a.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: team-a
  namespace: platform
spec:
  dependsOn:
    - name: platform
  interval: 10m
  path: ./onboarding/team-a
  prune: false
  sourceRef:
    kind: GitRepository
    name: flux-system
    namespace: flux-system
  postBuild:
    substituteFrom:
      - kind: ConfigMap
        name: platform-vars
      - kind: ConfigMap
        name: team-a-vars
`,
}

// fluxRepo copies the onboarding example's manifests into a temporary
// repository next to a clusters/snd directory of Flux Kustomizations.
func fluxRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(p string, data []byte) {
		f := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.WalkDir("onboarding", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !source.IsYAMLFile(p) {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil {
			write(filepath.ToSlash(p), b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range fluxClusters {
		write(p, []byte(c))
	}
	return root
}

// The onboarding example reconciled through Flux Kustomizations (gitaso
// --flux --path clusters/snd) plans the same resources, ARM IDs and bodies
// as with --substitute-from platform/platform-vars; team-a's resources are
// detach-on-delete (prune: false) and every resource says which
// Kustomization rendered it.
func TestFluxOnboardingPlan(t *testing.T) {
	r, err := render.New(render.Options{Kustomize: true, Flux: true, FluxPath: "clusters/snd", Strict: true, Exported: afterIdentity})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := source.NewDir(fluxRepo(t), "", source.WithRenderer(r)).Fetch(t.Context())
	if err != nil {
		t.Fatalf("render through Flux Kustomizations:\n%v", err)
	}
	g, err := planner.Build(snap, planner.Options{SubscriptionID: subscription(t)})
	if err != nil {
		t.Fatalf("planner.Build:\n%v", err)
	}
	plan, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := build(t)
	refPlan, err := ref.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ ID, ARMID, Action, Body, Policy string }
	rows := func(p *planner.Plan, flux bool) map[string]row {
		out := map[string]row{}
		for _, res := range p.Resources {
			rw := row{ID: res.ID(), ARMID: res.ARMID, Action: res.Action.String(), Policy: string(res.Policy)}
			if res.Request != nil {
				rw.Body = string(res.Request.Body)
			}
			if !flux && res.Namespace == "team-a" && rw.Policy == "manage" {
				rw.Policy = "detach-on-delete" // what team-a's prune: false makes of it
			}
			out[res.ID()] = rw
		}
		return out
	}
	if diff := cmp.Diff(rows(refPlan, false), rows(plan, true)); diff != "" {
		t.Errorf("plan through Flux differs from the plan with --substitute-from (-flags +flux):\n%s", diff)
	}
	for _, o := range snap.Objects {
		want := "platform/platform"
		if strings.HasPrefix(o.File, "onboarding/team-a/") || o.Namespace() == "team-a" {
			want = "platform/team-a"
		}
		if got := o.Annotations()[render.AnnotationFluxKustomization]; got != want {
			t.Errorf("%s: rendered by %q, want %s", o, got, want)
		}
		if aso.IsASOGroup(o.Group()) && o.Namespace() == "team-a" && o.Annotations()["serviceoperator.azure.com/reconcile-policy"] != "detach-on-delete" {
			t.Errorf("%s: prune: false should make it detach-on-delete", o)
		}
	}
}
