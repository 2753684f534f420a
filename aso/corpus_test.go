package aso

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/diag"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// checkManifest runs everything this package checks before a PUT and renders
// the problems one per line, as "stage: field: message".
func checkManifest(m map[string]any) string {
	var out []string
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	k, ok := LookupAPIVersion(apiVersion, kind)
	if !ok {
		g, v, _ := strings.Cut(apiVersion, "/")
		line := "lookup: apiVersion: unknown ASO kind " + apiVersion + ", " + kind
		if s := Suggest(g, v, kind); len(s) > 0 {
			line += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return line + "\n"
	}
	for _, e := range Validate(k, m) {
		out = append(out, "validate: "+e.Error())
	}
	spec, _ := m["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	if _, err := OwnerOf(k, spec); err != nil {
		out = append(out, "owner: "+err.Error())
	}
	md, _ := m["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	azureName, err := AzureName(k, "default", name, spec)
	if err != nil {
		out = append(out, "azureName: "+err.Error())
		azureName = name
	}
	if _, err := Dependencies(k, spec); err != nil {
		for _, e := range diag.AsList(err) {
			out = append(out, "dependencies: "+e.Error())
		}
		if diag.AsList(err) == nil {
			out = append(out, "dependencies: "+err.Error())
		}
	}
	if _, err := Convert(k, spec, azureName, fixedResolver{}); err != nil {
		out = append(out, "convert: "+err.Error())
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

// TestInvalidCorpus checks every manifest under testdata/invalid against its
// golden error text (refresh with go test -run InvalidCorpus -update).
func TestInvalidCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("only %d invalid manifests, want at least 40", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := parseYAML(data)
			if err != nil || len(docs) != 1 {
				t.Fatalf("parse: %v", err)
			}
			got := checkManifest(docs[0])
			if got == "" {
				t.Fatalf("no error reported for an invalid manifest")
			}
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("errors differ from %s\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}
