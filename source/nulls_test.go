package source

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// A label, annotation or data value written as "key:" (or rendered empty,
// as by a Helm lookup that found nothing) is "", as the Kubernetes API
// server decodes null into a map[string]string or map[string][]byte.
func TestNullStringMapValuesAreEmpty(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		check func(t *testing.T, o manifest.Object)
	}{
		{
			name: "labels and annotations of an ASO resource",
			in: "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n" +
				"  labels:\n    team:\n    env: prod\n  annotations:\n    owner: ~\n    note: null\nspec: {location: x}\n",
			check: func(t *testing.T, o manifest.Object) {
				if diff := cmp.Diff(map[string]string{"team": "", "env": "prod"}, o.Labels()); diff != "" {
					t.Errorf("labels (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(map[string]string{"owner": "", "note": ""}, o.Annotations()); diff != "" {
					t.Errorf("annotations (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "ConfigMap data and binaryData",
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  a:\n  b: x\nbinaryData:\n  c:\n",
			check: func(t *testing.T, o manifest.Object) {
				got, err := manifest.ConfigMapData(o)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(map[string]string{"a": "", "b": "x", "c": ""}, got); diff != "" {
					t.Errorf("data (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "Secret data and stringData",
			in:   "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  a:\n  b: eA==\nstringData:\n  c:\n",
			check: func(t *testing.T, o manifest.Object) {
				got, err := manifest.SecretData(o)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(map[string]string{"a": "", "b": "x", "c": ""}, got); diff != "" {
					t.Errorf("data (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "a List's items",
			in:   "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: cm, labels: {a: }}\n  data: {k: }\n",
			check: func(t *testing.T, o manifest.Object) {
				if diff := cmp.Diff(map[string]string{"a": ""}, o.Labels()); diff != "" {
					t.Errorf("labels (-want +got):\n%s", diff)
				}
				if got := o.Content["data"]; !cmp.Equal(got, map[string]any{"k": ""}) {
					t.Errorf("data = %#v", got)
				}
			},
		},
		{
			name: "a null elsewhere stays null",
			in:   "apiVersion: storage.azure.com/v1api20230101\nkind: StorageAccount\nmetadata: {name: sa}\nspec:\n  tags:\n    a:\n  data:\n    b:\n",
			check: func(t *testing.T, o manifest.Object) {
				want := map[string]any{"tags": map[string]any{"a": nil}, "data": map[string]any{"b": nil}}
				if diff := cmp.Diff(want, o.Spec()); diff != "" {
					t.Errorf("spec (-want +got):\n%s", diff)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := ParseFile("m.yaml", []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 1 {
				t.Fatalf("%d objects", len(objs))
			}
			tt.check(t, objs[0])
		})
	}
}

// Other types are still refused (the API server refuses them too).
func TestNonStringMapValuesStillRefused(t *testing.T) {
	files := []File{
		{Path: "a.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {n: 1}\ndata: {k: [x]}\n")},
		{Path: "b.yaml", Data: []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {k: true}\n")},
		{Path: "c.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm2}\ndata: {k: {x: y}}\n")},
	}
	_, err := Build(context.Background(), "rev", files, nil)
	var got []string
	for _, e := range diag.AsList(err) {
		got = append(got, e.Error())
	}
	want := []string{
		"a.yaml:1: default/ConfigMap/cm: metadata.labels.n: must be a string, got a number (quote it)",
		"b.yaml:1: default/Secret/s: stringData.k: must be a string, got a boolean (quote it)",
		"c.yaml:1: default/ConfigMap/cm2: data.k: must be a string, got a mapping (quote it)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// A null annotation on a kind gitaso ignores (a Deployment of the same Helm
// chart) no longer refuses the revision.
func TestNullAnnotationOnIgnoredKind(t *testing.T) {
	files := []File{
		{Path: "app.yaml", Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    checksum/secret:
  labels:
    app.kubernetes.io/version:
spec: {}
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
  annotations:
    serviceoperator.azure.com/reconcile-policy: manage
    team:
spec: {location: westeurope}
`)},
	}
	snap, err := Build(context.Background(), "rev", files, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Ignored) != 1 || snap.Ignored[0].ID() != "default/Deployment/web" {
		t.Fatalf("ignored: %v", snap.Ignored)
	}
	if got := snap.Ignored[0].Annotations(); !cmp.Equal(got, map[string]string{"checksum/secret": ""}) {
		t.Errorf("deployment annotations = %v", got)
	}
	if len(snap.Objects) != 1 || snap.Objects[0].Annotations()["team"] != "" {
		t.Errorf("objects: %v", snap.Objects)
	}
}
