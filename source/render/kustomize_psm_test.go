package render

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/source"
)

// A kustomization's deprecated patchesStrategicMerge still applies after
// gitaso's in-memory fix: an entry naming a file (relative to the
// kustomization's directory) becomes a patch path, any other entry an
// inline patch.
func TestKustomizePatchesStrategicMerge(t *testing.T) {
	files := map[string]string{
		"app/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - rg.yaml
patchesStrategicMerge:
  - patches/location.yaml
  - |-
    apiVersion: resources.azure.com/v1api20200601
    kind: ResourceGroup
    metadata:
      name: rg
    spec:
      tags:
        inline: "yes"
`,
		"app/rg.yaml": `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
spec:
  location: westeurope
`,
		"app/patches/location.yaml": `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
spec:
  location: norwayeast
`,
	}
	var in []source.File
	for p, d := range files {
		in = append(in, source.File{Path: p, Data: []byte(d)})
	}
	r, err := New(Options{Kustomize: true, KustomizeDirs: []string{"app"}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := source.Build(context.Background(), "rev", in, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Objects) != 1 {
		t.Fatalf("objects: %v", where(snap.Objects))
	}
	want := map[string]any{"location": "norwayeast", "tags": map[string]any{"inline": "yes"}}
	if diff := cmp.Diff(want, snap.Objects[0].Content["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}
