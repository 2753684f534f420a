package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// End-to-end tests of ASO's kind hooks (aso's registry) through the executor against the emulator, which refuses
// what ARM refuses (emulator/hooks*.go).

// skipPolicy marks a manifest reconcile-policy skip: the executor only reads it (an owner that is there already).
func skipPolicy(doc string) string {
	return strings.Replace(doc, "metadata:\n", "metadata:\n  annotations: {serviceoperator.azure.com/reconcile-policy: skip}\n", 1)
}

// puts counts the PUTs the emulator saw to a path.
func (m *emu) puts(path string) int {
	n := 0
	for _, l := range m.e.RequestLog() {
		if l.Method == http.MethodPut && strings.EqualFold(l.Path, path) {
			n++
		}
	}
	return n
}

// mustWait checks that a resource was held back by a hook: Failed with the reason, a Warning (retried), message.
func mustWait(t *testing.T, rr *executor.ResourceResult, reason, msg string) {
	t.Helper()
	if rr == nil {
		t.Fatal("no result")
	}
	if rr.Outcome != executor.Failed || rr.Ready.Reason != reason || rr.Ready.Severity != record.SeverityWarning || rr.Ready.Message != msg {
		t.Fatalf("%s: outcome %s, ready %+v; want %s %q", rr.Key, rr.Outcome, rr.Ready, reason, msg)
	}
}

func setProps(t *testing.T, m *emu, id string, props map[string]any) {
	t.Helper()
	if err := m.e.SetResourceProperties(id, props); err != nil {
		t.Fatal(err)
	}
}

const aksDoc = `apiVersion: containerservice.azure.com/v1api20240901
kind: ManagedCluster
metadata:
  name: aks
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  dnsPrefix: aks
  identity: {type: SystemAssigned}
  agentPoolProfiles:
  - {name: system, count: 1, vmSize: Standard_DS2_v2, mode: System}`

const poolDoc = `apiVersion: containerservice.azure.com/v1api20240901
kind: ManagedClustersAgentPool
metadata:
  name: pool
  namespace: team
spec:
  owner: {name: aks}
  azureName: pool1
  count: 1
  vmSize: Standard_DS2_v2
  mode: User`

func TestManagedClusterWaitsWhileUpdating(t *testing.T) {
	m := newEmu(t)
	res := m.apply(t, rg, aksDoc, poolDoc)
	mustOK(t, res["aks"])
	mustOK(t, res["pool"])
	aks := res["aks"].Resource.ARMID

	// The cluster is upgrading: ASO's preReconcileCheck holds its PUT, and the agent pool's owner check holds the
	// pool's (the cluster is read, not written: reconcile-policy skip).
	setProps(t, m, aks, map[string]any{"provisioningState": "Updating"})
	before := m.puts(aks)
	rr := m.apply(t, rg, aksDoc)["aks"]
	mustWait(t, rr, "ReconciliationBlocked", `Managed cluster is in provisioning state "Updating"`)
	if m.puts(aks) != before {
		t.Error("a PUT was sent to a cluster that refuses it")
	}
	res = m.apply(t, rg, skipPolicy(aksDoc), poolDoc)
	mustOK(t, res["aks"])
	mustWait(t, res["pool"], "ReconciliationBlocked", `Managed cluster "aks" is in provisioning state "Updating"`)

	// The pool itself upgrading.
	setProps(t, m, aks, map[string]any{"provisioningState": "Succeeded"})
	setProps(t, m, aks+"/agentPools/pool1", map[string]any{"provisioningState": "Upgrading"})
	mustWait(t, m.apply(t, rg, skipPolicy(aksDoc), poolDoc)["pool"], "ReconciliationBlocked", `Managed cluster agent pool is in provisioning state "Upgrading"`)

	// Done: the next run applies.
	setProps(t, m, aks+"/agentPools/pool1", map[string]any{"provisioningState": "Succeeded"})
	res = m.apply(t, rg, aksDoc, poolDoc)
	mustOK(t, res["aks"])
	mustOK(t, res["pool"])
}

const pgDoc = `apiVersion: dbforpostgresql.azure.com/v1api20240801
kind: FlexibleServer
metadata:
  name: pg
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  version: "16"
  sku: {name: Standard_B1ms, tier: Burstable}
  storage: {storageSizeGB: 32}`

const pgDBDoc = `apiVersion: dbforpostgresql.azure.com/v1api20240801
kind: FlexibleServersDatabase
metadata:
  name: appdb
  namespace: team
spec:
  owner: {name: pg}
  charset: UTF8`

const pgFWDoc = `apiVersion: dbforpostgresql.azure.com/v1api20240801
kind: FlexibleServersFirewallRule
metadata:
  name: all
  namespace: team
spec:
  owner: {name: pg}
  startIpAddress: 0.0.0.0
  endIpAddress: 0.0.0.0`

func TestFlexibleServerWaitsWhileStopped(t *testing.T) {
	m := newEmu(t)
	res := m.apply(t, rg, pgDoc, pgDBDoc, pgFWDoc)
	for _, n := range []string{"pg", "appdb", "all"} {
		mustOK(t, res[n])
	}
	pg := res["pg"].Resource.ARMID
	setProps(t, m, pg, map[string]any{"state": "Stopped"})
	mustWait(t, m.apply(t, rg, pgDoc)["pg"], "ReconciliationBlocked", `Flexible Server is in state "Stopped"`)
	res = m.apply(t, rg, skipPolicy(pgDoc), pgDBDoc, pgFWDoc)
	mustWait(t, res["appdb"], "ReconciliationBlocked", `Owning FlexibleServer is in state "Stopped"`)
	mustWait(t, res["all"], "ReconciliationBlocked", `Owning FlexibleServer is in state "Stopped"`)
	if n := m.puts(pg + "/databases/appdb"); n != 1 {
		t.Errorf("PUTs of the database: %d, want only the first", n)
	}
	setProps(t, m, pg, map[string]any{"state": "Ready"})
	res = m.apply(t, rg, pgDoc, pgDBDoc, pgFWDoc)
	for _, n := range []string{"pg", "appdb", "all"} {
		mustOK(t, res[n])
	}
}

const cosmosDoc = `apiVersion: documentdb.azure.com/v1api20240815
kind: DatabaseAccount
metadata:
  name: cosmos
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  databaseAccountOfferType: Standard
  locations:
  - {locationName: westeurope}`

func TestDatabaseAccountWaitsWhileDeleting(t *testing.T) {
	m := newEmu(t)
	rr := m.apply(t, rg, cosmosDoc)["cosmos"]
	mustOK(t, rr)
	setProps(t, m, rr.Resource.ARMID, map[string]any{"provisioningState": "Deleting"})
	mustWait(t, m.apply(t, rg, cosmosDoc)["cosmos"], "ReconciliationBlocked", "reconcile blocked while account is at status deleting")
}

const kustoDoc = `apiVersion: kusto.azure.com/v1api20240413
kind: Cluster
metadata:
  name: kc
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  sku: {name: Dev(No SLA)_Standard_E2a_v4, tier: Basic}`

const kustoDBDoc = `apiVersion: kusto.azure.com/v1api20240413
kind: Database
metadata:
  name: kdb
  namespace: team
spec:
  owner: {name: kc}
  readWriteDatabase: {kind: ReadWrite, location: westeurope}`

func TestKustoClusterWaitsWhileCreating(t *testing.T) {
	m := newEmu(t)
	res := m.apply(t, rg, kustoDoc, kustoDBDoc)
	mustOK(t, res["kc"])
	mustOK(t, res["kdb"])
	kc := res["kc"].Resource.ARMID
	setProps(t, m, kc, map[string]any{"provisioningState": "Creating"})
	mustWait(t, m.apply(t, rg, kustoDoc)["kc"], "ReconciliationBlocked", `Cluster is in provisioning state "Creating"`)
	mustWait(t, m.apply(t, rg, skipPolicy(kustoDoc), kustoDBDoc)["kdb"], "ReconciliationBlocked", `Owning cluster is in provisioning state "Creating"`)
}

const peVNetDoc = `apiVersion: network.azure.com/v1api20240301
kind: VirtualNetwork
metadata:
  name: vnet
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  addressSpace: {addressPrefixes: [10.0.0.0/16]}`

const peDoc = `apiVersion: network.azure.com/v1api20240301
kind: PrivateEndpoint
metadata:
  name: pe
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  subnet:
    reference: {group: network.azure.com, kind: VirtualNetworksSubnet, name: apps}
  manualPrivateLinkServiceConnections:
  - name: to-sa
    groupIds: [blob]
    privateLinkServiceReference:
      armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/other/providers/Microsoft.Storage/storageAccounts/sa`

func TestPrivateEndpointWaitsForApproval(t *testing.T) {
	m := newEmu(t)
	res := m.apply(t, rg, peVNetDoc, subnetDoc, peDoc)
	rr := res["pe"]
	// The PUT succeeded, the connection waits for the storage account's owner.
	id := rr.Resource.ARMID + "/manualPrivateLinkServiceConnections/to-sa"
	mustWait(t, rr, "PostReconciliationFailure", fmt.Sprintf("Private connection(s) '[%q]' to the PrivateEndpoint requires approval", id))
	if rr.Hash == "" || rr.Response == nil {
		t.Error("the PUT's hash and answer are kept: the PUT itself succeeded")
	}
	if err := m.e.SetPrivateEndpointConnectionStatus(rr.Resource.ARMID, "to-sa", "Approved"); err != nil {
		t.Fatal(err)
	}
	mustOK(t, m.apply(t, rg, peVNetDoc, subnetDoc, peDoc)["pe"])
}

func TestSubnetStatusDropsManyIPConfigurations(t *testing.T) {
	m := newEmu(t)
	res := m.apply(t, rg, peVNetDoc, subnetDoc)
	mustOK(t, res["apps"])
	ips := make([]any, 2001)
	for i := range ips {
		ips[i] = map[string]any{"id": fmt.Sprintf("/nic%d/ipConfigurations/ip", i)}
	}
	setProps(t, m, res["apps"].Resource.ARMID, map[string]any{"ipConfigurations": ips})
	rr := m.apply(t, rg, peVNetDoc, subnetDoc)["apps"]
	mustOK(t, rr)
	if strings.Contains(string(rr.Response), "ipConfigurations") || !strings.Contains(string(rr.Response), "10.0.1.0/24") {
		t.Errorf("status keeps 2001 ipConfigurations: %.200s", rr.Response)
	}
	setProps(t, m, res["apps"].Resource.ARMID, map[string]any{"ipConfigurations": ips[:3]})
	if rr := m.apply(t, rg, peVNetDoc, subnetDoc)["apps"]; !strings.Contains(string(rr.Response), "ipConfigurations") {
		t.Errorf("a few ipConfigurations are kept: %.200s", rr.Response)
	}
}

const backupVaultDoc = `apiVersion: dataprotection.azure.com/v1api20231101
kind: BackupVault
metadata:
  name: bv
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  properties:
    storageSettings:
    - {datastoreType: VaultStore, type: LocallyRedundant}`

const backupInstanceDoc = `apiVersion: dataprotection.azure.com/v1api20231101
kind: BackupVaultsBackupInstance
metadata:
  name: disk
  namespace: team
spec:
  owner: {name: bv}
  properties:
    objectType: BackupInstance
    friendlyName: disk
    dataSourceInfo:
      objectType: Datasource
      datasourceType: Microsoft.Compute/disks
      resourceReference:
        armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/disks/d
    policyInfo:
      policyReference:
        armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.DataProtection/backupVaults/bv/backupPolicies/p`

func TestBackupInstanceWaitsForProtection(t *testing.T) {
	m := newEmu(t)
	res := m.apply(t, rg, backupVaultDoc, backupInstanceDoc)
	mustOK(t, res["disk"])
	id := res["disk"].Resource.ARMID
	setProps(t, m, id, map[string]any{"protectionStatus": map[string]any{"status": "ConfiguringProtection"}})
	mustWait(t, m.apply(t, rg, backupVaultDoc, backupInstanceDoc)["disk"], "PostReconciliationFailure", "Backup Instance is in non terminal state")
	if got := m.calls(id + "/sync"); len(got) != 0 {
		t.Errorf("sync without a user error: %v", got)
	}
	// A protection error caused by the user: ASO asks Azure to sync the instance, and waits.
	setProps(t, m, id, map[string]any{"protectionStatus": map[string]any{"status": "ProtectionError", "errorDetails": map[string]any{"code": "UserErrorMissingPermissions"}}})
	mustWait(t, m.apply(t, rg, backupVaultDoc, backupInstanceDoc)["disk"], "PostReconciliationFailure", "Backup Instance is in non terminal state")
	if got := m.calls(id + "/sync?api-version=2023-11-01"); len(got) != 1 || !strings.HasPrefix(got[0], "POST ") {
		t.Errorf("sync calls %v", got)
	}
	mustOK(t, m.apply(t, rg, backupVaultDoc, backupInstanceDoc)["disk"])
}

// deletePlan is a plan deleting one resource.
func (m *emu) deletePlan(t *testing.T, group, kind, name, armID, apiVersion string) *executor.ResourceResult {
	t.Helper()
	p := &planner.Plan{Revision: "test", Resources: []*planner.Resource{{Namespace: "team", Group: group, Kind: kind, Name: name,
		Action: planner.Delete, ARMID: armID, APIVersion: apiVersion, Credential: "global"}}}
	ex := executor.New(oneClient{m.cli}, executor.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	res, err := ex.Apply(context.Background(), p, planner.Values{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Resources[0]
}

func TestProductDeleteTakesItsSubscriptions(t *testing.T) {
	m := newEmu(t)
	ctx := context.Background()
	svc := "/subscriptions/" + m.sub + "/resourceGroups/rg/providers/Microsoft.ApiManagement/service/apim"
	mustOK(t, m.apply(t, rg)["rg"])
	for _, put := range []struct{ id, body string }{
		{svc, `{"location":"westeurope","sku":{"name":"Developer","capacity":1},"properties":{"publisherEmail":"a@b.c","publisherName":"p"}}`},
		{svc + "/products/starter", `{"properties":{"displayName":"Starter"}}`},
		{svc + "/subscriptions/s1", `{"properties":{"displayName":"s1","scope":"/products/starter"}}`},
	} {
		if _, err := m.cli.Put(ctx, put.id, "2022-08-01", []byte(put.body)); err != nil {
			t.Fatal(err)
		}
	}
	// A plain DELETE is refused while the product has subscriptions; ASO's custom delete says deleteSubscriptions.
	if err := m.cli.Delete(ctx, svc+"/products/starter", "2022-08-01"); err == nil || !strings.Contains(err.Error(), "ValidationError") {
		t.Fatalf("plain DELETE: %v", err)
	}
	rr := m.deletePlan(t, "apimanagement.azure.com", "Product", "starter", svc+"/products/starter", "2024-05-01")
	if rr.Outcome != executor.Deleted {
		t.Fatalf("product delete: %s %+v", rr.Outcome, rr.Ready)
	}
	got := m.calls("/products/starter?")
	if len(got) < 2 || !strings.HasPrefix(got[len(got)-2], "DELETE ") || !strings.Contains(got[len(got)-2], "deleteSubscriptions=true") {
		t.Errorf("calls %v", got)
	}
	if _, err := m.cli.Get(ctx, svc+"/subscriptions/s1", "2022-08-01"); err == nil {
		t.Error("the product's subscription survived")
	}
}

const aliasDoc = `apiVersion: subscription.azure.com/v1api20211001
kind: Alias
metadata:
  name: team-sub
  namespace: team
spec:
  properties:
    displayName: Team
    workload: Production
    billingScope: /providers/Microsoft.Billing/billingAccounts/1/enrollmentAccounts/2`

func TestAliasCreatesThenCancelsItsSubscription(t *testing.T) {
	m := newEmu(t)
	// Aliases live at the tenant root, and so does the subscription they create: the platform principal owns "/".
	sp, ok := m.e.ServicePrincipalByName("platform")
	if !ok {
		t.Fatal("no platform principal")
	}
	if err := m.e.AssignRole(sp.ObjectID, "Owner", "/"); err != nil {
		t.Fatal(err)
	}
	rr := m.apply(t, aliasDoc)["team-sub"]
	mustOK(t, rr)
	var alias struct {
		Properties struct{ SubscriptionID string } `json:"properties"`
	}
	if err := json.Unmarshal(rr.Response, &alias); err != nil || alias.Properties.SubscriptionID == "" {
		t.Fatalf("alias answer %s", rr.Response)
	}
	sub := alias.Properties.SubscriptionID
	if s := m.e.SubscriptionState(sub); s != "Enabled" {
		t.Fatalf("new subscription %s", s)
	}
	del := m.deletePlan(t, "subscription.azure.com", "Alias", "team-sub", rr.Resource.ARMID, rr.Resource.APIVersion)
	if del.Outcome != executor.Deleted {
		t.Fatalf("alias delete: %s %+v", del.Outcome, del.Ready)
	}
	if s := m.e.SubscriptionState(sub); s != "Disabled" {
		t.Errorf("subscription after the alias's delete: %s, want Disabled (cancelled)", s)
	}
	if got := m.calls("/subscriptions/" + sub + "/providers/Microsoft.Subscription/cancel?api-version=2021-10-01"); len(got) != 1 {
		t.Errorf("cancel calls %v", got)
	}
	if _, err := m.cli.Get(context.Background(), rr.Resource.ARMID, rr.Resource.APIVersion); err == nil {
		t.Error("the alias survived its delete")
	}
}

const sqlServerDoc = `apiVersion: sql.azure.com/v1api20211101
kind: Server
metadata:
  name: sqlsrv
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  administratorLogin: admin`

const rulesetDoc = `apiVersion: network.azure.com/v1api20220701
kind: DnsForwardingRuleset
metadata:
  name: rules
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  dnsResolverOutboundEndpoints:
  - reference:
      armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/dnsResolvers/r/outboundEndpoints/o`

func TestErrorClassificationPerKind(t *testing.T) {
	m := newEmu(t)
	m.e.SetFaults(emulator.Faults{ProvisioningFailures: []emulator.ProvisioningFailure{
		{Match: "/servers/sqlsrv", Code: "PasswordNotComplex", Message: "The password is not complex enough."},
		{Match: "/dnsForwardingRulesets/rules", Code: "InvalidParameter", Message: "The outbound endpoint o was not found."},
		{Match: "/storageAccounts/plainsa", Code: "InvalidParameter", Message: "The thing was not found."},
	}})
	res := m.apply(t, rg, sqlServerDoc, rulesetDoc, plainStorageDoc)
	// sql Server: PasswordNotComplex is fatal (ASO's classifier), an Error: no retry until the manifest changes.
	if rr := res["sqlsrv"]; rr.Outcome != executor.Failed || rr.Ready.Reason != "PasswordNotComplex" || rr.Ready.Severity != record.SeverityError {
		t.Errorf("sql server: %s %+v", rr.Outcome, rr.Ready)
	}
	// DnsForwardingRuleset: any error saying "was not found" is retried (an endpoint still being created), a
	// Warning, although InvalidParameter is fatal for every other kind.
	if rr := res["rules"]; rr.Outcome != executor.Failed || rr.Ready.Reason != "InvalidParameter" || rr.Ready.Severity != record.SeverityWarning {
		t.Errorf("ruleset: %s %+v", rr.Outcome, rr.Ready)
	}
	// A kind without a classifier keeps the generic classification (InvalidParameter: fatal).
	if rr := res["plainsa"]; rr.Outcome != executor.Failed || rr.Ready.Severity != record.SeverityError {
		t.Errorf("storage account: %s %+v", rr.Outcome, rr.Ready)
	}
}

const plainStorageDoc = `apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: plainsa
  namespace: team
spec:
  location: westeurope
  kind: StorageV2
  sku: {name: Standard_LRS}
  owner: {name: rg}`
