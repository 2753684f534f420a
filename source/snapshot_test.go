package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

const (
	rgYAML = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
  namespace: team-a
spec:
  location: westeurope
`
	secretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: team-a
data:
  password: aHVudGVyMg==
  user: YWRtaW4=
stringData:
  user: root
`
	cmYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: team-a
data:
  region: westeurope
binaryData:
  blob: AAE=
`
	deployYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
`
	kustomizationYAML = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [rg.yaml]
`
)

// ids lists "file:line ID" of objects, to compare with go-cmp.
func ids(objs []manifest.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.File+":"+strconv.Itoa(o.Line)+" "+o.ID())
	}
	return out
}

func TestBuildClassifiesAndOrders(t *testing.T) {
	files := []File{
		{Path: "z/app.yaml", Data: []byte(deployYAML)},
		{Path: "b/secret.yaml", Data: []byte(secretYAML + "---\n" + cmYAML)},
		{Path: "a/rg.yaml", Data: []byte(rgYAML)},
		{Path: "a/kustomization.yaml", Data: []byte(kustomizationYAML)},
	}
	snap, err := Build(context.Background(), "rev1", files, nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision != "rev1" {
		t.Errorf("revision %q", snap.Revision)
	}
	if diff := cmp.Diff([]string{"a/rg.yaml:1 team-a/ResourceGroup/rg", "b/secret.yaml:1 team-a/Secret/db", "b/secret.yaml:12 team-a/ConfigMap/settings"}, ids(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"z/app.yaml:1 default/Deployment/web"}, ids(snap.Ignored)); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	if snap.Objects[2].Index != 1 {
		t.Errorf("ConfigMap index = %d, want 1", snap.Objects[2].Index)
	}
}

func TestBuildCollectsEveryError(t *testing.T) {
	files := []File{
		{Path: "a.yaml", Data: []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: '%%%'}\n")},
		{Path: "b.yaml", Data: []byte("a: b: c\n")},
		{Path: "c.yaml", Data: []byte(rgYAML)},
		{Path: "d/dup.yaml", Data: []byte("# again\n" + rgYAML)},
		{Path: "e.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {port: 5432}\n")},
		{Path: "f.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: My/CM, namespace: Team_A}\n")},
		{Path: "g.yaml", Data: []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: Not/Checked}\n")},
	}
	snap, err := Build(context.Background(), "rev2", files, nil)
	if snap != nil {
		t.Errorf("a snapshot came back with errors")
	}
	var rerr *RevisionError
	if !errors.As(err, &rerr) || rerr.Revision != "rev2" {
		t.Fatalf("want *RevisionError for rev2, got %T %v", err, err)
	}
	want := []string{
		"a.yaml:1: default/Secret/s: data.k: invalid base64 (use stringData for plain text)",
		"b.yaml:1: invalid YAML: mapping values are not allowed in this context",
		"d/dup.yaml:2: team-a/ResourceGroup/rg: defined twice (also at c.yaml:1)",
		"e.yaml:1: default/ConfigMap/c: data.port: must be a string, got a number (quote it)",
		`f.yaml:1: Team_A/ConfigMap/My/CM: metadata.name: "My/CM" is not a valid name: lower case letters, digits, '-' and '.', at most 253 characters, starting and ending with a letter or digit`,
		`f.yaml:1: Team_A/ConfigMap/My/CM: metadata.namespace: "Team_A" is not a valid namespace: lower case letters, digits and '-', at most 63 characters, starting and ending with a letter or digit`,
	}
	var got []string
	for _, e := range diag.AsList(err) {
		got = append(got, e.Error())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(err.Error(), "revision rev2 refused (6 errors):\n") {
		t.Errorf("error text: %q", err.Error())
	}
}

func TestSecretAndConfigMapData(t *testing.T) {
	objs, err := ParseFile("s.yaml", []byte(secretYAML+"---\n"+cmYAML))
	if err != nil {
		t.Fatal(err)
	}
	sd, err := manifest.SecretData(objs[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"password": "hunter2", "user": "root"}, sd); diff != "" {
		t.Errorf("secret data (-want +got):\n%s", diff)
	}
	cd, err := manifest.ConfigMapData(objs[1])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"region": "westeurope", "blob": "\x00\x01"}, cd); diff != "" {
		t.Errorf("configmap data (-want +got):\n%s", diff)
	}
	bad := manifest.Object{File: "x.yaml", Line: 3, Content: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c"}, "data": map[string]any{"k": "v"}, "binaryData": map[string]any{"k": "AA=="}}}
	_, err = manifest.ConfigMapData(bad)
	if err == nil || err.Error() != "x.yaml:3: default/ConfigMap/c: binaryData.k: key is also in data" {
		t.Errorf("duplicate key error: %v", err)
	}
}

type upperRenderer struct{}

// Render drops files in "skip" directories and adds a generated file, to show the
// render stage sits between reading and parsing.
func (upperRenderer) Render(_ context.Context, files []File) ([]File, error) {
	var out []File
	for _, f := range files {
		if strings.Contains(f.Path, "/skip/") {
			continue
		}
		out = append(out, f)
	}
	return append(out, File{Path: "generated.yaml", Data: []byte(strings.ReplaceAll(rgYAML, "name: rg", "name: gen"))}), nil
}

func TestDir(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("infra/rg.yaml", rgYAML)
	write("infra/team/secret.yml", secretYAML)
	write("infra/.hidden/broken.yaml", "a: b: c\n")
	write("infra/README.md", "not yaml")
	write("other/outside.yaml", "a: b: c\n")

	d := NewDir(root, "infra")
	s1, err := d.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"infra/rg.yaml:1 team-a/ResourceGroup/rg", "infra/team/secret.yml:1 team-a/Secret/db"}, ids(s1.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(s1.Revision, "dir-") || len(s1.Revision) != len("dir-")+12 {
		t.Errorf("revision %q", s1.Revision)
	}
	s2, err := d.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s2.Revision != s1.Revision {
		t.Errorf("unchanged directory changed revision: %s → %s", s1.Revision, s2.Revision)
	}
	write("infra/rg.yaml", strings.Replace(rgYAML, "westeurope", "northeurope", 1))
	s3, err := d.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s3.Revision == s1.Revision {
		t.Errorf("changed content kept revision %s", s3.Revision)
	}
	if loc := s3.Objects[0].Spec()["location"]; loc != "northeurope" {
		t.Errorf("location %v", loc)
	}

	write("infra/skip/broken.yaml", "a: b: c\n")
	if _, err := d.Fetch(context.Background()); diag.AsList(err) == nil {
		t.Errorf("broken file accepted: %v", err)
	}
	r, err := NewDir(root, "infra", WithRenderer(upperRenderer{})).Fetch(context.Background())
	if err != nil {
		t.Fatalf("with renderer: %v", err)
	}
	if diff := cmp.Diff([]string{"generated.yaml:1 team-a/ResourceGroup/gen", "infra/rg.yaml:1 team-a/ResourceGroup/rg", "infra/team/secret.yml:1 team-a/Secret/db"}, ids(r.Objects)); diff != "" {
		t.Errorf("rendered objects (-want +got):\n%s", diff)
	}

	if _, err := NewDir(root, "../etc").Fetch(context.Background()); err == nil {
		t.Errorf("path escaping the root accepted")
	}
	if _, err := NewDir(root, "missing").Fetch(context.Background()); err == nil {
		t.Errorf("missing path accepted")
	}
}

func TestDirRevisionIsOrderIndependentAndUnambiguous(t *testing.T) {
	a := []File{{Path: "a.yaml", Data: []byte("x")}, {Path: "b.yaml", Data: []byte("y")}}
	b := []File{a[1], a[0]}
	if DirRevision(a) != DirRevision(b) {
		t.Errorf("order changes the revision")
	}
	c := []File{{Path: "a.yaml", Data: []byte("xb.yaml")}}
	if DirRevision(a) == DirRevision(c) {
		t.Errorf("different file sets share a revision")
	}
}

func TestObjectNeverLogsContent(t *testing.T) {
	objs, err := ParseFile("s.yaml", []byte(secretYAML))
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("read", "object", objs[0])
	out := buf.String() + fmt.Sprint(objs[0]) + fmt.Sprintf("%v %s", objs, objs[0])
	if strings.Contains(out, "aHVudGVyMg==") || strings.Contains(out, "root") {
		t.Errorf("secret material printed: %s", out)
	}
	if !strings.Contains(out, `"id":"team-a/Secret/db"`) {
		t.Errorf("log lacks the object ID: %s", out)
	}
}
