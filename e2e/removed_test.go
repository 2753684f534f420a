package e2e_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

const removedAKS = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: aks-rg
  namespace: team-a
spec:
  location: westeurope
---
apiVersion: containerservice.azure.com/v1api20240402preview
kind: ManagedCluster
metadata:
  name: aks
  namespace: team-a
spec:
  location: westeurope
  owner:
    name: aks-rg
  dnsPrefix: aks
  aiToolchainOperatorProfile:
    enabled: true
  agentPoolProfiles:
  - name: system
    mode: System
    count: 1
    vmSize: Standard_D2s_v3
  identity:
    type: SystemAssigned
`

// TestRemovedVersionPlansAndApplies: a ManagedCluster written for ASO
// v2.18.0 in containerservice.azure.com/v1api20240402preview, a version the
// pinned ASO commit removed, plans and applies against the emulator with
// v2.18.0's conversion (PUT ?api-version=2024-04-02-preview, with the
// preview's aiToolchainOperatorProfile), and the plan, in JSON and as text,
// says on the resource which release removed the version and what replaces
// it.
func TestRemovedVersionPlansAndApplies(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	e := newEnv(t)
	e.commit("aks", map[string]string{"aks.yaml": removedAKS})
	rep, err := e.rec.PlanOnly(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	r := planned(t, rep.Plan, "team-a", "containerservice.azure.com", "ManagedCluster", "aks")
	id := e.rgID("aks-rg") + "/providers/Microsoft.ContainerService/managedClusters/aks"
	if r.Action != planner.Create || r.Request == nil || r.Request.Path != id+"?api-version=2024-04-02-preview" {
		t.Fatalf("planned %s %+v, want a create PUT %s?api-version=2024-04-02-preview", r.Action, r.Request, id)
	}
	if !strings.Contains(string(r.Request.Body), `"aiToolchainOperatorProfile":{"enabled":true}`) {
		t.Errorf("body %s lacks the 2024-04-02-preview field aiToolchainOperatorProfile", r.Request.Body)
	}
	warning := "containerservice.azure.com/v1api20240402preview ManagedCluster was removed after ASO v2.18.0 (last in v2.18.0); " +
		"use containerservice.azure.com/v20251002preview or containerservice.azure.com/v1api20250801 or containerservice.azure.com/v1api20240901; " +
		"planned with ASO v2.18.0's conversion"
	if len(r.Warnings) != 1 || r.Warnings[0] != warning {
		t.Errorf("warnings %q, want [%q]", r.Warnings, warning)
	}
	var text strings.Builder
	if err := planner.RenderText(&text, rep.Plan, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "# team-a/ManagedCluster/aks will be created\n  # warning: " + warning + "\n"; !strings.Contains(text.String(), want) {
		t.Errorf("text plan lacks %q:\n%s", want, text.String())
	}

	e.emu.ResetStats()
	e.run(false)
	var put string
	for _, l := range e.emu.RequestLog() {
		if l.Method == "PUT" && strings.EqualFold(l.Path, id) {
			put = l.Query
		}
	}
	if !strings.Contains(put, "api-version=2024-04-02-preview") {
		t.Errorf("the emulator saw the cluster's PUT with query %q, want api-version=2024-04-02-preview", put)
	}
	res := e.resource("team-a", "containerservice.azure.com", "ManagedCluster", "aks")
	if res.APIVersion != "2024-04-02-preview" || res.Ready.Status != record.StatusTrue {
		t.Errorf("state: api-version %s, ready %+v", res.APIVersion, res.Ready)
	}
}
