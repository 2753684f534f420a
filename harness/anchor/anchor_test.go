//go:build anchor

// These tests run with `go test -tags 'anchor kustomize_disable_go_plugin_support' ./harness/anchor/`; the
// harness is not part of `make test`.
package anchor

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/source"
)

func TestArmType(t *testing.T) {
	for id, want := range map[string]string{
		"/subscriptions/s/resourceGroups/rg":                                                                                                   "resourcegroups",
		"/subscriptions/s/resourceGroups/rg/providers/Microsoft.ServiceBus/namespaces/n/queues/q":                                              "microsoft.servicebus/namespaces/queues",
		"/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/x":                                                                 "microsoft.authorization/roledefinitions",
		"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/a/providers/Microsoft.Authorization/roleAssignments/r": "microsoft.authorization/roleassignments",
	} {
		if got := armType(id); got != want {
			t.Errorf("armType(%s) = %s, want %s", id, got, want)
		}
	}
}

func TestCompareFindsBodyDifferencesButNotVolatileValues(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	id := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/u"
	rg := "/subscriptions/s/resourceGroups/rg"
	aso := []emulator.WriteRecord{
		{Method: "PUT", Path: rg, APIVersion: "2020-06-01", Status: 201, Body: raw(`{"location":"westus2"}`)},
		{Method: "PUT", Path: id, APIVersion: "2023-01-31", Status: 429, Body: raw(`{"location":"x"}`)}, // throttled: not the last accepted
		{Method: "PUT", Path: id, APIVersion: "2023-01-31", Status: 201, Body: raw(`{"location":"westus2","tags":{"a":"b"}}`)},
	}
	gitaso := []emulator.WriteRecord{
		{Method: "PUT", Path: strings.ToUpper(rg), APIVersion: "2020-06-01", Status: 201, Body: raw(`{"location":"westus2"}`)},
		{Method: "PUT", Path: id, APIVersion: "2023-01-31", Status: 201, Body: raw(`{"location":"westus2"}`)},
	}
	final := func(principal, tag string) []emulator.StoredResource {
		return []emulator.StoredResource{{ID: id, Body: raw(`{"properties":{"principalId":"` + principal + `"},"systemData":{"createdAt":"x"}` + tag + `}`)}}
	}
	o := compare(aso, gitaso, final("11111111-1111-4111-8111-111111111111", `,"tags":{"a":"b"}`), final("22222222-2222-4222-8222-222222222222", ""))
	want := []Diff{
		{Resource: strings.ToLower(id), What: "put-body", Field: "tags", ASO: `{"a":"b"}`, Gitaso: "(absent)"},
		{Resource: strings.ToLower(id), What: "final-body", Field: "tags", ASO: `{"a":"b"}`, Gitaso: "(absent)"},
	}
	if d := cmp.Diff(want, o.Diffs); d != "" {
		t.Errorf("diffs (-want +got):\n%s", d)
	}
	if o.PUTResources != 2 || o.PUTMatched != 1 || o.FinalResources != 1 || o.FinalMatched != 0 {
		t.Errorf("counts = %+v", o)
	}
	if d := cmp.Diff([]string{"resourcegroups"}, o.MatchedTypes); d != "" {
		t.Errorf("matched types (-want +got):\n%s", d)
	}
}

func TestCompareNamesEmulatorCreatedResourcesWithoutTheirGUIDs(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	rg := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/"
	pe := rg + "privateEndpoints/pe"
	ra := "/subscriptions/s/providers/Microsoft.Authorization/roleAssignments/"
	put := func(path string) emulator.WriteRecord {
		return emulator.WriteRecord{Method: "PUT", Path: path, APIVersion: "2024-03-01", Status: 201, Body: raw(`{}`)}
	}
	// Each emulator names the interface it creates for the endpoint with a GUID of its own; the role
	// assignment's name is the client's choice, so a different GUID there is a difference.
	side := func(nic, assignment, addr string) ([]emulator.WriteRecord, []emulator.StoredResource) {
		return []emulator.WriteRecord{put(pe), put(ra + assignment)}, []emulator.StoredResource{
			{ID: pe, Body: raw(`{"properties":{"networkInterfaces":[{"id":"` + rg + `networkInterfaces/pe.nic.` + nic + `"}]}}`)},
			{ID: rg + "networkInterfaces/pe.nic." + nic, Body: raw(`{"properties":{"ipConfigurations":[{"name":"privateEndpointIpConfig.` + nic + `","properties":{"privateIPAddress":"` + addr + `"}}]}}`)},
			{ID: ra + assignment, Body: raw(`{}`)},
		}
	}
	aw, af := side("11111111-1111-4111-8111-111111111111", "33333333-3333-4333-8333-333333333333", "10.0.0.4")
	gw, gf := side("22222222-2222-4222-8222-222222222222", "44444444-4444-4444-8444-444444444444", "10.0.0.5")
	o := compare(aw, gw, af, gf)
	nic := strings.ToLower(rg + "networkInterfaces/pe.nic.11111111-1111-4111-8111-111111111111")
	want := []Diff{
		{Resource: strings.ToLower(ra + "33333333-3333-4333-8333-333333333333"), What: "only-aso", ASO: "PUT 2024-03-01"},
		{Resource: strings.ToLower(ra + "44444444-4444-4444-8444-444444444444"), What: "only-gitaso", Gitaso: "PUT 2024-03-01"},
		{Resource: strings.ToLower(ra + "33333333-3333-4333-8333-333333333333"), What: "only-aso", ASO: "stored"},
		{Resource: strings.ToLower(ra + "44444444-4444-4444-8444-444444444444"), What: "only-gitaso", Gitaso: "stored"},
		{Resource: nic, What: "final-body", Field: "properties.ipConfigurations[0].properties.privateIPAddress", ASO: `"10.0.0.4"`, Gitaso: `"10.0.0.5"`},
	}
	if d := cmp.Diff(want, o.Diffs); d != "" {
		t.Errorf("diffs (-want +got):\n%s", d)
	}
	if o.FinalResources != 4 || o.FinalMatched != 1 {
		t.Errorf("counts = %+v", o)
	}
}

func TestCheckSaysWhereASOComesFrom(t *testing.T) {
	err := Options{Controller: filepath.Join(t.TempDir(), "missing")}.Check()
	if !errors.Is(err, ErrMissingASO) || !strings.Contains(err.Error(), "ASO_CONTROLLER") || !strings.Contains(err.Error(), "ASO_CRDS") ||
		!strings.Contains(err.Error(), "outside this repository") {
		t.Errorf("Check() = %v", err)
	}
}

func TestConformanceWorkloadIsValid(t *testing.T) {
	shared := os.Getenv("GITASO_SHARED")
	if shared == "" {
		t.Skip("GITASO_SHARED not set")
	}
	dir := t.TempDir()
	if err := Conformance(shared).Write(dir); err != nil {
		t.Fatal(err)
	}
	snap, err := source.NewDir(dir, "").Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rgs := 0
	for _, o := range snap.Objects {
		if o.Kind() == "ResourceGroup" {
			rgs++
			if !strings.HasPrefix(o.Spec()["azureName"].(string), "aso-sample-rg-") {
				t.Errorf("%s: azureName %v", o, o.Spec()["azureName"])
			}
		}
		if b, _ := json.Marshal(o.Content); strings.Contains(string(b), zeroSubscription) {
			t.Errorf("%s still names the zero subscription", o)
		}
	}
	sets, _ := filepath.Glob(filepath.Join(shared, "conformance", "aso", "*", "*", "expected.json"))
	if rgs != len(sets) {
		t.Errorf("%d resource groups for %d sets", rgs, len(sets))
	}
}
