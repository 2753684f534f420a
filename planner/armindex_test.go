package planner

import "testing"

// ARM IDs are found whatever their case, as strings.ToLower would compare
// them, and a second node of one ID is refused with the first.
func TestARMIndexFoldsCase(t *testing.T) {
	rg := &Node{ARMID: "/subscriptions/S/resourceGroups/RG"}
	acct := &Node{ARMID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/Ünïcode"}
	x := armIndex{}
	for _, n := range []*Node{rg, acct} {
		if held := x.add(n); held != nil {
			t.Fatalf("add %s: held by %s", n.ARMID, held.ARMID)
		}
	}
	for id, want := range map[string]*Node{
		"/SUBSCRIPTIONS/s/RESOURCEGROUPS/rg": rg,
		"/subscriptions/s/resourcegroups/rg": rg,
		"/subscriptions/s/resourcegroups/rg/providers/microsoft.storage/storageaccounts/üNÏCODE": acct,
		"/subscriptions/s/resourcegroups/rg2":                                                    nil,
		"/subscriptions/s/resourcegroups/r":                                                      nil,
	} {
		if got := x.get(id); got != want {
			t.Errorf("get(%q) = %v, want %v", id, got, want)
		}
	}
	dup := &Node{ARMID: "/Subscriptions/s/ResourceGroups/rg"}
	if held := x.add(dup); held != rg {
		t.Fatalf("add of a second node for %s: held %v, want the first", dup.ARMID, held)
	}
	if got := x.get(dup.ARMID); got != rg {
		t.Fatalf("the second node replaced the first")
	}
}
