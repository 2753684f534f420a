package planner_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// pendingRepo is the onboarding flow from one commit: the platform's
// identity exports its clientId into team-a-vars, team-a's credential reads
// it through substitution (not there yet: a pending value), and team-a's
// resources sign in with that credential.
var pendingRepo = map[string]string{
	"platform/identity.yaml": `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: platform-rg, namespace: platform}
spec: {location: westeurope}
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata: {name: team-a-identity, namespace: platform}
spec:
  location: westeurope
  owner: {name: platform-rg}
  operatorSpec:
    configMapExpressions:
      - {name: team-a-vars, key: TEAM_A_CLIENT_ID, value: self.status.clientId}
`,
	"team-a/credential.yaml": `apiVersion: v1
kind: Secret
metadata: {name: aso-credential, namespace: team-a}
stringData:
  AZURE_SUBSCRIPTION_ID: "` + sub + `"
  AZURE_TENANT_ID: "00000000-0000-0000-0000-000000000001"
  AZURE_CLIENT_ID: "` + manifest.PendingValue("TEAM_A_CLIENT_ID") + `"
`,
	"team-a/rg.yaml": `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: team-a-rg, namespace: team-a}
spec: {location: westeurope}
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata: {name: teamastore, namespace: team-a}
spec:
  location: westeurope
  owner: {name: team-a-rg}
  kind: StorageV2
  sku: {name: Standard_LRS}
`,
	// Not in team-a: its own credential is the global one, but it names a
	// deferred resource group by reference... of its own namespace only,
	// so it waits for nothing.
	"platform/other.yaml": `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: other-rg, namespace: platform, annotations: {note: "` + manifest.PendingValue("LATER") + `"}}
spec: {location: westeurope}
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata: {name: otherstore, namespace: platform}
spec:
  location: westeurope
  owner: {name: other-rg}
  kind: StorageV2
  sku: {name: Standard_LRS}
`,
}

func pendingSnapshot(t *testing.T, external ...manifest.External) *manifest.Snapshot {
	snap := snapshot(t, pendingRepo)
	snap.External = external
	return snap
}

var teamAVars = manifest.External{Kind: manifest.ExternalPendingConfigMap, User: "platform/team-a-vars", Name: "team-a-vars", URL: "--substitute-from"}

func TestDeferredKnownAfterApply(t *testing.T) {
	g, err := planner.Build(pendingSnapshot(t, teamAVars), planner.Options{SubscriptionID: sub})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range g.Deferred {
		got = append(got, d.ID()+": "+d.Reason)
	}
	want := []string{
		"platform/ResourceGroup/other-rg: ${LATER} from config map platform/team-a-vars, exported by platform/UserAssignedIdentity/team-a-identity",
		"platform/StorageAccount/otherstore: waits for its owner platform/ResourceGroup/other-rg",
		"team-a/ResourceGroup/team-a-rg: waits for its credential secret team-a/aso-credential (${TEAM_A_CLIENT_ID} from config map platform/team-a-vars, exported by platform/UserAssignedIdentity/team-a-identity)",
		"team-a/StorageAccount/teamastore: waits for its owner team-a/ResourceGroup/team-a-rg",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deferred (-want +got):\n%s", diff)
	}
	var planned []string
	for _, n := range g.Nodes {
		planned = append(planned, n.ID())
	}
	if diff := cmp.Diff([]string{"platform/ResourceGroup/platform-rg", "platform/UserAssignedIdentity/team-a-identity"}, planned); diff != "" {
		t.Errorf("planned now (-want +got):\n%s", diff)
	}

	// What was applied before is neither deleted nor touched meanwhile.
	prior := map[string]record.Resource{}
	for _, d := range g.Deferred {
		prior[d.Key()] = record.Resource{Namespace: d.Namespace, Group: d.Group, Kind: d.Kind, Name: d.Name,
			ARMID: "/subscriptions/" + sub + "/resourceGroups/x", APIVersion: "2020-06-01"}
	}
	// A group moved from namespace "old" into team-a, whose credential is
	// not known yet, keeps its azureName: its old key's deletion waits for
	// the deferred groups (a delete would take the moved group from Azure).
	// A kind with nothing deferred is deleted as usual.
	prior[planner.Key("old", "resources.azure.com", "ResourceGroup", "team-a-rg")] = record.Resource{Namespace: "old",
		Group: "resources.azure.com", Kind: "ResourceGroup", Name: "team-a-rg", ARMID: "/subscriptions/" + sub + "/resourceGroups/team-a-rg", APIVersion: "2020-06-01"}
	prior[planner.Key("old", "keyvault.azure.com", "Vault", "gone")] = record.Resource{Namespace: "old",
		Group: "keyvault.azure.com", Kind: "Vault", Name: "gone", ARMID: "/subscriptions/" + sub + "/resourceGroups/x/providers/Microsoft.KeyVault/vaults/gone", APIVersion: "2023-07-01"}
	p, err := g.Plan(planner.Input{Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, r := range p.Resources {
		if r.Action == planner.Delete || r.Action == planner.Detach {
			deleted = append(deleted, r.ID())
		}
	}
	if diff := cmp.Diff([]string{"old/Vault/gone"}, deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if len(p.Deferred) != 5 || !p.HasChanges() || p.Deferred[0].ID() != "old/ResourceGroup/team-a-rg" ||
		!strings.Contains(p.Deferred[0].Reason, "its deletion waits") {
		t.Errorf("plan: %d deferred (first %+v), changes %v", len(p.Deferred), p.Deferred[0], p.HasChanges())
	}
	if len(g.Deferred) != 4 {
		t.Errorf("the plan changed the graph's deferred list: %d", len(g.Deferred))
	}
	var text bytes.Buffer
	if err := planner.RenderText(&text, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`# team-a/StorageAccount/teamastore is known after apply: waits for its owner team-a/ResourceGroup/team-a-rg`,
		`~ storage.azure.com StorageAccount "team-a/teamastore" (known after apply) {`,
		`5 known after apply (planned in this run once their values exist).`,
	} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text plan lacks %q:\n%s", s, text.String())
		}
	}
	if strings.Contains(text.String(), "⟦") {
		t.Errorf("the pending marker leaks into the plan:\n%s", text.String())
	}
	var md bytes.Buffer
	if err := planner.RenderMarkdown(&md, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| ~ known after apply | `team-a/ResourceGroup/team-a-rg` |") {
		t.Errorf("markdown plan lacks the deferred row:\n%s", md.String())
	}
}

// A pending source that no resource of the revision exports is the error a
// missing substitute-from source always was.
func TestPendingSourceWithoutProducer(t *testing.T) {
	missing := manifest.External{Kind: manifest.ExternalPendingConfigMap, User: "platform/nobody-writes-this", Name: "nobody-writes-this",
		URL: "Flux Kustomization flux-system/apps (clusters/apps.yaml)"}
	_, err := planner.Build(pendingSnapshot(t, teamAVars, missing), planner.Options{SubscriptionID: sub})
	l := diag.AsList(err)
	if len(l) != 1 {
		t.Fatalf("want one error, got %v", err)
	}
	for _, s := range []string{"platform/nobody-writes-this", "flux-system/apps", "optional"} {
		if !strings.Contains(l[0].Error(), s) {
			t.Errorf("error %q lacks %q", l[0].Error(), s)
		}
	}
	// A Secret is not a ConfigMap.
	wrongKind := teamAVars
	wrongKind.Kind = manifest.ExternalPendingSecret
	if _, err := planner.Build(pendingSnapshot(t, wrongKind), planner.Options{SubscriptionID: sub}); err == nil {
		t.Error("a pending Secret produced only as a ConfigMap was accepted")
	}
}
