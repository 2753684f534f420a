package source

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/diag"
)

func TestOriginCommentRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		file string
		line int
	}{{"base/rg.yaml", 3}, {"a $dir/${x}.yaml", 0}, {"k/kustomization.yaml", 12}} {
		c := OriginComment(tt.file, tt.line)
		if strings.Contains(c, "$") || !strings.HasSuffix(c, "\n") || strings.Count(c, "\n") != 1 {
			t.Errorf("OriginComment(%q, %d) = %q", tt.file, tt.line, c)
		}
		o, ok := parseOrigin("# something else\n" + strings.TrimSuffix(c, "\n"))
		if !ok || o.File != tt.file || o.Line != tt.line {
			t.Errorf("parseOrigin(%q) = %+v, %v", c, o, ok)
		}
	}
	for _, bad := range []string{
		`# gitaso.io/origin: {"file":"../x.yaml","line":1}`,
		`# gitaso.io/origin: {"file":"/etc/x.yaml","line":1}`,
		`# gitaso.io/origin: {"file":"a/../b.yaml","line":1}`,
		`# gitaso.io/origin: {"file":"a.yaml","line":-1}`,
		`# gitaso.io/origin: {"file":""}`,
		`# gitaso.io/origin: not json`,
	} {
		if o, ok := parseOrigin(bad); ok {
			t.Errorf("parseOrigin(%q) = %+v, want refused", bad, o)
		}
	}
}

// Generated text (a kustomize build named after its kustomization): objects
// and their errors are where the origin comments say; without one, the
// kustomization at line 0. A raw file's comments are only comments.
func TestParseGeneratedOrigins(t *testing.T) {
	text := OriginComment("base/rg.yaml", 3) +
		"apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\nspec: {location: x}\n---\n" +
		OriginComment("app/kustomization.yaml", 12) +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-abc\ndata: {a: b}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n"
	objs, _, err := parseGenerated("app/kustomization.yaml", []byte(text), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.String())
	}
	want := []string{
		"base/rg.yaml:3 default/ResourceGroup/rg",
		"app/kustomization.yaml:12 default/ConfigMap/settings-abc",
		"app/kustomization.yaml:0 default/ConfigMap/plain",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if _, ok := objs[0].Content["metadata"].(map[string]any)["annotations"]; ok {
		t.Error("the comment became an annotation")
	}

	// The same text as a file of its own: the comments are comments.
	objs, err = ParseFile("x.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if objs[0].File != "x.yaml" || objs[0].Line != 2 {
		t.Errorf("raw file: %s", objs[0])
	}
}

func TestParseGeneratedErrors(t *testing.T) {
	text := OriginComment("base/sa.yaml", 8) +
		"apiVersion: storage.azure.com/v1api20230101\nkind: StorageAccount\nmetadata:\n  name: sa\n  labels: {n: 1}\n---\n" +
		OriginComment("base/dup.yaml", 4) +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\ndata: {a: b, a: c}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: e, labels: [x]}\n"
	_, _, err := parseGenerated("app/kustomization.yaml", []byte(text), DefaultLimits())
	var got []string
	for _, e := range diag.AsList(err).Sorted() {
		got = append(got, e.Error())
	}
	want := []string{
		"app/kustomization.yaml: default/ConfigMap/e: metadata.labels: must be a mapping, got a list",
		`base/dup.yaml:4: duplicate key "a"`,
		"base/sa.yaml:8: default/StorageAccount/sa: metadata.labels.n: must be a string, got a number (quote it)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}

	// Errors outside any object stay on the generated file, at line 0.
	_, _, err = parseGenerated("app/kustomization.yaml", []byte(OriginComment("a.yaml", 2)+"a: [\n"), DefaultLimits())
	if l := diag.AsList(err); len(l) != 1 || l[0].File != "app/kustomization.yaml" || l[0].Line != 0 {
		t.Errorf("YAML error: %v", err)
	}
	lim := DefaultLimits()
	lim.MaxNodes = 5
	_, _, err = parseGenerated("app/kustomization.yaml", []byte(OriginComment("a.yaml", 2)+"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b, c: d}\n"), lim)
	l := diag.AsList(err)
	if len(l) != 1 || l[0].File != "app/kustomization.yaml" || l[0].Line != 0 || !errors.Is(l[0], ErrLimit) ||
		!strings.Contains(l[0].Error(), "the build output of this kustomization") {
		t.Errorf("limit error: %v", err)
	}
}
