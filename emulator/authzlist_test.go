package emulator_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
)

// Role assignments and locks listed at a resource group are the ones that apply there, as ARM lists them: at the
// group, above it (the subscription) and below it (its resources); $filter=atScope() keeps those at or above.
func TestAuthorizationListsAtAScope(t *testing.T) {
	e := newEmulator(t, emulator.WithDefaultLatency(0))
	c, owner := ownerClient(t, e)
	sub := "/subscriptions/" + e.SubscriptionID()
	rg := rgPath(e, "rg-scope")
	other := rgPath(e, "rg-other")
	for _, g := range []string{rg, other} {
		mustPut(t, c, g, rgAPI, map[string]any{"location": "westeurope"})
	}
	id := rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/app"
	mustPut(t, c, id, miAPI, map[string]any{"location": "westeurope"})
	reader, err := e.AddServicePrincipal("reader")
	if err != nil {
		t.Fatal(err)
	}
	readerRole := sub + "/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7"
	ra := func(scope, name string) string {
		p := scope + "/providers/Microsoft.Authorization/roleAssignments/" + name
		mustPut(t, c, p, authzAPI, map[string]any{"properties": map[string]any{"principalId": reader.ObjectID, "roleDefinitionId": readerRole}})
		return p
	}
	atSub := ra(sub, "aaaaaaaa-0000-4000-8000-000000000001")
	atRG := ra(rg, "aaaaaaaa-0000-4000-8000-000000000002")
	onID := ra(id, "aaaaaaaa-0000-4000-8000-000000000003")
	inOther := ra(other, "aaaaaaaa-0000-4000-8000-000000000004")
	const lockAPI = "2020-05-01"
	lock := func(scope, name string) string {
		p := scope + "/providers/Microsoft.Authorization/locks/" + name
		mustPut(t, c, p, lockAPI, map[string]any{"properties": map[string]any{"level": "CanNotDelete"}})
		return p
	}
	lockSub := lock(sub, "sub-lock")
	lockRG := lock(rg, "rg-lock")
	lockID := lock(id, "id-lock")
	lockOther := lock(other, "other-lock")

	ids := func(path, api, filter string) []string {
		t.Helper()
		if filter != "" {
			path += "?$filter=" + url.QueryEscape(filter)
		}
		r := c.do(http.MethodGet, path, api, nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, r.status, r.raw)
		}
		var out []string
		for _, v := range r.body["value"].([]any) {
			out = append(out, strings.ToLower(v.(map[string]any)["id"].(string)))
		}
		slices.Sort(out)
		return out
	}
	lower := func(s ...string) []string {
		out := make([]string, 0, len(s))
		for _, x := range s {
			out = append(out, strings.ToLower(x))
		}
		slices.Sort(out)
		return out
	}
	// The owner's own assignment is at the subscription too.
	ownerRAs := 0
	for _, x := range ids(sub+"/providers/Microsoft.Authorization/roleAssignments", authzAPI, "principalId eq '"+owner.ObjectID+"'") {
		if strings.HasPrefix(x, strings.ToLower(sub)+"/providers/") {
			ownerRAs++
		}
	}
	if ownerRAs != 1 {
		t.Fatalf("owner has %d assignments at the subscription, want 1", ownerRAs)
	}
	for _, tc := range []struct {
		name, path, api, filter string
		want                    []string
	}{
		{"assignments of the group's reader", rg + "/providers/Microsoft.Authorization/roleAssignments", authzAPI, "principalId eq '" + reader.ObjectID + "'", lower(atSub, atRG, onID)},
		{"assignments at or above the group", rg + "/providers/Microsoft.Authorization/roleAssignments", authzAPI, "atScope()", nil},
		{"assignments at or above the identity", id + "/providers/Microsoft.Authorization/roleAssignments", authzAPI, "atScope()", nil},
		{"locks at the group", rg + "/providers/Microsoft.Authorization/locks", lockAPI, "", lower(lockSub, lockRG, lockID)},
		{"locks at or above the group", rg + "/providers/Microsoft.Authorization/locks", lockAPI, "atScope()", lower(lockSub, lockRG)},
		{"locks at the identity", id + "/providers/Microsoft.Authorization/locks", lockAPI, "", lower(lockSub, lockRG, lockID)},
		{"locks at the other group", other + "/providers/Microsoft.Authorization/locks", lockAPI, "", lower(lockSub, lockOther)},
	} {
		got := ids(tc.path, tc.api, tc.filter)
		if tc.want == nil {
			continue // checked below: they include the owner's assignment
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Without a filter: at, above and below; the other group's is not there.
	all := ids(rg+"/providers/Microsoft.Authorization/roleAssignments", authzAPI, "")
	for _, want := range lower(atSub, atRG, onID) {
		if !slices.Contains(all, want) {
			t.Errorf("assignments at the group %v lack %s", all, want)
		}
	}
	if slices.Contains(all, strings.ToLower(inOther)) {
		t.Errorf("assignments at the group include the other group's %s", inOther)
	}
	at := ids(rg+"/providers/Microsoft.Authorization/roleAssignments", authzAPI, "atScope()")
	if !slices.Contains(at, strings.ToLower(atSub)) || !slices.Contains(at, strings.ToLower(atRG)) || slices.Contains(at, strings.ToLower(onID)) {
		t.Errorf("atScope() at the group = %v, want the subscription's and the group's, not the identity's", at)
	}
	if r := c.do(http.MethodGet, rg+"/providers/Microsoft.Authorization/roleAssignments?$filter="+url.QueryEscape("roleName eq 'x'"), authzAPI, nil); r.status != http.StatusBadRequest || r.code() != "InvalidFilterInQueryString" {
		t.Errorf("unsupported filter = %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, rgPath(e, "rg-missing")+"/providers/Microsoft.Authorization/locks", lockAPI, nil); r.status != http.StatusNotFound || r.code() != "ResourceGroupNotFound" {
		t.Errorf("locks of a missing group = %d %s", r.status, r.raw)
	}
}
