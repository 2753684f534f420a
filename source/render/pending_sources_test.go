package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/manifest"
)

// identityExporting is a UserAssignedIdentity that exports its clientId
// into the ConfigMap or Secret name of namespace ns (operatorSpec).
func identityExporting(ns, kind, name string) string {
	field := "configMaps"
	if kind == "Secret" {
		field = "secrets"
	}
	return `apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: exporter
  namespace: ` + ns + `
spec:
  location: uksouth
  owner: {name: rg}
  operatorSpec:
    ` + field + `:
      clientId: {name: ` + name + `, key: clientId}
`
}

// noExports is a state that holds no exported values yet.
func noExports(bool, string, string) (map[string]string, bool) { return nil, false }

// A --substitute-from source that is not in the files, not exported, and
// that no resource of the revision exports is an error naming it; it used
// to make every unset variable "known after apply".
func TestSubstituteFromMissingIsAnError(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"apps/rg.yaml":       rg("x") + "  tags:\n    client: ${CLIENT_ID}\n",
		"apps/identity.yaml": identityExporting("platform", "ConfigMap", "team-vars"),
	})
	missing, _ := ParseRef("ConfigMap/platform/tema-vars") // a typo of team-vars
	snap, err := fetch(t, root, "", Options{Substitute: true, Strict: true, SubstituteFrom: []Ref{missing}, Exported: noExports})
	if err == nil {
		t.Fatalf("accepted; external %+v, objects %v", snap.External, where(snap.Objects))
	}
	want := []string{"platform/tema-vars: substitute-from ConfigMap/platform/tema-vars: no ConfigMap platform/tema-vars in the files read (below the source path), " +
		"among the values gitaso's resources exported, or among those the revision's resources export (operatorSpec); add ',optional' if it may be absent"}
	if diff := cmp.Diff(want, errorLines(err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	// The one the identity exports is pending, optional or not.
	for _, ref := range []string{"ConfigMap/platform/team-vars", "ConfigMap/platform/team-vars,optional", "platform/team-vars,optional"} {
		r, _ := ParseRef(ref)
		snap, err := fetch(t, root, "", Options{Substitute: true, Strict: true, SubstituteFrom: []Ref{r}, Exported: noExports})
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if got := field(find(t, snap, "default/ResourceGroup/x"), "spec", "tags", "client"); got != manifest.PendingValue("CLIENT_ID") {
			t.Errorf("%s: client = %v, want known after apply", ref, got)
		}
		if len(snap.External) != 1 || !snap.External[0].IsPending() || snap.External[0].User != "platform/team-vars" {
			t.Errorf("%s: external %+v", ref, snap.External)
		}
	}
}

// Flux's substituteFrom: a ConfigMap nobody has or exports is an error
// naming it, not a spec.path of a child Kustomization that reads
// "⟦known-after-apply:…⟧"; optional: true makes it empty, as Flux does
// (defaults apply); an optional ConfigMap a resource of the revision
// exports is pending as a required one is, so that the credentials built
// from it wait for the export instead of being applied with the default.
func TestFluxSubstituteFromMissingOrExported(t *testing.T) {
	parent := func(name string, optional bool) string {
		opt := ""
		if optional {
			opt = "        optional: true\n"
		}
		return fluxKustomizationDoc("apps", "./apps", "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: "+name+"\n"+opt)
	}
	files := map[string]string{
		"apps/team.yaml":           fluxKustomizationDoc("team", "./teams/${TEAM:=a}", ""),
		"apps/rg.yaml":             rg("apps-rg") + "  tags:\n    client: ${CLIENT_ID:=unset}\n",
		"teams/a/rg.yaml":          rg("team-a-rg"),
		"platform/identity.yaml":   identityExporting("flux-system", "ConfigMap", "identity-vars"),
		"clusters/c/platform.yaml": fluxKustomizationDoc("platform", "./platform", ""),
	}
	run := func(name string, optional bool) (*manifest.Snapshot, error) {
		files["clusters/c/apps.yaml"] = parent(name, optional)
		return fluxFetch(t, writeRepo(t, files), "clusters/c", Options{Substitute: true, Strict: true, Exported: noExports})
	}

	// Required, nobody exports it: an error naming it.
	snap, err := run("cluster-vars", false)
	_, err = failedUnit(t, snap, err, "Kustomization/flux-system/apps", manifest.ReasonBuildFailed)
	if err == nil {
		t.Fatal("a missing substituteFrom ConfigMap was accepted")
	}
	got := strings.Join(errorLines(err), "\n")
	if !strings.Contains(got, "substitute-from ConfigMap/flux-system/cluster-vars: no ConfigMap flux-system/cluster-vars in the repository") || strings.Contains(got, "known-after-apply") {
		t.Errorf("errors:\n%s", got)
	}

	// Optional, nobody exports it: empty, defaults apply, nothing pending.
	snap, err = run("cluster-vars", true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"default/ResourceGroup/apps-rg", "default/ResourceGroup/team-a-rg", "flux-system/UserAssignedIdentity/exporter"}, ids(snap.Objects)); diff != "" {
		t.Errorf("optional missing: objects (-want +got):\n%s", diff)
	}
	if got := field(find(t, snap, "default/ResourceGroup/apps-rg"), "spec", "tags", "client"); got != "unset" {
		t.Errorf("optional missing: client = %v, want the default", got)
	}
	for _, e := range snap.External {
		if e.IsPending() {
			t.Errorf("optional missing: pending %+v", e)
		}
	}

	// Exported by the platform's identity, required or optional: pending.
	// (A child's spec.path built from a pending source cannot be followed:
	// the child here names its path.)
	files["apps/team.yaml"] = fluxKustomizationDoc("team", "./teams/a", "")
	for _, optional := range []bool{false, true} {
		snap, err := run("identity-vars", optional)
		if err != nil {
			t.Fatalf("optional %v: %v", optional, err)
		}
		if got := field(find(t, snap, "default/ResourceGroup/apps-rg"), "spec", "tags", "client"); got != manifest.PendingValue("CLIENT_ID") {
			t.Errorf("optional %v: client = %v, want known after apply", optional, got)
		}
		var pending []string
		for _, e := range snap.External {
			if e.IsPending() {
				pending = append(pending, e.Kind+" "+e.User)
			}
		}
		if diff := cmp.Diff([]string{"PendingConfigMap flux-system/identity-vars"}, pending); diff != "" {
			t.Errorf("optional %v: pending (-want +got):\n%s", optional, diff)
		}
	}
}
