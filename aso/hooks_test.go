package aso

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHooksCoverCatalog checks that every hook the catalog says ASO has for
// a kind is in the registry (customImport has no counterpart: gitaso has no
// asoctl import; azureGeneratedSecrets and generatedConfigMaps are exports;
// RoleAssignment's payload modifier is resolved by the planner and executor).
func TestHooksCoverCatalog(t *testing.T) {
	has := map[string]func(Hooks) bool{
		"armPayloadModifier":     func(h Hooks) bool { return h.ModifyPayload != nil },
		"preReconcileCheck":      func(h Hooks) bool { return h.PreReconcile != nil },
		"preReconcileOwnerCheck": func(h Hooks) bool { return h.PreReconcileOwner != nil },
		"postReconcileCheck":     func(h Hooks) bool { return h.PostReconcile != nil },
		"customDelete":           func(h Hooks) bool { return h.Delete != nil },
		"errorClassifier":        func(h Hooks) bool { return h.ClassifyError != nil },
		"successHandler":         func(h Hooks) bool { return h.Success != nil },
	}
	seen := map[string]bool{}
	for _, k := range Kinds() {
		for _, name := range k.Hooks {
			check, ok := has[name]
			if !ok || (name == "armPayloadModifier" && k.Kind == "RoleAssignment") {
				continue
			}
			seen[name+" "+k.Group+"/"+k.Kind] = true
			if !check(HooksFor(k.Group, k.Kind)) {
				t.Errorf("%s %s: no %s in the registry", k.Group, k.Kind, name)
			}
		}
	}
	// And nothing the catalog does not know.
	for key, h := range hooks {
		group, kind, _ := strings.Cut(key, "/")
		for name, check := range has {
			if check(*h) && !seen[name+" "+group+"/"+kind] {
				t.Errorf("%s has a %s that ASO does not", key, name)
			}
		}
	}
}

func TestPreReconcileChecks(t *testing.T) {
	state := func(field, v string) []byte {
		b, _ := json.Marshal(map[string]any{"properties": map[string]any{field: v}})
		return b
	}
	tgt := Target{OwnerName: "aks"}
	tests := []struct {
		name  string
		check func(Target, []byte) CheckResult
		in    []byte
		want  CheckResult
	}{
		{"cluster absent", managedClusterCheck, nil, proceed},
		{"cluster succeeded", managedClusterCheck, state("provisioningState", "Succeeded"), proceed},
		{"cluster failed", managedClusterCheck, state("provisioningState", "failed"), proceed},
		{"cluster updating", managedClusterCheck, state("provisioningState", "Updating"), CheckResult{Block, `Managed cluster is in provisioning state "Updating"`}},
		{"pool upgrading", agentPoolCheck, state("provisioningState", "Upgrading"), CheckResult{Block, `Managed cluster agent pool is in provisioning state "Upgrading"`}},
		{"pool canceled", agentPoolCheck, state("provisioningState", "Canceled"), proceed},
		{"pool owner starting", agentPoolOwnerCheck, state("provisioningState", "Starting"), CheckResult{Block, `Managed cluster "aks" is in provisioning state "Starting"`}},
		{"server ready", flexibleServerCheck, state("state", "Ready"), proceed},
		{"server stopped", flexibleServerCheck, state("state", "Stopped"), CheckResult{Block, `Flexible Server is in state "Stopped"`}},
		{"server updating", flexibleServerCheck, state("state", "Updating"), CheckResult{Block, `Flexible Server is in state "Updating"`}},
		{"db owner stopped", flexibleServerOwnerCheck, state("state", "Stopped"), CheckResult{Block, `Owning FlexibleServer is in state "Stopped"`}},
		{"db owner absent", flexibleServerOwnerCheck, nil, proceed},
		{"cosmos deleting", databaseAccountCheck, state("provisioningState", "deleting"), CheckResult{Block, "reconcile blocked while account is at status deleting"}},
		{"cosmos updating", databaseAccountCheck, state("provisioningState", "Updating"), proceed},
		{"kusto creating", kustoClusterCheck, state("provisioningState", "Creating"), CheckResult{Block, `Cluster is in provisioning state "Creating"`}},
		{"kusto db owner moving", kustoDatabaseOwnerCheck, state("provisioningState", "Moving"), CheckResult{Block, `Owning cluster is in provisioning state "Moving"`}},
		{"kusto db owner succeeded", kustoDatabaseOwnerCheck, state("provisioningState", "Succeeded"), proceed},
	}
	for _, tt := range tests {
		if got := tt.check(tgt, tt.in); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if r := (CheckResult{Action: Block}).Reason(); r != "ReconciliationBlocked" {
		t.Errorf("block reason %q", r)
	}
}

func TestPostReconcileChecks(t *testing.T) {
	pe := `{"id":"/x/pe","properties":{"manualPrivateLinkServiceConnections":[
		{"id":"/x/pe/manualPrivateLinkServiceConnections/a","properties":{"privateLinkServiceConnectionState":{"status":"Pending"}}},
		{"id":"/x/pe/manualPrivateLinkServiceConnections/b","properties":{"privateLinkServiceConnectionState":{"status":"Approved"}}}]}}`
	got := privateEndpointApproved(Target{}, []byte(pe))
	want := PostResult{Message: `Private connection(s) '["/x/pe/manualPrivateLinkServiceConnections/a"]' to the PrivateEndpoint requires approval`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pending private endpoint (-want +got):\n%s", diff)
	}
	if got := privateEndpointApproved(Target{}, []byte(strings.ReplaceAll(pe, "Pending", "Approved"))); !got.Ready {
		t.Errorf("approved private endpoint: %+v", got)
	}
	if got := privateEndpointApproved(Target{}, []byte(`{"properties":{"privateLinkServiceConnections":[{"id":"a","properties":{"privateLinkServiceConnectionState":{"status":"Pending"}}}]}}`)); !got.Ready {
		t.Errorf("automatic connections are not checked: %+v", got)
	}

	bi := func(status, code string) []byte {
		ps := map[string]any{"status": status}
		if code != "" {
			ps["errorDetails"] = map[string]any{"code": code}
		}
		b, _ := json.Marshal(map[string]any{"id": "/bi", "properties": map[string]any{"protectionStatus": ps}})
		return b
	}
	tgt := Target{ARMID: "/bi", APIVersion: "2023-11-01"}
	if got := backupInstanceProtected(tgt, bi("ProtectionConfigured", "")); !got.Ready {
		t.Errorf("configured: %+v", got)
	}
	if got := backupInstanceProtected(tgt, []byte(`{"id":"/bi","properties":{}}`)); !got.Ready {
		t.Errorf("no protection status: %+v", got)
	}
	if got := backupInstanceProtected(tgt, bi("ConfiguringProtection", "")); got.Ready || got.Message != "Backup Instance is in non terminal state" || got.Then != nil {
		t.Errorf("configuring: %+v", got)
	}
	got = backupInstanceProtected(tgt, bi("ProtectionError", "UserErrorMissingPermissions"))
	if got.Ready || got.Then == nil || got.Then.Path != "/bi/sync" || string(got.Then.Body) != `{"syncType":"Default"}` {
		t.Errorf("user error: %+v", got)
	}
	if got := backupInstanceProtected(tgt, bi("ProtectionError", "ServiceError")); got.Ready || got.Then != nil {
		t.Errorf("service error: %+v", got)
	}

	// A subnet's status keeps up to 2000 ipConfigurations.
	mk := func(n int) []byte {
		ips := make([]map[string]string, n)
		for i := range ips {
			ips[i] = map[string]string{"id": "ip"}
		}
		b, _ := json.Marshal(map[string]any{"name": "s", "properties": map[string]any{"addressPrefix": "10.0.0.0/24", "ipConfigurations": ips}})
		return b
	}
	if got := subnetStatusSize(Target{}, mk(2000)); !got.Ready || got.Status != nil {
		t.Errorf("2000 ipConfigurations: %+v", got.Status)
	}
	if got := subnetStatusSize(Target{}, mk(2001)); !got.Ready || string(got.Status) != `{"name":"s","properties":{"addressPrefix":"10.0.0.0/24"}}` {
		t.Errorf("2001 ipConfigurations: %s", got.Status)
	}
}

func TestClassifyError(t *testing.T) {
	tests := []struct {
		kind, code, msg string
		generic, want   Classification
	}{
		{"compute.azure.com/VirtualMachine", "OperationNotAllowed", "quota", Fatal, Retryable},
		{"compute.azure.com/VirtualMachine", "InvalidParameter", "", Fatal, Fatal},
		{"compute.azure.com/Disk", "BadRequest", "DiskAccess 'x' not found", Fatal, Retryable},
		{"compute.azure.com/Disk", "Conflict", "DiskAccess x is in failed state.", Fatal, Retryable},
		{"compute.azure.com/Disk", "BadRequest", "other", Fatal, Fatal},
		{"sql.azure.com/Server", "PasswordNotComplex", "", Retryable, Fatal},
		{"documentdb.azure.com/DatabaseAccount", "ServiceUnavailable", "We are currently experiencing high demand in this region", Retryable, Fatal},
		{"documentdb.azure.com/DatabaseAccount", "ServiceUnavailable", "try later", Retryable, Retryable},
		{"documentdb.azure.com/SqlRoleAssignment", "BadRequest", "principal was not found in the AAD tenant", Fatal, Retryable},
		{"network.azure.com/DnsZonesCNAMERecord", "BadRequest", "The referenced resource /x was not found", Fatal, Retryable},
		{"network.azure.com/DnsForwardingRuleset", "Anything", "vnet was not found", Fatal, Retryable},
		{"network.azure.com/AzureFirewall", "AzfwAddToFirewallPolicyFailed", "Failed to reference firewall policy", Fatal, Retryable},
		{"network.azure.com/NetworkWatchersFlowLog", "StorageProvisioningStateNotSucceeded", "", Fatal, Retryable},
		{"network.azure.com/VirtualNetworksSubnet", "NetcfgSubnetRangeOutsideVnet", "", Fatal, Retryable},
		{"insights.azure.com/ScheduledQueryRule", "BadRequest", "The provided credentials have insufficient access", Fatal, Retryable},
		{"cdn.azure.com/Route", "BadRequest", "after originGroup is created successfully and at least one enabled origin is created", Fatal, Retryable},
		{"storage.azure.com/StorageAccount", "BadRequest", "", Fatal, Fatal}, // no classifier
	}
	for _, tt := range tests {
		g, k, _ := strings.Cut(tt.kind, "/")
		if got := ClassifyError(g, k, CloudError{Code: tt.code, Message: tt.msg}, tt.generic); got != tt.want {
			t.Errorf("%s %s %q: %s, want %s", tt.kind, tt.code, tt.msg, got, tt.want)
		}
	}
}

func TestPlanPayloadVault(t *testing.T) {
	body := func(mode string) []byte {
		return []byte(`{"location":"westeurope","properties":{"createMode":"` + mode + `","tenantId":"t"}}`)
	}
	tests := []struct {
		mode    string
		exists  bool
		want    string
		unknown []string
	}{
		{"createOrRecover", false, `{"location":"westeurope","properties":{"createMode":"(known after apply)","tenantId":"t"}}`, []string{"/properties/createMode"}},
		{"createOrRecover", true, `{"location":"westeurope","properties":{"createMode":"default","tenantId":"t"}}`, nil},
		{"purgeThenCreate", false, `{"location":"westeurope","properties":{"createMode":"default","tenantId":"t"}}`, nil},
		{"recover", false, string(body("recover")), nil},
	}
	for _, tt := range tests {
		got, err := PlanPayload("keyvault.azure.com", "Vault", body(tt.mode), tt.exists)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.JSON) != tt.want || !cmp.Equal(got.Unknown, tt.unknown) {
			t.Errorf("%s exists=%v: %s %v", tt.mode, tt.exists, got.JSON, got.Unknown)
		}
	}
	if got, _ := PlanPayload("storage.azure.com", "StorageAccount", body("createOrRecover"), false); string(got.JSON) != string(body("createOrRecover")) {
		t.Errorf("other kinds are unchanged: %s", got.JSON)
	}
}

func TestMergeChildren(t *testing.T) {
	body := []byte(`{"location":"w","properties":{"addressSpace":{},"subnets":[{"name":"a","properties":{"x":1}}]},"tags":{}}`)
	cur := []byte(`{"properties":{"subnets":[{"name":"a","properties":{"x":2}},{"name":"b"}]}}`)
	got, n, err := MergeChildren(body, cur, "properties", "subnets")
	if err != nil || n != 1 {
		t.Fatal(n, err)
	}
	want := `{"location":"w","properties":{"addressSpace":{},"subnets":[{"name":"a","properties":{"x":1}},{"name":"b"}]},"tags":{}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// fakeARM records calls and answers from a map of paths.
type fakeARM struct {
	calls []string
	get   map[string]string // id → body; absent is a 404
}

type notFound struct{}

func (notFound) Error() string       { return "404" }
func (notFound) HTTPStatusCode() int { return http.StatusNotFound }

func (f *fakeARM) Get(_ context.Context, id, v string) ([]byte, error) {
	f.calls = append(f.calls, "GET "+id+"?"+v)
	if b, ok := f.get[id]; ok {
		return []byte(b), nil
	}
	return nil, notFound{}
}
func (f *fakeARM) Put(_ context.Context, id, v string, _ []byte) ([]byte, error) {
	f.calls = append(f.calls, "PUT "+id+"?"+v)
	return nil, nil
}
func (f *fakeARM) Delete(_ context.Context, id, v string) error {
	f.calls = append(f.calls, "DELETE "+id+"?"+v)
	return nil
}
func (f *fakeARM) DeleteWith(_ context.Context, id, v string, q url.Values, h http.Header) error {
	f.calls = append(f.calls, "DELETE "+id+"?"+v+"&"+q.Encode()+" If-Match:"+h.Get("If-Match"))
	return nil
}
func (f *fakeARM) Post(_ context.Context, p, v string, _ []byte) ([]byte, error) {
	f.calls = append(f.calls, "POST "+p+"?"+v)
	return nil, nil
}
func (f *fakeARM) List(context.Context, string, string) ([]json.RawMessage, error) { return nil, nil }

func TestCustomDeletes(t *testing.T) {
	ctx := context.Background()
	f := &fakeARM{}
	prod := Target{Group: "apimanagement.azure.com", Kind: "Product", AzureName: "p", ARMID: "/s/apim/products/p", APIVersion: "2024-05-01"}
	if err := Delete(ctx, f, prod); err != nil {
		t.Fatal(err)
	}
	want := []string{"DELETE /s/apim/products/p?2022-08-01&deleteSubscriptions=true If-Match:*", "DELETE /s/apim/products/p?2024-05-01"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("product delete (-want +got):\n%s", diff)
	}

	alias := Target{Group: "subscription.azure.com", Kind: "Alias", ARMID: "/providers/Microsoft.Subscription/aliases/a", APIVersion: "2021-10-01"}
	f = &fakeARM{get: map[string]string{alias.ARMID: `{"properties":{"subscriptionId":"sub1"}}`}}
	if err := Delete(ctx, f, alias); err != nil {
		t.Fatal(err)
	}
	want = []string{"GET " + alias.ARMID + "?2021-10-01", "POST /subscriptions/sub1/providers/Microsoft.Subscription/cancel?2021-10-01", "DELETE " + alias.ARMID + "?2021-10-01"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("alias delete (-want +got):\n%s", diff)
	}
	// Gone already: nothing to cancel.
	f = &fakeARM{}
	if err := Delete(ctx, f, alias); err != nil || len(f.calls) != 2 {
		t.Errorf("alias gone: %v %v", f.calls, err)
	}

	s, err := Succeeded(alias, []byte(`{"properties":{"subscriptionId":"sub1"}}`))
	if err != nil || s.ChildResourceID != "/subscriptions/sub1" {
		t.Errorf("alias success: %+v %v", s, err)
	}
	var ce *ConditionError
	if _, err := Succeeded(alias, []byte(`{"properties":{}}`)); !errors.As(err, &ce) || ce.Message != "SubscriptionID field not populated" {
		t.Errorf("alias without subscription: %v", err)
	}
}

func TestPreReconcileReads(t *testing.T) {
	ctx := context.Background()
	pool := Target{Group: "containerservice.azure.com", Kind: "ManagedClustersAgentPool", ARMID: "/mc/agentPools/p", APIVersion: "v",
		OwnerName: "aks", OwnerARMID: "/mc", OwnerAPIVersion: "ov"}
	f := &fakeARM{get: map[string]string{"/mc": `{"properties":{"provisioningState":"Updating"}}`}}
	c, err := PreReconcile(ctx, f, pool)
	if err != nil || c.Action != Block || c.Message != `Managed cluster "aks" is in provisioning state "Updating"` {
		t.Errorf("%+v %v", c, err)
	}
	if diff := cmp.Diff([]string{"GET /mc?ov"}, f.calls); diff != "" {
		t.Errorf("owner blocks: the pool is not read (-want +got):\n%s", diff)
	}
	f.get["/mc"] = `{"properties":{"provisioningState":"Succeeded"}}`
	f.calls = nil
	if c, err := PreReconcile(ctx, f, pool); err != nil || c.Action != Proceed || len(f.calls) != 2 {
		t.Errorf("%+v %v %v", c, err, f.calls)
	}
	f.calls = nil
	if c, _ := PreReconcile(ctx, f, Target{Group: "storage.azure.com", Kind: "StorageAccount"}); c.Action != Proceed || len(f.calls) != 0 {
		t.Errorf("kinds without checks read nothing: %v", f.calls)
	}
}

func TestVaultCreateModeHook(t *testing.T) {
	ctx := context.Background()
	kv := Target{Group: "keyvault.azure.com", Kind: "Vault", AzureName: "kv", ARMID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.KeyVault/vaults/kv", APIVersion: "2023-07-01"}
	deleted := "/subscriptions/s/providers/Microsoft.KeyVault/locations/westeurope/deletedVaults/kv"
	body := func(mode string) []byte {
		return []byte(`{"location":"westeurope","properties":{"createMode":"` + mode + `","tenantId":"t"}}`)
	}
	tests := []struct {
		name, mode, deletedIn string // deletedIn: the soft-deleted vault's resource group, "" for none
		want                  string
		calls                 []string
		fatal                 bool
	}{
		{name: "none", mode: "createOrRecover", want: "default", calls: []string{"GET " + deleted + "?2024-11-01"}},
		{name: "same group", mode: "createOrRecover", deletedIn: "rg", want: "recover", calls: []string{"GET " + deleted + "?2024-11-01"}},
		{name: "other group", mode: "createOrRecover", deletedIn: "other", fatal: true, calls: []string{"GET " + deleted + "?2024-11-01"}},
		{name: "purge", mode: "purgeThenCreate", deletedIn: "rg", want: "default", calls: []string{"GET " + deleted + "?2024-11-01", "POST " + deleted + "/purge?2024-11-01"}},
		{name: "nothing to purge", mode: "purgeThenCreate", want: "default", calls: []string{"GET " + deleted + "?2024-11-01"}},
		{name: "as written", mode: "recover", want: "recover"},
	}
	for _, tt := range tests {
		f := &fakeARM{get: map[string]string{}}
		if tt.deletedIn != "" {
			f.get[deleted] = `{"properties":{"vaultId":"/subscriptions/s/resourceGroups/` + tt.deletedIn + `/providers/Microsoft.KeyVault/vaults/kv"}}`
		}
		out, err := ModifyPayload(ctx, f, kv, body(tt.mode))
		var ce *ConditionError
		switch {
		case tt.fatal:
			if !errors.As(err, &ce) || !ce.Fatal || ce.Message != "cannot recover KeyVault: new resourceGroup rg does not match old resource group other" {
				t.Errorf("%s: %v", tt.name, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case string(out) != string(body(tt.want)):
			t.Errorf("%s: %s", tt.name, out)
		}
		if diff := cmp.Diff(tt.calls, f.calls); diff != "" {
			t.Errorf("%s calls (-want +got):\n%s", tt.name, diff)
		}
	}
}
