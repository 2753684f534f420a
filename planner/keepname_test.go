package planner_test

import (
	"strings"
	"testing"

	"github.com/gitaso/gitaso/planner"
)

// grantIn is a role assignment without azureName granting Reader (or role)
// to principal at a resource group given by armId, in namespace ns.
func grantIn(ns, principal, role string) string {
	return strings.NewReplacer("__NS__", ns, "__P__", principal, "__ROLE__", role).Replace(`
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: reader
  namespace: __NS__
spec:
  owner:
    armId: /subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/access-rg
    group: resources.azure.com
    kind: ResourceGroup
  principalId: __P__
  roleDefinitionReference:
    armId: /subscriptions/11111111-2222-3333-4444-555555555555/providers/Microsoft.Authorization/roleDefinitions/__ROLE__
`)
}

const (
	readerRole = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
	ownerRole  = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635"
	principalA = "11111111-1111-4111-8111-111111111111"
	principalB = "22222222-2222-4222-8222-222222222222"
)

// A role assignment moved to another namespace takes over the removed one's
// ARM name only when it grants the same role to the same principal at the
// same scope; otherwise it is created under ASO's name and the old one is
// deleted. Once kept, the name stays on later plans.
func TestKeepNamesOfMovedRoleAssignments(t *testing.T) {
	prior := priorOf(t, build(t, map[string]string{"a.yaml": grantIn("team-a", principalA, readerRole)}))
	var oldID string
	for _, pr := range prior {
		oldID = pr.ARMID
	}
	for _, tc := range []struct {
		name, principal, role string
		keeps                 bool
	}{
		{"same grant", principalA, readerRole, true},
		{"another principal", principalB, readerRole, false},
		{"another role", principalA, ownerRole, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, map[string]string{"b.yaml": grantIn("team-b", tc.principal, tc.role)})
			g.KeepNames(prior, nil)
			p, err := g.Plan(planner.Input{Prior: prior})
			if err != nil {
				t.Fatal(err)
			}
			moved := p.Get("team-b/authorization.azure.com/RoleAssignment/reader")
			old := p.Get("team-a/authorization.azure.com/RoleAssignment/reader")
			name := oldID[strings.LastIndexByte(oldID, '/')+1:]
			if !tc.keeps {
				if moved.Action != planner.Create || strings.EqualFold(moved.ARMID, oldID) || old == nil || old.Action != planner.Delete {
					t.Errorf("plan %s %s and %v, want a create under another name and the old one deleted", moved.Action, moved.ARMID, old)
				}
				return
			}
			if moved.Action != planner.Move || !strings.EqualFold(moved.ARMID, oldID) || moved.AzureName != name || old != nil {
				t.Fatalf("plan %s %s (old %v), want a move keeping %s", moved.Action, moved.ARMID, old, oldID)
			}
			if !strings.Contains(moved.Reason, "keeps its name "+name+" because Azure allows one assignment of a role to a principal at a scope") {
				t.Errorf("reason %q", moved.Reason)
			}
			if moved.Request == nil || !strings.HasPrefix(moved.Request.Path, oldID+"?") {
				t.Errorf("request %+v, want a PUT of %s", moved.Request, oldID)
			}
			// The next plan (state under the new key) keeps the name: nothing to do.
			next := priorOf(t, g)
			g2 := build(t, map[string]string{"b.yaml": grantIn("team-b", tc.principal, tc.role)})
			g2.KeepNames(next, nil)
			p2, err := g2.Plan(planner.Input{Prior: next})
			if err != nil {
				t.Fatal(err)
			}
			if r := p2.Get(moved.Key()); r.Action != planner.NoOp || !strings.EqualFold(r.ARMID, oldID) {
				t.Errorf("next plan %s %s, want no-op on %s", r.Action, r.ARMID, oldID)
			}
		})
	}
}
