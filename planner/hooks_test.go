package planner_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/planner"
)

const vaultFiles = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: rg, namespace: team}
spec: {location: westeurope}
---
apiVersion: keyvault.azure.com/v1api20230701
kind: Vault
metadata: {name: kv, namespace: team}
spec:
  location: westeurope
  owner: {name: rg}
  properties:
    createMode: MODE
    tenantId: 00000000-0000-0000-0000-000000000001
    sku: {family: A, name: standard}`

// TestVaultCreateModeInPlan: the plan shows the createMode ARM receives (aso.PlanPayload), known after apply
// where only the apply can tell, and keeps the request hash of the converted body (no perpetual update).
func TestVaultCreateModeInPlan(t *testing.T) {
	vault := func(p *planner.Plan) *planner.Resource {
		for _, r := range p.Resources {
			if r.Kind == "Vault" {
				return r
			}
		}
		t.Fatal("no vault")
		return nil
	}
	mode := func(r *planner.Resource) string {
		var b struct {
			Properties struct{ CreateMode string } `json:"properties"`
		}
		if err := json.Unmarshal(r.Request.Body, &b); err != nil {
			t.Fatal(err)
		}
		return b.Properties.CreateMode
	}
	for _, tt := range []struct{ in, want string }{
		{"createOrRecover", planner.KnownAfterApply},
		{"purgeThenCreate", "default"},
		{"recover", "recover"},
		{"default", "default"},
	} {
		g := build(t, map[string]string{"kv.yaml": strings.Replace(vaultFiles, "MODE", tt.in, 1)})
		p, err := g.Plan(planner.Input{})
		if err != nil {
			t.Fatal(err)
		}
		r := vault(p)
		if got := mode(r); got != tt.want {
			t.Errorf("%s: plan shows %q, want %q", tt.in, got, tt.want)
		}
		if unknown := slices.Contains(r.KnownAfterApply, "/properties/createMode"); unknown != (tt.want == planner.KnownAfterApply) {
			t.Errorf("%s: knownAfterApply %v", tt.in, r.KnownAfterApply)
		}
		// A second plan after applying is a no-op: the hash is the converted body's, as the executor records it.
		p2, err := g.Plan(planner.Input{Prior: applied(t, p)})
		if err != nil {
			t.Fatal(err)
		}
		if a := vault(p2).Action; a != planner.NoOp {
			t.Errorf("%s: second plan %s", tt.in, a)
		}
	}
}
