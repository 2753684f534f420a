package source

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/diag"
)

// FuzzParseFile checks that ParseFile never panics, that it returns either
// objects or a diag.List, and that every object it returns is valid JSON of
// the normalised types with the required fields; and that CheckFiles and
// the parser keep within the limits.
func FuzzParseFile(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	for _, s := range seeds {
		f.Add(mustRead(f, s))
	}
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: a}}\n"))
	f.Add([]byte("a: &x {b: 1}\nc: *x\n<<: *x\n"))
	f.Add([]byte("---\n---\n# c\n"))
	f.Add([]byte(Bomb609))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("a: " + strings.Repeat("[", 30) + strings.Repeat("]", 30) + "\n"))
	small := Limits{MaxNodes: 2000, MaxDepth: 16}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The limits hold: with small ones, the check and the parser never
		// count past them and always name the file.
		if err := CheckFiles(t.Context(), []File{{Path: "f.yaml", Data: data}}, small); err != nil {
			for _, e := range diag.AsList(err) {
				if e.File != "f.yaml" {
					t.Fatalf("check error without the file name: %v", e)
				}
			}
		}
		// ParseFile with small limits, so that every input is quick: an
		// alias bomb within the default ones expands to millions of values.
		objs, nodes, err := parseFile("f.yaml", data, small)
		if nodes > small.MaxNodes {
			t.Fatalf("parser counted %d nodes past the limit (%v)", nodes, err)
		}
		if err != nil {
			if objs != nil {
				t.Fatalf("objects together with an error")
			}
			l := diag.AsList(err)
			if len(l) == 0 {
				t.Fatalf("error is not a non-empty diag.List: %T %v", err, err)
			}
			for _, e := range l {
				if e.File != "f.yaml" {
					t.Fatalf("error without the file name: %v", e)
				}
			}
			return
		}
		for _, o := range objs {
			if o.APIVersion() == "" || o.Kind() == "" || o.Name() == "" || o.Line < 1 {
				t.Fatalf("invalid object accepted: %+v", o)
			}
			checkJSONTypes(t, o.Content)
			if _, err := json.Marshal(o.Content); err != nil {
				t.Fatalf("object is not JSON: %v", err)
			}
		}
	})
}

func checkJSONTypes(t *testing.T, v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			checkJSONTypes(t, e)
		}
	case []any:
		for _, e := range x {
			checkJSONTypes(t, e)
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			t.Fatalf("non-finite number %v", x)
		}
	case string, bool, nil, int64:
	default:
		t.Fatalf("value of type %T", v)
	}
}
