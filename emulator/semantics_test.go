package emulator_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

const (
	sbAPI      = "2021-11-01"
	kvAPI      = "2024-11-01"
	networkAPI = "2024-03-01"
)

func putRG(t *testing.T, c *client, rg string) {
	t.Helper()
	if r := c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westeurope"}); r.status >= 300 {
		t.Fatalf("PUT %s: %d %s", rg, r.status, r.raw)
	}
}

func mustPut(t *testing.T, c *client, path, apiVersion string, body any) map[string]any {
	t.Helper()
	out, err := c.putAndWait(path, apiVersion, body)
	if err != nil {
		t.Fatalf("PUT %s: %v", path, err)
	}
	return out
}

func TestServiceBusNamespaceHasRootManageSharedAccessKey(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithDefaultLatency(20*time.Millisecond))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-sb")
	putRG(t, c, rg)
	ns := rg + "/providers/Microsoft.ServiceBus/namespaces/teamsb"
	mustPut(t, c, ns, sbAPI, map[string]any{"location": "westeurope", "sku": map[string]any{"name": "Standard"}})

	rule := ns + "/AuthorizationRules/RootManageSharedAccessKey"
	r := c.do(http.MethodGet, rule, sbAPI, nil)
	rights, _ := r.body["properties"].(map[string]any)["rights"].([]any)
	if r.status != 200 || r.str("name") != "RootManageSharedAccessKey" || len(rights) != 3 || rights[0] != "Listen" || rights[1] != "Manage" || rights[2] != "Send" {
		t.Fatalf("default rule: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, ns+"/AuthorizationRules", sbAPI, nil); len(r.body["value"].([]any)) != 1 {
		t.Errorf("rule list: %s", r.raw)
	}
	// Not a resource of its own in the resource group listing.
	if r := c.do(http.MethodGet, rg+"/resources", rgAPI, nil); len(r.body["value"].([]any)) != 1 {
		t.Errorf("RG resources: %s", r.raw)
	}

	keys := c.do(http.MethodPost, rule+"/listKeys", sbAPI, nil)
	pk, sk := keys.str("primaryKey"), keys.str("secondaryKey")
	if keys.status != 200 || pk == "" || sk == "" || pk == sk || keys.str("keyName") != "RootManageSharedAccessKey" {
		t.Fatalf("listKeys: %d %s", keys.status, keys.raw)
	}
	if got, want := keys.str("primaryConnectionString"), "Endpoint=sb://teamsb.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey="+pk; got != want {
		t.Errorf("primaryConnectionString %q, want %q", got, want)
	}
	if got, want := keys.str("secondaryConnectionString"), "Endpoint=sb://teamsb.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey="+sk; got != want {
		t.Errorf("secondaryConnectionString %q, want %q", got, want)
	}
	// Stable across calls; an update of the namespace does not recreate the rule or change its keys.
	mustPut(t, c, ns, sbAPI, map[string]any{"location": "westeurope", "sku": map[string]any{"name": "Standard"}, "tags": map[string]any{"a": "b"}})
	if again := c.do(http.MethodPost, rule+"/listKeys", sbAPI, nil); again.str("primaryKey") != pk {
		t.Errorf("keys changed: %s", again.raw)
	}

	// Entity-level rules carry EntityPath.
	q := ns + "/queues/orders"
	if r := c.do(http.MethodPut, q, sbAPI, map[string]any{"properties": map[string]any{}}); r.status != 200 {
		t.Fatalf("queue: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodPut, q+"/authorizationRules/reader", sbAPI, map[string]any{"properties": map[string]any{"rights": []any{"Listen"}}}); r.status != 200 {
		t.Fatalf("queue rule: %d %s", r.status, r.raw)
	}
	qk := c.do(http.MethodPost, q+"/authorizationRules/reader/ListKeys", sbAPI, nil)
	if !strings.HasPrefix(qk.str("primaryConnectionString"), "Endpoint=sb://teamsb.servicebus.windows.net/;SharedAccessKeyName=reader;SharedAccessKey=") ||
		!strings.HasSuffix(qk.str("primaryConnectionString"), ";EntityPath=orders") {
		t.Errorf("queue rule keys: %s", qk.raw)
	}

	// The rule goes with its namespace.
	if _, err := c.deleteAndWait(ns, sbAPI); err != nil {
		t.Fatal(err)
	}
	if r := c.do(http.MethodPost, rule+"/listKeys", sbAPI, nil); r.status != 404 {
		t.Errorf("listKeys after namespace delete: %d %s", r.status, r.raw)
	}
}

func TestKeyVaultSoftDelete(t *testing.T) {
	data := filepath.Join(t.TempDir(), "state.json")
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithDefaultLatency(20*time.Millisecond), emulator.WithDataFile(data))
	c, _ := ownerClient(t, e)
	sub := "/subscriptions/" + e.SubscriptionID()
	rg := rgPath(e, "rg-kv")
	putRG(t, c, rg)
	kv := rg + "/providers/Microsoft.KeyVault/vaults/teamkv"
	deleted := sub + "/providers/Microsoft.KeyVault/locations/westeurope/deletedVaults/teamkv"
	vault := func(mode string, tags map[string]any) map[string]any {
		return map[string]any{"location": "westeurope", "tags": tags, "properties": map[string]any{
			"createMode": mode, "tenantId": e.TenantID(), "sku": map[string]any{"family": "A", "name": "standard"}, "accessPolicies": []any{},
			"enableRbacAuthorization": true}}
	}

	// recover with nothing to recover fails.
	if r := c.do(http.MethodPut, kv, kvAPI, vault("recover", nil)); r.status != 404 || r.code() != "SoftDeletedVaultDoesNotExist" {
		t.Fatalf("recover of nothing: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, deleted, kvAPI, nil); r.status != 404 {
		t.Fatalf("deleted vault before any delete: %d %s", r.status, r.raw)
	}
	mustPut(t, c, kv, kvAPI, vault("default", map[string]any{"gen": "1"}))
	if _, err := c.deleteAndWait(kv, kvAPI); err != nil {
		t.Fatal(err)
	}
	if r := c.do(http.MethodGet, kv, kvAPI, nil); r.status != 404 {
		t.Fatalf("vault after delete: %d", r.status)
	}
	r := c.do(http.MethodGet, deleted, kvAPI, nil)
	if r.status != 200 || r.str("type") != "Microsoft.KeyVault/deletedVaults" || r.str("id") != deleted ||
		!strings.EqualFold(r.str("properties", "vaultId"), kv) || r.str("properties", "location") != "westeurope" || r.str("properties", "scheduledPurgeDate") == "" {
		t.Fatalf("deleted vault: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, sub+"/providers/Microsoft.KeyVault/deletedVaults", kvAPI, nil); len(r.body["value"].([]any)) != 1 {
		t.Errorf("deleted vault list: %s", r.raw)
	}
	if r := c.do(http.MethodGet, sub+"/providers/Microsoft.KeyVault/locations/northeurope/deletedVaults/teamkv", kvAPI, nil); r.status != 404 {
		t.Errorf("deleted vault in another location: %d", r.status)
	}

	// A plain create of the name conflicts (also without createMode, and in another resource group).
	for _, mode := range []string{"default", ""} {
		if r := c.do(http.MethodPut, kv, kvAPI, vault(mode, nil)); r.status != 409 || r.code() != "ConflictError" || !strings.Contains(r.str("error", "message"), "already exists in deleted state") {
			t.Fatalf("create %q over a soft-deleted vault: %d %s", mode, r.status, r.raw)
		}
	}
	other := rgPath(e, "rg-other")
	putRG(t, c, other)
	if r := c.do(http.MethodPut, other+"/providers/Microsoft.KeyVault/vaults/teamkv", kvAPI, vault("default", nil)); r.status != 409 {
		t.Errorf("create in another RG: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodPut, other+"/providers/Microsoft.KeyVault/vaults/teamkv", kvAPI, vault("recover", nil)); r.status != 404 || r.code() != "SoftDeletedVaultDoesNotExist" {
		t.Errorf("recover into another RG: %d %s", r.status, r.raw)
	}

	// The deleted vault survives a restart (data file).
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = newEmulator(t, emulator.WithoutThrottling(), emulator.WithDefaultLatency(20*time.Millisecond), emulator.WithDataFile(data))
	c, _ = ownerClient(t, e)
	if r := c.do(http.MethodGet, deleted, kvAPI, nil); r.status != 200 {
		t.Fatalf("deleted vault after restart: %d %s", r.status, r.raw)
	}

	// recover restores the vault as it was (its former tags win over the request's).
	got := mustPut(t, c, kv, kvAPI, vault("recover", map[string]any{"gen": "2"}))
	if tags, _ := got["tags"].(map[string]any); tags["gen"] != "1" {
		t.Errorf("recovered vault: %v", got)
	}
	if r := c.do(http.MethodGet, deleted, kvAPI, nil); r.status != 404 {
		t.Errorf("deleted vault after recover: %d", r.status)
	}

	// Deleting the resource group soft-deletes its vault; purge (an LRO) removes it for good.
	if _, err := c.deleteAndWait(rg, rgAPI); err != nil {
		t.Fatal(err)
	}
	if r := c.do(http.MethodGet, deleted, kvAPI, nil); r.status != 200 {
		t.Fatalf("deleted vault after RG delete: %d %s", r.status, r.raw)
	}
	resp := c.doResp(http.MethodPost, deleted+"/purge", kvAPI, nil)
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Location") == "" {
		t.Fatalf("purge: %d %v", resp.StatusCode, resp.Header)
	}
	if _, err := c.wait(resp); err != nil {
		t.Fatalf("purge poll: %v", err)
	}
	if r := c.do(http.MethodGet, deleted, kvAPI, nil); r.status != 404 {
		t.Errorf("deleted vault after purge: %d", r.status)
	}
	if r := c.do(http.MethodPost, deleted+"/purge", kvAPI, nil); r.status != 404 {
		t.Errorf("second purge: %d", r.status)
	}
	putRG(t, c, rg)
	mustPut(t, c, kv, kvAPI, vault("default", nil))
}

// subnetNames returns the names in the parent's embedded collection, checking each item is the child resource.
func embeddedNames(t *testing.T, c *client, parent, prop string) []string {
	t.Helper()
	r := c.do(http.MethodGet, parent, networkAPI, nil)
	if r.status != 200 {
		t.Fatalf("GET %s: %d %s", parent, r.status, r.raw)
	}
	items, ok := r.body["properties"].(map[string]any)[prop].([]any)
	if !ok {
		t.Fatalf("%s has no properties.%s: %s", parent, prop, r.raw)
	}
	var names []string
	for _, it := range items {
		m := it.(map[string]any)
		name, _ := m["name"].(string)
		if id, _ := m["id"].(string); !strings.EqualFold(id, parent+"/"+prop+"/"+name) {
			t.Errorf("embedded %s id %q", name, id)
		}
		names = append(names, name)
	}
	return names
}

func TestVirtualNetworkSubnetsAreEmbedded(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithDefaultLatency(20*time.Millisecond))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-net")
	putRG(t, c, rg)
	vnet := rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	vnetBody := func(subnets ...any) map[string]any {
		props := map[string]any{"addressSpace": map[string]any{"addressPrefixes": []any{"10.0.0.0/16"}}}
		if subnets != nil {
			props["subnets"] = subnets
		}
		return map[string]any{"location": "westeurope", "properties": props}
	}
	mustPut(t, c, vnet, networkAPI, vnetBody())
	if got := embeddedNames(t, c, vnet, "subnets"); len(got) != 0 {
		t.Fatalf("new VNet subnets %v", got)
	}

	// A child PUT shows in the parent, with its properties and final provisioning state.
	mustPut(t, c, vnet+"/subnets/apps", networkAPI, map[string]any{"properties": map[string]any{"addressPrefix": "10.0.1.0/24"}})
	r := c.do(http.MethodGet, vnet, networkAPI, nil)
	subs := r.body["properties"].(map[string]any)["subnets"].([]any)
	s0, _ := subs[0].(map[string]any)
	p0, _ := s0["properties"].(map[string]any)
	if len(subs) != 1 || s0["name"] != "apps" || s0["type"] != "Microsoft.Network/virtualNetworks/subnets" || p0["addressPrefix"] != "10.0.1.0/24" || p0["provisioningState"] != "Succeeded" {
		t.Fatalf("VNet after subnet PUT: %s", r.raw)
	}
	// Subnets are not resources of their own in listings.
	if r := c.do(http.MethodGet, rg+"/resources", rgAPI, nil); len(r.body["value"].([]any)) != 1 {
		t.Errorf("RG resources: %s", r.raw)
	}

	// A VNet PUT that carries the subnets keeps them; inline subnets become children.
	got := mustPut(t, c, vnet, networkAPI, vnetBody(s0, map[string]any{"name": "data", "properties": map[string]any{"addressPrefix": "10.0.2.0/24"}}))
	if n := len(got["properties"].(map[string]any)["subnets"].([]any)); n != 2 {
		t.Errorf("PUT response subnets: %v", got)
	}
	if r := c.do(http.MethodGet, vnet+"/subnets/data", networkAPI, nil); r.status != 200 || r.str("properties", "addressPrefix") != "10.0.2.0/24" {
		t.Errorf("inline subnet as child: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, vnet+"/subnets", networkAPI, nil); len(r.body["value"].([]any)) != 2 {
		t.Errorf("subnet list: %s", r.raw)
	}

	// A VNet PUT listing only one subnet deletes the other; one without subnets deletes them all.
	mustPut(t, c, vnet, networkAPI, vnetBody(map[string]any{"name": "data", "properties": map[string]any{"addressPrefix": "10.0.2.0/24"}}))
	if got := embeddedNames(t, c, vnet, "subnets"); len(got) != 1 || got[0] != "data" {
		t.Errorf("after PUT with one subnet: %v", got)
	}
	if r := c.do(http.MethodGet, vnet+"/subnets/apps", networkAPI, nil); r.status != 404 {
		t.Errorf("omitted subnet still there: %d", r.status)
	}
	mustPut(t, c, vnet, networkAPI, vnetBody())
	if got := embeddedNames(t, c, vnet, "subnets"); len(got) != 0 {
		t.Errorf("after PUT without subnets: %v", got)
	}
	if r := c.do(http.MethodGet, vnet+"/subnets/data", networkAPI, nil); r.status != 404 {
		t.Errorf("subnet survived a PUT without subnets: %d", r.status)
	}

	// A child DELETE leaves the parent's list.
	mustPut(t, c, vnet+"/subnets/apps", networkAPI, map[string]any{"properties": map[string]any{"addressPrefix": "10.0.1.0/24"}})
	if _, err := c.deleteAndWait(vnet+"/subnets/apps", networkAPI); err != nil {
		t.Fatal(err)
	}
	if got := embeddedNames(t, c, vnet, "subnets"); len(got) != 0 {
		t.Errorf("after subnet DELETE: %v", got)
	}
}

func TestSecurityRulesRoutesAndInboundNatRulesAreEmbedded(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithDefaultLatency(20*time.Millisecond))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-nsg")
	putRG(t, c, rg)
	for _, tc := range []struct{ parent, prop string }{
		{rg + "/providers/Microsoft.Network/networkSecurityGroups/nsg", "securityRules"},
		{rg + "/providers/Microsoft.Network/routeTables/rt", "routes"},
		{rg + "/providers/Microsoft.Network/loadBalancers/lb", "inboundNatRules"},
	} {
		mustPut(t, c, tc.parent, networkAPI, map[string]any{"location": "westeurope"})
		// Listed even when empty: ASO's hook for the parent's next PUT fails on a GET without the list.
		if got := embeddedNames(t, c, tc.parent, tc.prop); len(got) != 0 {
			t.Errorf("%s of a new parent: %v", tc.prop, got)
		}
		mustPut(t, c, tc.parent+"/"+tc.prop+"/one", networkAPI, map[string]any{"properties": map[string]any{"priority": 100}})
		if got := embeddedNames(t, c, tc.parent, tc.prop); len(got) != 1 || got[0] != "one" {
			t.Errorf("%s after child PUT: %v", tc.prop, got)
		}
		mustPut(t, c, tc.parent, networkAPI, map[string]any{"location": "westeurope", "tags": map[string]any{"x": "y"}})
		if got := embeddedNames(t, c, tc.parent, tc.prop); len(got) != 0 {
			t.Errorf("%s after a parent PUT without them: %v", tc.prop, got)
		}
		if r := c.do(http.MethodGet, tc.parent+"/"+tc.prop+"/one", networkAPI, nil); r.status != 404 {
			t.Errorf("%s child survived: %d", tc.prop, r.status)
		}
	}
}
