package planner_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// TestDeletionsInReverseDependencyOrder: when everything is removed from
// Git, a resource is deleted after the resources that depended on it when
// they were applied (the edges state recorded), even when their ARM IDs do
// not nest, and after the resources below its ARM ID.
func TestDeletionsInReverseDependencyOrder(t *testing.T) {
	sub := "/subscriptions/11111111-2222-3333-4444-555555555555"
	rec := func(ns, group, kind, name, armID string, deps ...string) record.Resource {
		return record.Resource{Namespace: ns, Group: group, Kind: kind, Name: name, Version: "v1api20230131",
			ARMID: armID, APIVersion: "2023-01-31", Policy: string(aso.ReconcilePolicyManage), DependsOn: deps,
			Ready: record.Condition{Type: record.ConditionReady, Status: record.StatusTrue}}
	}
	rgA := rec("a", "resources.azure.com", "ResourceGroup", "rg-a", sub+"/resourceGroups/rg-a")
	rgA.Version, rgA.APIVersion = "v1api20200601", "2020-06-01"
	rgB := rec("b", "resources.azure.com", "ResourceGroup", "rg-b", sub+"/resourceGroups/rg-b")
	rgB.Version, rgB.APIVersion = "v1api20200601", "2020-06-01"
	id := rec("a", "managedidentity.azure.com", "UserAssignedIdentity", "id",
		sub+"/resourceGroups/rg-a/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id", rgA.Key())
	// The role assignment in rg-b reads the identity's principalId: it
	// depended on the identity although its ARM ID is elsewhere.
	ra := rec("b", "authorization.azure.com", "RoleAssignment", "ra",
		sub+"/resourceGroups/rg-b/providers/Microsoft.Authorization/roleAssignments/0f1e", rgB.Key(), id.Key())
	ra.Version, ra.APIVersion = "v1api20220401", "2022-04-01"
	prior := map[string]record.Resource{rgA.Key(): rgA, rgB.Key(): rgB, id.Key(): id, ra.Key(): ra}

	g := build(t, map[string]string{})
	p, err := g.Plan(planner.Input{Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	after := map[string][]string{}
	for i, r := range p.Resources {
		pos[r.Key()] = i
		after[r.Key()] = r.DeleteAfter
	}
	if pos[rgB.Key()] > pos[rgA.Key()] {
		t.Errorf("rg-b (whose role assignment read rg-a's identity) is deleted after rg-a")
	}
	// ARM deletes the identity with rg-a and the role assignment with
	// rg-b: the role assignment read the identity, so rg-b's deletion goes
	// first; each child is settled after the deletion that takes it.
	want := map[string][]string{
		ra.Key():  {rgB.Key()},
		id.Key():  {rgA.Key()},
		rgA.Key(): {rgB.Key()},
		rgB.Key(): nil,
	}
	if diff := cmp.Diff(want, after); diff != "" {
		t.Errorf("DeleteAfter (-want +got):\n%s", diff)
	}
}

// TestDeletionOrderSurvivesStaleCycles: records that depend on each other
// (written by different revisions) still give an order, deepest first.
func TestDeletionOrderSurvivesStaleCycles(t *testing.T) {
	sub := "/subscriptions/11111111-2222-3333-4444-555555555555"
	a := record.Resource{Namespace: "n", Group: "resources.azure.com", Kind: "ResourceGroup", Name: "a", Version: "v1api20200601",
		ARMID: sub + "/resourceGroups/a", APIVersion: "2020-06-01", Policy: string(aso.ReconcilePolicyManage), DependsOn: []string{"n/resources.azure.com/ResourceGroup/b"}}
	b := a
	b.Name, b.ARMID, b.DependsOn = "b", sub+"/resourceGroups/b", []string{a.Key()}
	g := build(t, map[string]string{})
	p, err := g.Plan(planner.Input{Prior: map[string]record.Resource{a.Key(): a, b.Key(): b}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Resources) != 2 {
		t.Fatalf("plan: %v", p.Keys())
	}
	first, second := p.Resources[0], p.Resources[1]
	if len(first.DeleteAfter) != 0 || len(second.DeleteAfter) != 1 || second.DeleteAfter[0] != first.Key() {
		t.Errorf("cycle not broken: %s after %v, %s after %v", first.Key(), first.DeleteAfter, second.Key(), second.DeleteAfter)
	}
}
