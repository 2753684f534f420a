package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// TestSubstituteFromExports: a Kustomization's substituteFrom naming a
// ConfigMap the repository does not hold reads the values a gitaso
// resource exported (operatorSpec.configMaps), as Flux reads the ConfigMap
// ASO wrote into the cluster; the repository's own ConfigMap wins; a
// missing one is still an error unless optional.
func TestSubstituteFromExports(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"clusters/c/apps.yaml": fluxKustomizationDoc("apps", "./apps", `  postBuild:
    substituteFrom:
      - kind: ConfigMap
        name: team-a-identity-settings
      - kind: Secret
        name: storage-keys
        optional: true
`),
		"apps/rg.yaml":       rg("x") + "  tags:\n    client: ${clientId}\n    key: ${key1:=none}\n",
		"apps/identity.yaml": identityExporting("flux-system", "ConfigMap", "team-a-identity-settings"),
	})
	exported := func(secret bool, ns, name string) (map[string]string, bool) {
		if !secret && ns == "flux-system" && name == "team-a-identity-settings" {
			return map[string]string{"clientId": "2f1c-client"}, true
		}
		return nil, false
	}
	snap, err := fluxFetch(t, root, "clusters/c", Options{Substitute: true, Strict: true, Exported: exported})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"client": "2f1c-client", "key": "none"}, field(find(t, snap, "default/ResourceGroup/x"), "spec", "tags")); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	// Not exported yet: the source is pending (an External the planner
	// checks against the revision's exports) and its variables, defaults
	// included, are known after apply; the optional Secret is not pending.
	none := func(bool, string, string) (map[string]string, bool) { return nil, false }
	snap, err = fluxFetch(t, root, "clusters/c", Options{Substitute: true, Strict: true, Exported: none})
	if err != nil {
		t.Fatal(err)
	}
	want := []manifest.External{{Kind: manifest.ExternalPendingConfigMap, User: "flux-system/team-a-identity-settings",
		Name: "team-a-identity-settings", URL: "Flux Kustomization flux-system/apps (clusters/c/apps.yaml)"}}
	if diff := cmp.Diff(want, snap.External); diff != "" {
		t.Errorf("external (-want +got):\n%s", diff)
	}
	rgx := find(t, snap, "default/ResourceGroup/x")
	if diff := cmp.Diff([]string{"clientId", "key1"}, manifest.PendingVars(rgx)); diff != "" {
		t.Errorf("pending variables (-want +got):\n%s", diff)
	}
	// Without a state to look exports up in (Exported nil), or through
	// Render alone (nobody hears of a pending source), it is refused as
	// before, naming the ConfigMap.
	snap, err = fluxFetch(t, root, "clusters/c", Options{Substitute: true, Strict: true})
	if _, err := failedUnit(t, snap, err, "Kustomization/flux-system/apps", manifest.ReasonBuildFailed); err == nil || !strings.Contains(err.Error(), "team-a-identity-settings") {
		t.Errorf("a substituteFrom ConfigMap neither in the repository nor exported was accepted: %v", err)
	}
}

// TestSubstituteFromPending: --substitute-from naming a ConfigMap a
// resource will export makes every variable it could set known after
// apply, as a value that is a valid YAML scalar inside longer strings too.
func TestSubstituteFromPending(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"vars.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars, namespace: platform}\ndata: {LOCATION: westeurope}\n",
		"apps/rg.yaml":       rg("x") + "  tags:\n    where: ${LOCATION}\n    client: ${CLIENT_ID}\n    url: https://${CLIENT_ID}.example/x # a comment\n",
		"apps/identity.yaml": identityExporting("platform", "ConfigMap", "team-vars"),
	})
	ref1, _ := ParseRef("platform/vars")
	ref2, _ := ParseRef("ConfigMap/platform/team-vars")
	snap, err := fetch(t, root, "", Options{Substitute: true, Strict: true, SubstituteFrom: []Ref{ref1, ref2},
		Exported: func(bool, string, string) (map[string]string, bool) { return nil, false }})
	if err != nil {
		t.Fatal(err)
	}
	o := find(t, snap, "default/ResourceGroup/x")
	tags, _ := field(o, "spec", "tags").(map[string]any)
	if tags["where"] != "westeurope" {
		t.Errorf("where = %v: a variable of the existing source is substituted", tags["where"])
	}
	if tags["client"] != manifest.PendingValue("CLIENT_ID") || tags["url"] != "https://"+manifest.PendingValue("CLIENT_ID")+".example/x" {
		t.Errorf("tags = %v", tags)
	}
	if len(snap.External) != 1 || snap.External[0].Kind != manifest.ExternalPendingConfigMap || snap.External[0].URL != "--substitute-from" {
		t.Errorf("external = %+v", snap.External)
	}
}

// TestExportedValuesAreExternalSources: the exports substituteFrom read are
// external sources of the revision, so a changed export value is a new
// revision; a Secret's digest is keyed, never a plain hash of its values.
func TestExportedValuesAreExternalSources(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"clusters/c/apps.yaml": fluxKustomizationDoc("apps", "./apps", "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: settings\n      - kind: Secret\n        name: keys\n"),
		"apps/rg.yaml":         rg("x") + "  tags:\n    client: ${clientId}\n    k: ${key1}\n",
	})
	value := "one"
	r, err := New(Options{Kustomize: true, Flux: true, FluxPath: "clusters/c", Substitute: true, Strict: true,
		Exported: func(secret bool, ns, name string) (map[string]string, bool) {
			if secret {
				return map[string]string{"key1": "hunter2"}, name == "keys"
			}
			return map[string]string{"clientId": value}, name == "settings"
		}})
	if err != nil {
		t.Fatal(err)
	}
	dir := source.NewDir(root, "", source.WithRenderer(r))
	snap1, err := dir.Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ext1 := snap1.External
	if len(ext1) != 2 {
		t.Fatalf("external sources %+v, want the ConfigMap and the Secret", ext1)
	}
	plain := dataDigest(map[string]string{"key1": "hunter2"}, false)
	for _, e := range ext1 {
		if e.Kind == "ExportedSecret" && e.Digest == plain {
			t.Errorf("the Secret's digest is a plain hash of its values")
		}
	}
	value = "two"
	snap2, err := dir.Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(ext1, snap2.External) || snap1.Revision == snap2.Revision {
		t.Errorf("a changed export value gives the same revision %s", snap2.Revision)
	}
}
