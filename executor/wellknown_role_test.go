package executor_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
)

// TestWellKnownRolePlanAgreesWithApply: for every built-in role the emulator
// knows, a RoleAssignment naming it by wellKnownName (in another case, owned
// by a resource group given by name) is planned with the role's ID from
// aso's table, in the owner's subscription; the executor sends exactly the
// planned body (and a plan read back from JSON rebuilds it), and the
// emulator, which knows its built-in roles by GUID, creates the assignment
// with that role. An offline plan (no subscription named) shows the same ID
// in its placeholder subscription.
func TestWellKnownRolePlanAgreesWithApply(t *testing.T) {
	m := newEmu(t)
	sp, err := m.e.AddServicePrincipal("team-app")
	if err != nil {
		t.Fatal(err)
	}
	roles := emulator.BuiltinRoles()
	docs := []string{rg}
	want := map[string]string{} // assignment name → roleDefinitionId
	for i, r := range roles {
		name := fmt.Sprintf("ra-%d", i)
		docs = append(docs, fmt.Sprintf(`apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: %s
  namespace: team
spec:
  owner: {group: resources.azure.com, kind: ResourceGroup, name: rg}
  principalId: %s
  principalType: ServicePrincipal
  roleDefinitionReference:
    wellKnownName: %q`, name, sp.ObjectID, strings.ToLower(r.RoleName)))
		want[name] = "/subscriptions/" + m.sub + "/providers/Microsoft.Authorization/roleDefinitions/" + r.GUID
	}

	roleID := func(body []byte) string {
		var b struct {
			Properties struct {
				RoleDefinitionID string `json:"roleDefinitionId"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return b.Properties.RoleDefinitionID
	}

	p := m.plan(t, docs...)
	planned := map[string][]byte{}
	for _, r := range p.Resources {
		if r.Kind != "RoleAssignment" {
			continue
		}
		planned[r.Name] = r.Request.Body
		if got := roleID(r.Request.Body); got != want[r.Name] {
			t.Errorf("plan %s: roleDefinitionId %q, want %q", r.Name, got, want[r.Name])
		}
		if len(r.KnownAfterApply) != 0 {
			t.Errorf("plan %s: known after apply %v", r.Name, r.KnownAfterApply)
		}
	}
	if len(planned) != len(roles) {
		t.Fatalf("%d assignments planned, want %d", len(planned), len(roles))
	}

	// A plan read back from JSON rebuilds the same bodies (the owner's ARM
	// ID, which gives the subscription, is among the recorded inputs).
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back planner.Plan
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	for _, r := range back.Resources {
		if r.Kind != "RoleAssignment" {
			continue
		}
		b, err := planner.Resolve(r, planner.Values{})
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if string(b.JSON) != string(planned[r.Name]) {
			t.Errorf("%s read back from JSON: %s, planned %s", r.Name, b.JSON, planned[r.Name])
		}
	}

	res := m.apply(t, docs...)
	for name, body := range planned {
		rr := res[name]
		mustOK(t, rr)
		if string(rr.Body) != string(body) {
			t.Errorf("%s: the executor sent\n%s\nthe plan showed\n%s", name, rr.Body, body)
		}
		if got := roleID(rr.Response); !strings.EqualFold(got, want[name]) {
			t.Errorf("%s: ARM holds roleDefinitionId %q, want %q", name, got, want[name])
		}
	}

	// Offline: no subscription named, no Azure: the same role IDs in the
	// placeholder subscription the offline plan uses for every ARM ID.
	objs, err := source.ParseFile("test.yaml", []byte(strings.Join(docs, "\n---\n")))
	if err != nil {
		t.Fatal(err)
	}
	const placeholder = "00000000-0000-0000-0000-000000000000"
	g, err := planner.Build(&manifest.Snapshot{Revision: "offline", Objects: objs},
		planner.Options{SubscriptionID: placeholder, SubscriptionUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	off, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range off.Resources {
		if r.Kind != "RoleAssignment" {
			continue
		}
		w := strings.Replace(want[r.Name], m.sub, placeholder, 1)
		if got := roleID(r.Request.Body); got != w {
			t.Errorf("offline plan %s: roleDefinitionId %q, want %q", r.Name, got, w)
		}
	}
}
