package executor_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/executor"
)

const identity = `apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: team-identity
  namespace: team
  labels:
    team: a
spec:
  location: westeurope
  owner:
    name: rg
  operatorSpec:
    configMaps:
      principalId: {name: identity-settings, key: principalId}
      clientId: {name: identity-settings, key: clientId}
      tenantId: {name: identity-settings, key: tenantId}
    secrets:
      clientId: {name: identity-secret, key: AZURE_CLIENT_ID}
      subscriptionId: {name: identity-secret, key: AZURE_SUBSCRIPTION_ID}
      tenantId: {name: identity-secret, key: AZURE_TENANT_ID}
    configMapExpressions:
      - name: identity-expr
        key: summary
        value: self.metadata.name + "/" + self.spec.azureName + "@" + self.spec.location + ":" + self.status.clientId
      - name: identity-expr
        value: '{"team": self.metadata.labels.team, "tenant": self.status.tenantId}'
    secretExpressions:
      - name: identity-secret-expr
        key: env
        value: '"AZURE_CLIENT_ID=" + self.status.clientId'`

const assignment = `apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: team-reader
  namespace: team
spec:
  owner:
    group: resources.azure.com
    kind: ResourceGroup
    name: rg
  principalIdFromConfig:
    name: identity-settings
    key: principalId
  principalType: ServicePrincipal
  roleDefinitionReference:
    wellKnownName: Reader`

// TestIdentityExportsFeedRoleAssignment is the onboarding chain: the
// identity's principalId, known only after apply, feeds the RoleAssignment
// in the same run, and the role's well-known name is resolved.
func TestIdentityExportsFeedRoleAssignment(t *testing.T) {
	m := newEmu(t)
	p := m.plan(t, rg, identity, assignment)
	ra := p.Get(strings.Join([]string{"team", "authorization.azure.com", "RoleAssignment", "team-reader"}, "/"))
	if ra == nil {
		for _, r := range p.Resources {
			if r.Name == "team-reader" {
				ra = r
			}
		}
	}
	if ra == nil || len(ra.KnownAfterApply) == 0 {
		t.Fatalf("plan: want the assignment's principalId known after apply, got %+v", ra)
	}

	res := m.apply(t, rg, identity, assignment)
	id, ar := res["team-identity"], res["team-reader"]
	mustOK(t, id)
	mustOK(t, ar)

	var uai struct {
		Properties struct{ PrincipalID, ClientID, TenantID string }
	}
	if err := json.Unmarshal(id.Response, &uai); err != nil {
		t.Fatal(err)
	}
	if uai.Properties.PrincipalID == "" || uai.Properties.ClientID == "" {
		t.Fatalf("emulator returned no identity ids: %s", id.Response)
	}
	wantOut := map[string]map[string]string{
		"identity-settings": {"principalId": uai.Properties.PrincipalID, "clientId": uai.Properties.ClientID, "tenantId": uai.Properties.TenantID},
		"identity-expr": {
			"summary": "team-identity/team-identity@westeurope:" + uai.Properties.ClientID,
			"team":    "a", "tenant": uai.Properties.TenantID,
		},
	}
	if d := cmp.Diff(wantOut, id.Outputs); d != "" {
		t.Errorf("config maps (-want +got):\n%s", d)
	}
	wantSec := map[string]map[string]string{
		"identity-secret":      {"AZURE_CLIENT_ID": uai.Properties.ClientID, "AZURE_SUBSCRIPTION_ID": m.sub, "AZURE_TENANT_ID": uai.Properties.TenantID},
		"identity-secret-expr": {"env": "AZURE_CLIENT_ID=" + uai.Properties.ClientID},
	}
	if d := cmp.Diff(wantSec, id.Secrets); d != "" {
		t.Errorf("secrets (-want +got):\n%s", d)
	}

	var body struct {
		Properties struct{ PrincipalID, RoleDefinitionID string }
	}
	if err := json.Unmarshal(ar.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Properties.PrincipalID != uai.Properties.PrincipalID {
		t.Errorf("assignment principalId %q, want the identity's %q", body.Properties.PrincipalID, uai.Properties.PrincipalID)
	}
	// Reader's built-in GUID.
	wantRole := "/subscriptions/" + m.sub + "/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7"
	if body.Properties.RoleDefinitionID != wantRole {
		t.Errorf("roleDefinitionId %q, want %q", body.Properties.RoleDefinitionID, wantRole)
	}
}

func TestStorageAccountSecretsUseListKeys(t *testing.T) {
	m := newEmu(t)
	sa := `apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: teamstore
  namespace: team
spec:
  location: westeurope
  kind: StorageV2
  sku: {name: Standard_LRS}
  owner: {name: rg}
  operatorSpec:
    configMaps:
      blobEndpoint: {name: store, key: blob}
      dfsEndpoint: {name: store, key: dfs}
    secrets:
      key1: {name: store-keys, key: key1}
      key2: {name: store-keys, key: key2}
      queueEndpoint: {name: store-keys, key: queue}
    secretExpressions:
      - name: store-conn
        key: connectionString
        value: '"DefaultEndpointsProtocol=https;AccountName=" + self.spec.azureName + ";AccountKey=" + secret.key1 + ";BlobEndpoint=" + self.status.primaryEndpoints.blob'`
	res := m.apply(t, rg, sa)
	rr := res["teamstore"]
	mustOK(t, rr)
	calls := m.requests("/storageAccounts/teamstore/listKeys")
	if len(calls) != 1 {
		t.Fatalf("want one listKeys call (shared by secrets and expressions), got %d", len(calls))
	}
	if calls[0].Method != "POST" || !strings.Contains(calls[0].Query, "api-version=2024-01-01") {
		t.Errorf("listKeys call %s ?%s, want POST with the SDK's api-version 2024-01-01", calls[0].Method, calls[0].Query)
	}
	keys := rr.Secrets["store-keys"]
	if keys["key1"] == "" || keys["key2"] == "" || keys["key1"] == keys["key2"] {
		t.Errorf("keys %v", keys)
	}
	if want := "https://teamstore.queue.core.windows.net/"; keys["queue"] != want {
		t.Errorf("queue endpoint %q, want %q", keys["queue"], want)
	}
	if d := cmp.Diff(map[string]map[string]string{"store": {"blob": "https://teamstore.blob.core.windows.net/", "dfs": "https://teamstore.dfs.core.windows.net/"}}, rr.Outputs); d != "" {
		t.Errorf("config maps (-want +got):\n%s", d)
	}
	want := "DefaultEndpointsProtocol=https;AccountName=teamstore;AccountKey=" + keys["key1"] + ";BlobEndpoint=https://teamstore.blob.core.windows.net/"
	if got := rr.Secrets["store-conn"]["connectionString"]; got != want {
		t.Errorf("connection string %q, want %q", got, want)
	}
}

const sbNamespace = `apiVersion: servicebus.azure.com/v1api20240101
kind: Namespace
metadata:
  name: teamsb
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  sku: {name: Standard}`

func TestServiceBusAuthorizationRuleSecrets(t *testing.T) {
	m := newEmu(t)
	rule := `apiVersion: servicebus.azure.com/v1api20240101
kind: NamespacesAuthorizationRule
metadata:
  name: sender
  namespace: team
spec:
  owner: {name: teamsb}
  rights: [Send]
  operatorSpec:
    secrets:
      primaryKey: {name: sb, key: primaryKey}
      primaryConnectionString: {name: sb, key: primaryConnectionString}
      secondaryConnectionString: {name: sb, key: secondaryConnectionString}`
	res := m.apply(t, rg, sbNamespace, rule)
	rr := res["sender"]
	mustOK(t, rr)
	calls := m.requests("/listKeys")
	if len(calls) != 1 {
		t.Fatalf("want one listKeys call, got %+v", calls)
	}
	// The path and api-version ASO's SDK client sends (conformance set servicebus).
	if want := "/subscriptions/" + m.sub + "/resourceGroups/rg/providers/Microsoft.ServiceBus/namespaces/teamsb/AuthorizationRules/sender/listKeys"; calls[0].Path != want || calls[0].Query != "api-version=2021-11-01" {
		t.Errorf("call %s?%s, want %s?api-version=2021-11-01", calls[0].Path, calls[0].Query, want)
	}
	s := rr.Secrets["sb"]
	if s["primaryKey"] == "" || !strings.HasPrefix(s["primaryConnectionString"], "Endpoint=sb://teamsb.servicebus.windows.net/;SharedAccessKeyName=sender;SharedAccessKey="+s["primaryKey"]) ||
		s["secondaryConnectionString"] == "" || s["secondaryConnectionString"] == s["primaryConnectionString"] {
		t.Errorf("secrets %v", s)
	}
}

func TestServiceBusNamespaceEndpointSecret(t *testing.T) {
	m := newEmu(t)
	ns := sbNamespace + `
  operatorSpec:
    secrets:
      endpoint: {name: sb, key: endpoint}`
	rr := m.apply(t, rg, ns)["teamsb"]
	mustOK(t, rr)
	if got, want := rr.Secrets["sb"]["endpoint"], "https://teamsb.servicebus.windows.net:443/"; got != want {
		t.Errorf("endpoint %q, want %q", got, want)
	}
	if n := len(m.requests("listKeys")); n != 0 {
		t.Errorf("the endpoint needs no listKeys; got %d calls", n)
	}
}

func TestExportFailures(t *testing.T) {
	m := newEmu(t)
	bad := `apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: bad
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  operatorSpec:
    configMaps:
      principalId: {name: ok, key: principalId}
    configMapExpressions:
      - name: out
        key: n
        value: self.status.noSuchField
      - name: out
        key: m
        value: '{"a": "b"}'
      - name: out
        value: '"just a string"'
      - name: out
        key: leak
        value: secret.clientId`
	rr := m.apply(t, rg, bad)["bad"]
	if rr.Outcome != executor.Failed || rr.Ready.Reason != "FailedWritingAdditionalKubernetesObjects" || rr.Ready.Severity != "Error" {
		t.Fatalf("outcome %s ready %+v", rr.Outcome, rr.Ready)
	}
	for _, want := range []string{"noSuchField", "returned a map; with a key", "returned a string; without a key", "only secretExpressions may"} {
		if !strings.Contains(rr.Ready.Message, want) {
			t.Errorf("message %q lacks %q", rr.Ready.Message, want)
		}
	}
	// The exports that worked are still written.
	if rr.Outputs["ok"]["principalId"] == "" {
		t.Errorf("outputs %v", rr.Outputs)
	}
}

// TestObservedResourceExports: reconcile-policy skip only reads the resource,
// and its exports are still written from what ARM holds.
func TestObservedResourceExports(t *testing.T) {
	m := newEmu(t)
	mustOK(t, m.apply(t, rg, identity)["team-identity"])
	skipped := strings.Replace(identity, "  labels:\n", "  annotations:\n    serviceoperator.azure.com/reconcile-policy: skip\n  labels:\n", 1)
	rr := m.apply(t, rg, skipped)["team-identity"]
	if rr.Outcome != executor.Observed {
		t.Fatalf("outcome %s (%v), want observed", rr.Outcome, rr.Err)
	}
	var uai struct {
		Properties struct{ PrincipalID string }
	}
	if err := json.Unmarshal(rr.Response, &uai); err != nil {
		t.Fatal(err)
	}
	if got := rr.Outputs["identity-settings"]["principalId"]; got == "" || got != uai.Properties.PrincipalID {
		t.Errorf("principalId export %q, want %q", got, uai.Properties.PrincipalID)
	}
}
