package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

func TestParseFile(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []manifest.Object
		wantErr string // diag.List.Error() exactly
	}{
		{
			name: "multi-document with comments, empty documents and JSON types",
			in: `# leading comment
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
spec:
  location: westeurope
---
---
# only a comment
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: team-a
  annotations:
    a: "1"
data:
  port: "5432"
  n: 5
  f: 1.5
  big: 99999999999999999999
  t: true
  z: null
  hex: 0x1F
  when: 2001-12-14
  list: [a, 1]
`,
			want: []manifest.Object{
				{File: "m.yaml", Line: 2, Index: 0, Content: map[string]any{
					"apiVersion": "resources.azure.com/v1api20200601",
					"kind":       "ResourceGroup",
					"metadata":   map[string]any{"name": "rg"},
					"spec":       map[string]any{"location": "westeurope"},
				}},
				{File: "m.yaml", Line: 12, Index: 3, Content: map[string]any{
					"apiVersion": "v1",
					"kind":       "ConfigMap",
					"metadata":   map[string]any{"name": "cfg", "namespace": "team-a", "annotations": map[string]any{"a": "1"}},
					"data": map[string]any{
						"port": "5432", "n": int64(5), "f": 1.5, "big": 1e20, "t": true, "z": "", // null in a ConfigMap's data is "" (as in Kubernetes)
						"hex": int64(31), "when": "2001-12-14", "list": []any{"a", int64(1)},
					},
				}},
			},
		},
		{
			name: "List is expanded, items keep their own lines",
			in: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Secret
  metadata: {name: s1}
- apiVersion: v1
  kind: Secret
  metadata: {name: s2}
`,
			want: []manifest.Object{
				{File: "m.yaml", Line: 4, Index: 0, Content: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s1"}}},
				{File: "m.yaml", Line: 7, Index: 0, Content: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s2"}}},
			},
		},
		{
			name: "anchors, aliases and merge keys",
			in: `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
base: &base {a: "1", b: "2"}
data:
  <<: *base
  b: "3"
`,
			want: []manifest.Object{{File: "m.yaml", Line: 1, Content: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg"},
				"base": map[string]any{"a": "1", "b": "2"},
				"data": map[string]any{"a": "1", "b": "3"},
			}}},
		},
		{
			name: "CRLF line endings and a byte order mark",
			in:   "\ufeffapiVersion: v1\r\nkind: Secret\r\nmetadata:\r\n  name: s\r\n---\r\napiVersion: v1\r\nkind: Secret\r\nmetadata: {name: t}\r\n",
			want: []manifest.Object{
				{File: "m.yaml", Line: 1, Index: 0, Content: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}}},
				{File: "m.yaml", Line: 6, Index: 1, Content: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "t"}}},
			},
		},
		{
			name: "only comments and separators",
			in:   "# nothing\n---\n---\n",
			want: nil,
		},
		{
			name:    "missing fields name file, line and field",
			in:      "apiVersion: v1\nmetadata: {}\n---\nkind: Secret\nmetadata:\n  name: s\n",
			wantErr: "m.yaml:1: kind: required field is missing\nm.yaml:1: metadata.name: required field is missing\nm.yaml:4: default/Secret/s: apiVersion: required field is missing",
		},
		{
			name:    "missing metadata",
			in:      "\n\napiVersion: v1\nkind: Secret\n",
			wantErr: "m.yaml:3: metadata.name: required field is missing",
		},
		{
			name:    "wrong types",
			in:      "apiVersion: 1\nkind: [a]\nmetadata:\n  name: x\n  namespace: 5\n  annotations:\n    n: 1\n",
			wantErr: "m.yaml:1: apiVersion: must be a string, got a number\nm.yaml:1: kind: must be a string, got a list\nm.yaml:1: metadata.annotations.n: must be a string, got a number (quote it)\nm.yaml:1: metadata.namespace: must be a string, got a number",
		},
		{
			name:    "syntax error stops the file and keeps its line",
			in:      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ok\n---\na: b: c\n",
			wantErr: "m.yaml:6: invalid YAML: mapping values are not allowed in this context",
		},
		{
			name:    "syntax error on the first line",
			in:      "a: b: c\n",
			wantErr: "m.yaml:1: invalid YAML: mapping values are not allowed in this context",
		},
		{
			name:    "control character is located",
			in:      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: \x01\n",
			wantErr: "m.yaml:4: invalid YAML: control characters are not allowed",
		},
		{
			name:    "invalid UTF-8 is located",
			in:      "apiVersion: v1\nkind: \xff\n",
			wantErr: "m.yaml:2: invalid YAML: invalid leading UTF-8 octet",
		},
		{
			name:    "tab indentation",
			in:      "apiVersion: v1\n\tkind: Secret\n",
			wantErr: "m.yaml:2: invalid YAML: found a tab character that violates indentation",
		},
		{
			name:    "duplicate keys",
			in:      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\n  name: b\n",
			wantErr: `m.yaml:5: duplicate key "name" (first at line 4)`,
		},
		{
			name:    "document is not a mapping",
			in:      "- a\n- b\n",
			wantErr: "m.yaml:1: document is a list, want a mapping (a Kubernetes-style object)",
		},
		{
			name:    "unknown alias",
			in:      "a: *nope\n",
			wantErr: "m.yaml:1: invalid YAML: unknown anchor 'nope' referenced",
		},
		{
			name:    "infinity is not JSON",
			in:      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nx: .inf\n",
			wantErr: `m.yaml:4: number ".inf" cannot be represented in JSON (quote it to make it a string)`,
		},
		{
			name:    "List items must be mappings",
			in:      "apiVersion: v1\nkind: List\nitems:\n- 1\n",
			wantErr: "m.yaml:4: items[0]: must be a mapping",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFile("m.yaml", []byte(tt.in))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseFile succeeded, want error %q; objects: %v", tt.wantErr, got)
				}
				if got != nil {
					t.Errorf("ParseFile returned objects with an error: %v", got)
				}
				if diag.AsList(err) == nil {
					t.Errorf("error %T is not a diag.List", err)
				}
				if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFile: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFileAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	_, err := ParseFile("bomb.yaml", []byte(b.String()))
	if !isLimit(err, "yaml-nodes") || !strings.Contains(err.Error(), "aliases expanded") || !strings.Contains(err.Error(), "bomb.yaml:") {
		t.Fatalf("want an alias expansion error naming the file, got %v", err)
	}
}

func TestObjectAccessors(t *testing.T) {
	objs, err := ParseFile("testdata/roleassignment.yaml", mustRead(t, "testdata/roleassignment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("got %d objects", len(objs))
	}
	o := objs[0]
	got := []string{o.APIVersion(), o.Group(), o.Version(), o.Kind(), o.Name(), o.Namespace(), o.ID()}
	want := []string{"authorization.azure.com/v1api20220401", "authorization.azure.com", "v1api20220401",
		"RoleAssignment", "aso-sample-contributor", "default", "default/RoleAssignment/aso-sample-contributor"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("accessors (-want +got):\n%s", diff)
	}
	if !aso.IsASOGroup(o.Group()) || o.IsSecret() || o.IsConfigMap() {
		t.Errorf("classification: aso=%v secret=%v configmap=%v", aso.IsASOGroup(o.Group()), o.IsSecret(), o.IsConfigMap())
	}
	if o.Annotations() != nil {
		t.Errorf("Annotations() = %v, want nil", o.Annotations())
	}
	owner := o.Spec()["owner"].(map[string]any)
	if owner["kind"] != "ResourceGroup" {
		t.Errorf("spec.owner = %v", owner)
	}

	if got := o.String(); got != "testdata/roleassignment.yaml:1 default/RoleAssignment/aso-sample-contributor" {
		t.Errorf("String() = %q", got)
	}

	core := manifest.Object{Content: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "s", "namespace": "team-a", "annotations": map[string]any{"k": "v"}}}}
	if core.Group() != "" || core.Version() != "v1" || core.Namespace() != "team-a" || !core.IsSecret() {
		t.Errorf("core object: group %q version %q namespace %q", core.Group(), core.Version(), core.Namespace())
	}
	if diff := cmp.Diff(map[string]string{"k": "v"}, core.Annotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestParseSamples(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("samples: %v %v", files, err)
	}
	for _, f := range files {
		objs, err := ParseFile(f, mustRead(t, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(objs) != 1 || !aso.IsASOGroup(objs[0].Group()) || objs[0].Line != 1 {
			t.Errorf("%s: got %+v", f, objs)
		}
	}
}

func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
