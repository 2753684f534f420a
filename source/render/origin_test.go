package render

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitaso/gitaso/source"
)

// originFiles is a base (with a deprecated field, so that gitaso rewrites
// it in memory, and a secret generator) and an overlay (namespace,
// namePrefix, a patch, a ConfigMap generator). Lines matter: see the tests.
func originFiles(extra map[string]string) []source.File {
	files := map[string]string{
		"base/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
commonLabels:
  team: a
resources:
  - rg.yaml
  - multi.yaml
  - secret.yaml
secretGenerator:
  - name: creds
    literals:
      - user=admin
`,
		"base/rg.yaml": `# The team's resource group.
# (two comment lines first)
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
spec:
  location: westeurope
`,
		"base/multi.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: storage-settings
data:
  tier: hot
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: storage
spec:
  location: westeurope
  owner:
    name: t-rg
  kind: StorageV2
  sku:
    name: Standard_LRS
`,
		"base/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  user: admin
`,
		"app/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: team-a
namePrefix: t-
resources:
  - ../base
patches:
  - path: patch.yaml
configMapGenerator:
  - name: other
    literals: [a=b]
  - name: settings
    literals:
      - region=westeurope
`,
		"app/patch.yaml": `apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: storage
spec:
  sku:
    name: Standard_GRS
`,
	}
	for k, v := range extra {
		files[k] = v
	}
	var out []source.File
	for p, d := range files {
		out = append(out, source.File{Path: p, Data: []byte(d)})
	}
	return out
}

var originRE = regexp.MustCompile(`(?m)^# gitaso\.io/origin: (.*)\n(?:[^\n]*\n)*?kind: (\w+)\n(?:[^\n]*\n)*?  name: (\S+)\n`)

// The render stage writes, before each object of a kustomize build, where
// it came from: the resource's file and the line of its document (through
// namePrefix, namespace and patches), or the kustomization holding the
// generator and the line of its entry (as committed, before gitaso's
// in-memory fix of deprecated fields). kustomize's origin annotation is
// gone from the objects.
func TestKustomizeOriginComments(t *testing.T) {
	r, err := New(Options{Kustomize: true, KustomizeDirs: []string{"app"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Render(context.Background(), originFiles(nil))
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for _, f := range out {
		if f.Generated {
			text += string(f.Data)
		}
	}
	if strings.Contains(text, "config.kubernetes.io/origin") || strings.Contains(text, "buildMetadata") {
		t.Errorf("origin annotation left in the output:\n%s", text)
	}
	var got []string
	for _, m := range originRE.FindAllStringSubmatch(text, -1) {
		got = append(got, m[2]+" "+m[3]+" "+m[1])
	}
	want := []string{ // kustomize's legacy order (the base's kustomization was fixed): by kind
		`ConfigMap t-other-4h2mbtbbt6 {"file":"app/kustomization.yaml","line":10}`,
		`ConfigMap t-settings-mtcc8fg72m {"file":"app/kustomization.yaml","line":12}`,
		`ConfigMap t-storage-settings {"file":"base/multi.yaml","line":1}`,
		`Secret t-creds-hmbb7mfmdf {"file":"base/kustomization.yaml","line":10}`,
		`Secret t-db {"file":"base/secret.yaml","line":1}`,
		`ResourceGroup t-rg {"file":"base/rg.yaml","line":3}`,
		`StorageAccount t-storage {"file":"base/multi.yaml","line":8}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("origins (-want +got):\n%s\n%s", diff, text)
	}
}

// The source annotation is gone from the objects: one without other
// annotations has none, one with annotations keeps exactly its own; a file
// that is a resource and a patch is not annotated (its objects keep the
// kustomization file); the files kustomize read are put back.
func TestKustomizeSourceAnnotationRemoved(t *testing.T) {
	files := []source.File{
		{Path: "k/kustomization.yaml", Data: []byte("resources: [rg.yaml, cm.yaml]\npatches:\n- path: cm.yaml\n")},
		{Path: "k/rg.yaml", Data: []byte("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  annotations:\n    a: b\nspec: {location: x}\n" +
			"---\napiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata: {name: rg2}\nspec: {location: x}\n")},
		{Path: "k/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n")},
	}
	r, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Render(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for _, f := range out {
		text += string(f.Data)
	}
	if strings.Contains(text, sourceAnnotation) {
		t.Errorf("source annotation left:\n%s", text)
	}
	objs, err := source.ParseFile("k/kustomization.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"name": "cm"},
		map[string]any{"name": "rg", "annotations": map[string]any{"a": "b"}},
		map[string]any{"name": "rg2"},
	}
	var got []any
	for _, o := range objs {
		got = append(got, o.Content["metadata"])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if !strings.Contains(text, `{"file":"k/rg.yaml","line":1}`) || !strings.Contains(text, `{"file":"k/rg.yaml","line":9}`) ||
		strings.Contains(text, `k/cm.yaml`) {
		t.Errorf("origins:\n%s", text)
	}
}

func TestAnnotateFile(t *testing.T) {
	in := `# a comment
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  annotations:
    x: "1"
data:
  text: |
    two
    lines
---
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: b, annotations: }
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: c
---
apiVersion: v1
kind: ConfigMap
metadata: {name: d, annotations: {gitaso.io/kustomize-source: "spoofed:1"}}
`
	out, ok := annotateFile("base/cm.yaml", []byte(in))
	if !ok {
		t.Fatal("not annotated")
	}
	objs, err := source.ParseFile("x.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Name()+" "+o.Annotations()[sourceAnnotation])
	}
	want := []string{"a base/cm.yaml:2", "b base/cm.yaml:17", "c base/cm.yaml:20", "d base/cm.yaml:25"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotations (-want +got):\n%s\n%s", diff, out)
	}
	if objs[0].Content["data"].(map[string]any)["text"] != "two\nlines\n" || objs[0].Annotations()["x"] != "1" {
		t.Errorf("content changed:\n%s", out)
	}
	if _, ok := annotateFile("x.yaml", []byte("a: [\n")); ok {
		t.Error("invalid YAML annotated")
	}
}

// stubRenderer returns files as they are.
type stubRenderer []source.File

func (s stubRenderer) Render(context.Context, []source.File) ([]source.File, error) { return s, nil }

// source.Build reads the origin comment of a generated file: the object
// names the file and line the comment gives, not the generated file.
func TestBuildReadsOriginComments(t *testing.T) {
	gen := stubRenderer{{Path: "k/kustomization.yaml", Generated: true, Data: []byte(source.OriginComment("k/rg.yaml", 2) +
		"apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata: {name: rg}\nspec: {location: x}\n")}}
	snap, err := source.Build(context.Background(), "rev", nil, gen)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Objects) != 1 {
		t.Fatalf("objects: %v", where(snap.Objects))
	}
	if o := snap.Objects[0]; o.File != "k/rg.yaml" || o.Line != 2 {
		t.Errorf("object from %s:%d, want k/rg.yaml:2 (the origin comment)", o.File, o.Line)
	}
}

// Objects of a kustomize build name the file and line they came from.
func TestKustomizeObjectOrigins(t *testing.T) {
	r, err := New(Options{Kustomize: true, KustomizeDirs: []string{"app"}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := source.Build(context.Background(), "rev", originFiles(nil), r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"app/kustomization.yaml:10#0 team-a/ConfigMap/t-other-4h2mbtbbt6",
		"app/kustomization.yaml:12#1 team-a/ConfigMap/t-settings-mtcc8fg72m",
		"base/multi.yaml:1#2 team-a/ConfigMap/t-storage-settings",
		"base/kustomization.yaml:10#3 team-a/Secret/t-creds-hmbb7mfmdf",
		"base/secret.yaml:1#4 team-a/Secret/t-db",
		"base/rg.yaml:3#5 team-a/ResourceGroup/t-rg",
		"base/multi.yaml:8#6 team-a/StorageAccount/t-storage",
	}
	if diff := cmp.Diff(want, where(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	for _, o := range snap.Objects {
		if _, ok := o.Annotations()["config.kubernetes.io/origin"]; ok {
			t.Errorf("%s: origin annotation left", o)
		}
	}
}

// A field error in a resource a kustomization lists names the resource's
// file and line, a patched field too (the resource's file: the patch only
// changes it), and an error in a generated object the kustomization and
// the generator's line.
func TestKustomizeErrorOrigins(t *testing.T) {
	files := originFiles(map[string]string{
		"base/multi.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: storage-settings
data:
  tier: hot
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: Storage_Main
spec:
  location: westeurope
`,
		"app/patch.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: db
data:
  password: "not base64!"
`,
		"app/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: team-a
namePrefix: t-
resources:
  - ../base
patches:
  - path: patch.yaml
configMapGenerator:
  - name: Settings
    options:
      disableNameSuffixHash: true
    literals:
      - region=westeurope
`,
	})
	r, err := New(Options{Kustomize: true, KustomizeDirs: []string{"app"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = source.Build(context.Background(), "rev", files, r)
	want := []string{
		`app/kustomization.yaml:10: team-a/ConfigMap/t-Settings: metadata.name: "t-Settings" is not a valid name: lower case letters, digits, '-' and '.', at most 253 characters, starting and ending with a letter or digit`,
		`base/multi.yaml:8: team-a/StorageAccount/t-Storage_Main: metadata.name: "t-Storage_Main" is not a valid name: lower case letters, digits, '-' and '.', at most 253 characters, starting and ending with a letter or digit`,
		`base/secret.yaml:1: team-a/Secret/t-db: data.password: invalid base64 (use stringData for plain text)`,
	}
	if diff := cmp.Diff(want, errorLines(err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// The files a build reads: resource files through bases and components;
// files named by other fields (patches, generator inputs) set apart.
func TestWalkKustomizations(t *testing.T) {
	fs := filesys.MakeFsInMemory()
	for p, d := range map[string]string{
		"app/kustomization.yaml": "resources:\n  - ../.base/\n  - rg.yaml\n  - data.yaml\ncomponents: [../comp]\n" +
			"patches:\n  - path: patch.yaml\nconfigMapGenerator:\n  - name: c\n    files: [cfg=data.yaml]\n",
		"app/rg.yaml":                 "a: b\n",
		"app/data.yaml":               "a: b\n",
		"app/patch.yaml":              "a: b\n",
		".base/Kustomization":         "resources: [sa.yaml, ./]\n",
		".base/sa.yaml":               "a: b\n",
		"comp/kustomization.yaml":     "kind: Component\nresources: [cm.yaml]\n",
		"comp/cm.yaml":                "a: b\n",
		"unrelated/kustomization.yml": "resources: [x.yaml]\n",
	} {
		if err := fs.WriteFile("/"+p, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	w := walkKustomizations(fs, "app")
	if diff := cmp.Diff([]string{"app/kustomization.yaml", ".base/Kustomization", "comp/kustomization.yaml"}, w.kfiles); diff != "" {
		t.Errorf("kustomizations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{".base/sa.yaml", "app/rg.yaml", "app/data.yaml", "comp/cm.yaml"}, w.resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"app/data.yaml": true, "app/patch.yaml": true}, w.other); diff != "" {
		t.Errorf("other (-want +got):\n%s", diff)
	}
}
