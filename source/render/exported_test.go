package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"

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
		"apps/rg.yaml": rg("x") + "  tags:\n    client: ${clientId}\n    key: ${key1:=none}\n",
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
	// Not exported (yet): refused, naming the ConfigMap.
	if _, err := fluxFetch(t, root, "clusters/c", Options{Substitute: true, Strict: true,
		Exported: func(bool, string, string) (map[string]string, bool) { return nil, false }}); err == nil {
		t.Errorf("a substituteFrom ConfigMap neither in the repository nor exported was accepted")
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
