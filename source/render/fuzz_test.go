package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/source"
)

// FuzzSubstitute: substitution never panics; an error is a *diag.Error of one
// of the two kinds, on a line of the document; without '$' the text is
// returned as it is.
func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{"a: ${A}\n", "a: ${A:=x}\nb: $${B}\n", "${A:-${B}}", "${", "$$", "${A^^}", "a: ${B\n"} {
		f.Add(s, true)
	}
	seeds, _ := filepath.Glob("testdata/*/*/*.yaml")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b), false)
		}
	}
	vars := Vars{"A": "1", "B": "two words", "TEAM_MI_PREFIX": "mid"}
	f.Fuzz(func(t *testing.T, text string, strict bool) {
		out, err := Substitute("f.yaml", 5, text, vars, strict)
		if err != nil {
			var de *diag.Error
			if !errors.As(err, &de) || !(errors.Is(err, ErrUnsetVariable) || errors.Is(err, ErrBadSubstitution)) {
				t.Fatalf("unexpected error %T %v", err, err)
			}
			if de.Line < 5 || de.Line > 5+strings.Count(text, "\n") {
				t.Fatalf("line %d outside the document", de.Line)
			}
			return
		}
		if !strings.Contains(text, "$") && out != text {
			t.Fatalf("text without '$' changed")
		}
	})
}

// FuzzRender runs the kustomize and substitution path of Render as a
// source does (source.Build: limits checked, rendered, parsed) on a fuzzed
// kustomization, a resource it lists and a file outside it that uses
// variables. Nothing may panic (kustomize runs in-process: a panic there
// takes the daemon down), errors must be diag errors naming one of the
// files, and two runs of the same input must give the same outcome.
func FuzzRender(f *testing.F) {
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- res.yaml\n"
	rg := "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\nspec:\n  location: ${LOCATION:=westeurope}\n"
	f.Add(kust, rg, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${A}\ndata:\n  b: ${B}\n")
	f.Add(kust+"namePrefix: p-\ncommonLabels:\n  a: b\n", rg, "a: &a [${A}, ${A}]\nb: [*a, *a]\n")
	f.Add("resources: [res.yaml]\npatches:\n- target: {kind: ResourceGroup}\n  patch: |\n    - op: replace\n      path: /spec/location\n      value: x\n", rg, "")
	f.Add(kust, "a: &a [*a]\n", "${")
	for _, pattern := range []string{"testdata/kustomize/*/*/*.yaml", "testdata/kustomize/*/*/*/*.yaml", "testdata/onboarding/*/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			if filepath.Base(p) == "kustomization.yaml" {
				f.Add(string(b), rg, "")
			} else {
				f.Add(kust, string(b), string(b))
			}
		}
	}
	lim := source.Limits{MaxFileSize: 64 << 10, MaxNodes: 20_000, MaxTotalNodes: 50_000, MaxKustomizeObjects: 200}
	r, err := New(Options{
		Kustomize:  true,
		Substitute: true,
		Vars:       map[string]string{"A": "one", "B": "two words", "LOCATION": "uksouth"},
		// Small limits: every input stays cheap to render.
		Limits: lim,
	})
	if err != nil {
		f.Fatal(err)
	}
	names := []string{"app/kustomization.yaml", "app/res.yaml", "plain.yaml"}
	outcome := func(kust, res, plain string) string {
		files := []source.File{{Path: names[0], Data: []byte(kust)}, {Path: names[1], Data: []byte(res)}, {Path: names[2], Data: []byte(plain)}}
		snap, err := source.BuildWithLimits(context.Background(), "fuzz", files, r, lim)
		if err != nil {
			l := diag.AsList(err)
			if l == nil {
				return "error that is no diag.List: " + err.Error()
			}
			for _, e := range l {
				if !slices.Contains(names, e.File) && e.File != "" {
					return "error naming a file that is not an input: " + e.Error()
				}
			}
			return "error: " + l.Error()
		}
		var b strings.Builder
		for _, o := range snap.Objects {
			j, err := json.Marshal(o.Content)
			if err != nil {
				return "object is not JSON: " + err.Error()
			}
			fmt.Fprintf(&b, "%s:%d#%d %s\n", o.File, o.Line, o.Index, j)
		}
		return b.String()
	}
	f.Fuzz(func(t *testing.T, kust, res, plain string) {
		first := outcome(kust, res, plain)
		if strings.HasPrefix(first, "error that") || strings.HasPrefix(first, "object is not") {
			t.Fatal(first)
		}
		if second := outcome(kust, res, plain); second != first {
			t.Fatalf("outcome differs between two runs:\n--- first\n%s\n--- second\n%s", first, second)
		}
	})
}
