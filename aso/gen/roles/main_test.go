package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func write(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRun reads the three shapes (az's per-role files, ARM's list answer,
// the AVM cache), keeps built-in roles only, adds the supplement's missing
// roles, cross-checks and writes a sorted table with its provenance.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	az := filepath.Join(dir, "azure-roles")
	if err := os.Mkdir(az, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(az, "Reader.json"), `{"assignableScopes":["/"],"description":"View all resources","id":"/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7","name":"acdd72a7-3385-48ef-bd42-f606fba81ae7","roleName":"Reader","roleType":"BuiltInRole","type":"Microsoft.Authorization/roleDefinitions"}`)
	write(t, filepath.Join(az, "Foundry User.json"), `{"name":"53ca6127-db72-4b80-b1b0-d745d6d5456d","roleName":"Foundry User","roleType":"BuiltInRole","type":"Microsoft.Authorization/roleDefinitions"}`)
	write(t, filepath.Join(az, "mine.json"), `{"name":"11111111-1111-1111-1111-111111111111","roleName":"My Role","roleType":"CustomRole","type":"Microsoft.Authorization/roleDefinitions"}`)
	supp := write(t, filepath.Join(dir, "supp.json"), `{"value":[
		{"name":"582fc458-8989-419f-a480-75249bc5db7e","properties":{"roleName":"Reservations Reader","type":"BuiltInRole","description":"Lets one read all the reservations in a tenant"}},
		{"name":"acdd72a7-3385-48ef-bd42-f606fba81ae7","properties":{"roleName":"Reader","type":"BuiltInRole"}}]}`)
	cross := write(t, filepath.Join(dir, "avm.json"), `{"locals":{"role_definitions_cached":{"value":[
		{"name":"53ca6127-db72-4b80-b1b0-d745d6d5456d","roleName":"Azure AI User"},
		{"name":"acdd72a7-3385-48ef-bd42-f606fba81ae7","roleName":"Reader"}]}}}`)
	out := filepath.Join(dir, "out.json")
	if err := run([]string{"-from", az, "-source", "src", "-supplement", supp, "-supplement-source", "docs",
		"-crosscheck", cross, "-crosscheck-source", "avm", "-date", "2026-01-02", "-out", out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got Table
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := Table{
		Provenance: Provenance{
			Source: "src: 2 roles", Generator: "github.com/gitaso/gitaso/aso/gen/roles", GeneratedAt: "2026-01-02", Count: 3,
			Supplement: "docs: 1 roles assignable only at tenant-level provider scopes, which a subscription's list leaves out: Reservations Reader",
			CrossCheck: "avm: all 2 GUIDs present, 1 with the same roleName, 1 renamed since (listed); 0 roles of -from are newer than it",
			Renamed:    []string{`53ca6127-db72-4b80-b1b0-d745d6d5456d: "Foundry User", was "Azure AI User"`},
		},
		Roles: []Role{
			{RoleName: "Foundry User", Name: "53ca6127-db72-4b80-b1b0-d745d6d5456d", Type: "BuiltInRole"},
			{RoleName: "Reader", Name: "acdd72a7-3385-48ef-bd42-f606fba81ae7", Type: "BuiltInRole", Description: "View all resources"},
			{RoleName: "Reservations Reader", Name: "582fc458-8989-419f-a480-75249bc5db7e", Type: "BuiltInRole", Description: "Lets one read all the reservations in a tenant"},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}

	// A cross-check GUID the table lacks, or two names differing in case, fail.
	write(t, cross, `[{"name":"22222222-2222-2222-2222-222222222222","roleName":"Gone"}]`)
	if err := run([]string{"-from", az, "-source", "s", "-crosscheck", cross, "-out", out}); err == nil || !strings.Contains(err.Error(), "Gone") {
		t.Errorf("missing cross-check role: %v", err)
	}
	write(t, filepath.Join(az, "reader2.json"), `{"name":"33333333-3333-3333-3333-333333333333","roleName":"READER","roleType":"BuiltInRole"}`)
	if err := run([]string{"-from", az, "-source", "s", "-out", out}); err == nil || !strings.Contains(err.Error(), "case-insensitively") {
		t.Errorf("names differing in case: %v", err)
	}
}
