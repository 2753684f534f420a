package emulator_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
)

// TestGraphAuthorizationResources: Resource Graph's AuthorizationResources table lists role assignments (at every
// scope) and custom role definitions, filtered, projected and limited to what the caller may read; the Resources
// table does not list them.
func TestGraphAuthorizationResources(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	sub := "/subscriptions/" + e.SubscriptionID()
	rgA, rgB := rgPath(e, "authz-a"), rgPath(e, "authz-b")
	putRG(t, c, rgA)
	putRG(t, c, rgB)
	uai := rgA + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/app"
	id := mustPut(t, c, uai, miAPI, map[string]any{"location": "westus2"})
	principal := id["properties"].(map[string]any)["principalId"].(string)
	const reader = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
	assign := func(scope, name string) string {
		ra := scope + "/providers/Microsoft.Authorization/roleAssignments/" + name
		mustPut(t, c, ra, authzAPI, map[string]any{"properties": map[string]any{
			"roleDefinitionId": sub + "/providers/Microsoft.Authorization/roleDefinitions/" + reader, "principalId": principal, "principalType": "ServicePrincipal"}})
		return ra
	}
	onRG := assign(rgA, "0e7b8c3a-1d2f-4a5b-9c6d-7e8f9a0b1c2d")
	onRes := assign(uai, "1f8c9d4b-2e3a-4b6c-8d7e-8f9a0b1c2d3e")
	onB := assign(rgB, "2a9d0e5c-3f4b-4c7d-9e8f-9a0b1c2d3e4f")
	custom := sub + "/providers/Microsoft.Authorization/roleDefinitions/3b0e1f6d-4a5c-4d8e-8f9a-0b1c2d3e4f5a"
	mustPut(t, c, custom, authzAPI, map[string]any{"properties": map[string]any{"roleName": "graph custom", "permissions": []any{map[string]any{"actions": []any{"*/read"}}}}})

	query := func(c *client, q string) result {
		t.Helper()
		return c.do(http.MethodPost, "/providers/Microsoft.ResourceGraph/resources", "2021-03-01", map[string]any{"subscriptions": []string{e.SubscriptionID()}, "query": q})
	}
	ids := func(r result) map[string]bool {
		out := map[string]bool{}
		for _, d := range r.body["data"].([]any) {
			out[strings.ToLower(d.(map[string]any)["id"].(string))] = true
		}
		return out
	}
	r := query(c, "AuthorizationResources | where type =~ 'Microsoft.Authorization/roleAssignments' and properties.principalId == '"+principal+"' | project id, properties.scope, roleDefinitionId = properties.roleDefinitionId")
	if r.status != 200 {
		t.Fatalf("query: %d %s", r.status, r.raw)
	}
	got := ids(r)
	for _, want := range []string{onRG, onRes, onB} {
		if !got[strings.ToLower(want)] {
			t.Errorf("missing %s in %s", want, r.raw)
		}
	}
	if len(got) != 3 {
		t.Errorf("rows: %s", r.raw)
	}
	for _, d := range r.body["data"].([]any) {
		m := d.(map[string]any)
		if !strings.HasSuffix(strings.ToLower(m["roleDefinitionId"].(string)), reader) || m["scope"] == "" {
			t.Errorf("row %v", m)
		}
	}
	if r := query(c, "AuthorizationResources | where type =~ 'microsoft.authorization/roledefinitions' | project id, name, type, properties.roleName"); !ids(r)[strings.ToLower(custom)] {
		t.Errorf("custom role definition: %s", r.raw)
	}
	if r := query(c, "Resources | where type =~ 'microsoft.authorization/roleassignments'"); r.body["totalRecords"].(float64) != 0 {
		t.Errorf("Resources lists role assignments: %s", r.raw)
	}
	// A reader of resource group B sees B's assignment only.
	sp, _ := e.AddPrincipal(emulator.PrincipalSpec{Roles: []emulator.RoleGrant{{Role: "Reader", Scope: rgB}}})
	rc := newClient(t, e, secretCred(t, e, sp), -1)
	if r := query(rc, "AuthorizationResources | where properties.principalId == '"+principal+"'"); len(ids(r)) != 1 || !ids(r)[strings.ToLower(onB)] {
		t.Errorf("RBAC-filtered: %s", r.raw)
	}
}
