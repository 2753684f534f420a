package planner_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

const twoGroups = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: __NAME__
  namespace: __NS__
spec:
  azureName: data-rg
  location: westeurope
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: app
  namespace: __NS__
spec:
  location: westeurope
  owner:
    name: __NAME__
`

func movedGraph(t *testing.T, ns, name string) *planner.Graph {
	t.Helper()
	return build(t, map[string]string{"a.yaml": strings.NewReplacer("__NS__", ns, "__NAME__", name).Replace(twoGroups)})
}

// priorOf applies a graph's plan on paper: every resource Ready with the
// hash the planner computed.
func priorOf(t *testing.T, g *planner.Graph) map[string]record.Resource {
	t.Helper()
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	prior := map[string]record.Resource{}
	for _, r := range p.Resources {
		prior[r.Key()] = record.Resource{Namespace: r.Namespace, Group: r.Group, Version: r.Version, Kind: r.Kind, Name: r.Name,
			ARMID: r.ARMID, APIVersion: r.APIVersion, AppliedHash: r.Hash, AppliedBody: r.Request.Body, Policy: string(r.Policy),
			Ready: record.Condition{Type: record.ConditionReady, Status: record.StatusTrue}}
	}
	return prior
}

func TestPlanMove(t *testing.T) {
	prior := priorOf(t, movedGraph(t, "team-a", "data-rg"))
	for _, tc := range []struct{ name, ns, obj string }{
		{"namespace", "team-b", "data-rg"},
		{"rename keeping azureName", "team-a", "data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := movedGraph(t, tc.ns, tc.obj).Plan(planner.Input{Prior: prior})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]planner.Action{}
			for _, r := range p.Resources {
				got[r.ID()] = r.Action
				if r.Action == planner.Delete {
					t.Errorf("%s planned delete: %s", r.ID(), r.Reason)
				}
			}
			rg := p.Get(planner.Key(tc.ns, "resources.azure.com", "ResourceGroup", tc.obj))
			if rg == nil || rg.Action != planner.Move || rg.MovedFrom != planner.Key("team-a", "resources.azure.com", "ResourceGroup", "data-rg") {
				t.Fatalf("resource group: %+v", rg)
			}
			if rg.Request == nil || rg.Request.Method != "PUT" {
				t.Errorf("a move PUTs the manifest under its new key: %+v", rg.Request)
			}
			// Every format says so.
			var text, md, js bytes.Buffer
			_ = planner.RenderText(&text, p, planner.TextOptions{})
			_ = planner.RenderMarkdown(&md, p)
			_ = planner.RenderJSON(&js, p)
			if !strings.Contains(text.String(), "movedFrom") || !strings.Contains(text.String(), "to move") {
				t.Errorf("text plan:\n%s", text.String())
			}
			if !strings.Contains(md.String(), "> move") {
				t.Errorf("markdown plan:\n%s", md.String())
			}
			var back struct {
				Resources []struct{ Action, MovedFrom string }
			}
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			moves := 0
			for _, r := range back.Resources {
				if r.Action == "move" && r.MovedFrom != "" {
					moves++
				}
			}
			if moves == 0 {
				t.Errorf("JSON plan has no move: %s", js.String())
			}
		})
	}
}

// A state entry whose ARM ID another manifest already holds in state (two
// records for one resource) is forgotten, never deleted; so is one whose
// ARM ID is an ancestor of a declared resource.
func TestPlanNeverDeletesDeclaredARMIDs(t *testing.T) {
	g := movedGraph(t, "team-a", "data-rg")
	prior := priorOf(t, g)
	rg := prior[planner.Key("team-a", "resources.azure.com", "ResourceGroup", "data-rg")]
	dup := rg
	dup.Namespace = "old"
	prior[dup.Key()] = dup
	// A group Git no longer declares whose ARM ID is above the identity's.
	parent := rg
	parent.Namespace, parent.Name = "older", "whole-sub"
	parent.ARMID = "/subscriptions/" + sub + "/resourceGroups/DATA-RG/providers/Microsoft.ManagedIdentity"
	prior[parent.Key()] = parent
	p, err := g.Plan(planner.Input{Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{dup.Key(), parent.Key()} {
		r := p.Get(key)
		if r == nil || r.Action != planner.Detach || r.Request != nil {
			t.Errorf("%s: %+v, want detach without a request", key, r)
		}
	}
	if n := len(p.Deletions()); n != 0 {
		t.Errorf("deletions %v", p.Deletions())
	}
}

func TestGuardCheck(t *testing.T) {
	mk := func(deletes, keeps int) *planner.Plan {
		p := &planner.Plan{Revision: "0123456789abcdef"}
		for i := range deletes {
			p.Resources = append(p.Resources, &planner.Resource{Namespace: "ns", Kind: "ResourceGroup", Name: string(rune('a'+i%26)) + strings.Repeat("x", i/26), Action: planner.Delete})
		}
		for range keeps {
			p.Resources = append(p.Resources, &planner.Resource{Action: planner.NoOp})
		}
		return p
	}
	g := planner.DefaultGuard()
	for _, tc := range []struct {
		deletes, keeps, managed int
		guard                   planner.Guard
		want                    string
	}{
		{0, 0, 0, g, ""},
		{1, 0, 1, g, record.HoldEmpty},                      // the only resource goes: empty revision
		{1, 0, 1, planner.Guard{}, record.HoldEmpty},        // always, whatever the limits
		{2, 1, 3, g, ""},                                    // 2 of 3: an ordinary change
		{4, 1, 5, g, ""},                                    // below MinFractionCount
		{5, 4, 9, g, record.HoldMassDeletion},               // 5 of 9 > 50 %
		{5, 5, 10, g, ""},                                   // exactly 50 %
		{26, 100, 126, g, record.HoldMassDeletion},          // > 25
		{25, 100, 125, g, ""},                               // = 25
		{26, 100, 126, planner.Guard{MaxFraction: 0.5}, ""}, // count limit off
		{60, 40, 100, planner.Guard{MaxDeletions: 100}, ""}, // fraction limit off
		{60, 40, 100, planner.Guard{MaxFraction: 0.5}, record.HoldMassDeletion},
	} {
		h := tc.guard.Check(mk(tc.deletes, tc.keeps), tc.managed)
		got := ""
		if h != nil {
			got = h.Reason
			if h.Deletions != tc.deletes || len(h.Keys) != tc.deletes || h.Message == "" {
				t.Errorf("%d of %d: hold %+v", tc.deletes, tc.managed, h)
			}
		}
		if got != tc.want {
			t.Errorf("%d deletions, %d kept, %d managed, %+v: got %q, want %q", tc.deletes, tc.keeps, tc.managed, tc.guard, got, tc.want)
		}
	}
}

func TestApprovesExactlyTheHeldDeletions(t *testing.T) {
	p := &planner.Plan{Revision: "abc", Resources: []*planner.Resource{
		{Namespace: "ns", Group: "g", Kind: "K", Name: "a", Action: planner.Delete},
		{Namespace: "ns", Group: "g", Kind: "K", Name: "b", Action: planner.Delete},
	}}
	keys := p.Deletions()
	if !planner.Approves(record.Approval{Revision: "abc", Keys: keys}, p) {
		t.Error("the held keys are not approved")
	}
	if planner.Approves(record.Approval{Revision: "abd", Keys: keys}, p) {
		t.Error("another revision's approval counts")
	}
	if planner.Approves(record.Approval{Revision: "abc", Keys: keys[:1]}, p) {
		t.Error("an approval of fewer deletions counts")
	}
}

// storageAccount is a resource group data-rg holding a storage account
// datastore, in namespace ns.
const storageAccount = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: data-rg
  namespace: ns
spec:
  location: westeurope
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: datastore
  namespace: ns
spec:
  location: westeurope
  kind: StorageV2
  sku:
    name: Standard_LRS
  owner:
    name: data-rg
`

// An owner or reference given by armId that lies under a resource the
// repository declares waits for that resource (a Table owned by the
// tableServices/default singleton of a declared StorageAccount).
func TestARMIDUnderDeclaredResourceIsADependency(t *testing.T) {
	g := build(t, map[string]string{"a.yaml": storageAccount + `---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccountsTableServicesTable
metadata:
  name: events
  namespace: ns
spec:
  owner:
    armId: /subscriptions/` + sub + `/resourceGroups/data-rg/providers/Microsoft.Storage/storageAccounts/datastore/tableServices/default
`})
	tbl := g.Node(planner.Key("ns", "storage.azure.com", "StorageAccountsTableServicesTable", "events"))
	want := planner.Key("ns", "storage.azure.com", "StorageAccount", "datastore")
	if tbl == nil || !slicesContains(tbl.DependsOn, want) {
		t.Fatalf("table depends on %v, want %s", tbl.DependsOn, want)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// A removed blob service (ARM has no DELETE for it) is forgotten, not
// deleted; removed with its storage account, it goes with the account.
func TestPlanForgetsKindsWithoutDelete(t *testing.T) {
	const account = storageAccount
	const blob = `
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccountsBlobService
metadata:
  name: datastore-blob
  namespace: ns
spec:
  owner:
    name: datastore
`
	prior := priorOf(t, build(t, map[string]string{"a.yaml": account, "b.yaml": blob}))
	blobKey := planner.Key("ns", "storage.azure.com", "StorageAccountsBlobService", "datastore-blob")

	p, err := build(t, map[string]string{"a.yaml": account}).Plan(planner.Input{Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Get(blobKey); r == nil || r.Action != planner.Detach || r.Request != nil {
		t.Errorf("blob service without its manifest: %+v, want detach", r)
	}

	p, err = build(t, map[string]string{"a.yaml": account[:strings.Index(account, "---")]}).Plan(planner.Input{Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Get(blobKey); r == nil || r.Action != planner.Delete || r.DeletedWith == "" {
		t.Errorf("blob service removed with its account: %+v, want deleted with it", r)
	}
}
