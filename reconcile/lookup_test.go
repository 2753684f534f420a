package reconcile_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source/render"
)

// A chart reads a live ASO object with Helm's lookup: gitaso answers with
// the object it manages and the status ASO would write from Azure's answer.
// The first run, the identity is known after apply: the release waits, the
// identity is applied, and the run's next phase renders the release with
// the principal ID Azure gave the identity; the next run renders it at once.
// A list lookup and a lookup of another kind answer too.
func TestHelmLookupOfASOObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	env := emutest.New(t)
	repo := &unitsRepo{t: t, root: t.TempDir()}
	repo.write("clusters/c/units.yaml", fluxKs("ids", "./ids", "")+"---\n"+fluxKs("apps", "./apps", ""))
	repo.write("ids/objects.yaml", teamObjects("team-a", "1"))
	repo.write("apps/release.yaml", `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: tagger
  namespace: team-a
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/tagger
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
`)
	repo.write("charts/tagger/Chart.yaml", "apiVersion: v2\nname: tagger\nversion: 1.0.0\n")
	repo.write("charts/tagger/templates/rg.yaml", `{{- $id := lookup "managedidentity.azure.com/v1api20230131" "UserAssignedIdentity" "team-a" "id-team-a" -}}
{{- $all := lookup "managedidentity.azure.com/v1api20230131" "UserAssignedIdentity" "team-a" "" -}}
{{- $cm := lookup "v1" "ConfigMap" "team-a" "anything" -}}
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg-tagged
  namespace: team-a
spec:
  location: westeurope
  tags:
    principal: {{ $id.status.principalId | quote }}
    ready: {{ (index $id.status.conditions 0).status | quote }}
    identities: {{ len $all.items | quote }}
    configmap: {{ len $cm | quote }}
`)
	var lookups reconcile.Lookup
	rec, db := repo.reconciler(env, render.Options{Kustomize: true, Flux: true, FluxPath: "clusters/c", Lookup: lookups.Func})
	lookups.DB = db
	lookups.Get = func(ctx context.Context, id, apiVersion string) ([]byte, error) {
		return env.Client.Get(ctx, id, apiVersion)
	}
	ctx := context.Background()

	// A plan alone: the release waits on the identity.
	plan, err := rec.PlanOnly(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	u := unitOf(t, plan.Plan.Units, "HelmRelease/team-a/tagger")
	if u.Ready.Reason != manifest.ReasonDependencyNotReady {
		t.Errorf("planned alone, the release: %+v, want DependencyNotReady (a lookup known after apply)", u.Ready)
	}

	rep, err := rec.Once(ctx, reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Then == nil {
		t.Fatalf("no second phase: run %+v", rep.Run)
	}
	last := rep
	for last.Then != nil {
		last = last.Then
	}
	if last.Run.Outcome != record.OutcomeSucceeded {
		t.Errorf("last phase: %s %s", last.Run.Outcome, last.Run.Error)
	}
	id, _, _ := db.Resource("team-a/managedidentity.azure.com/UserAssignedIdentity/id-team-a")
	var ident struct {
		Properties struct {
			PrincipalID string `json:"principalId"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(armGet(t, env, id.ARMID), &ident); err != nil || ident.Properties.PrincipalID == "" {
		t.Fatalf("identity in Azure: %v %+v", err, ident)
	}
	tags := func() map[string]string {
		var rg struct {
			Tags map[string]string `json:"tags"`
		}
		if err := json.Unmarshal(armGet(t, env, "/subscriptions/"+env.Sub+"/resourceGroups/rg-tagged"), &rg); err != nil {
			t.Fatal(err)
		}
		return rg.Tags
	}
	want := map[string]string{"principal": ident.Properties.PrincipalID, "ready": "True", "identities": "1", "configmap": "0"}
	for k, v := range want {
		if got := tags()[k]; got != v {
			t.Errorf("tag %s = %q, want %q (from lookup)", k, got, v)
		}
	}
	// The next run renders the release at once.
	rep, err = rec.Once(ctx, reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Then != nil || rep.Run.Outcome != record.OutcomeSucceeded {
		t.Errorf("second run: %+v (phases: %v)", rep.Run, rep.Then != nil)
	}
	units, _ := db.Units()
	if u := unitOf(t, units, "HelmRelease/team-a/tagger"); u.Ready.Status != record.StatusTrue {
		t.Errorf("the release after its lookup resolved: %+v", u.Ready)
	}
}
