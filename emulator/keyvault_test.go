package emulator_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
)

// TestKeyVaultPurgeProtection: purge protection and soft delete are irreversible (a PUT cannot set them to false,
// not even on a create, and a PUT that omits purge protection keeps it); a soft-deleted vault with purge
// protection cannot be purged, only recovered.
func TestKeyVaultPurgeProtection(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-kvpp")
	putRG(t, c, rg)
	kv := rg + "/providers/Microsoft.KeyVault/vaults/protectedkv"
	deleted := "/subscriptions/" + e.SubscriptionID() + "/providers/Microsoft.KeyVault/locations/westeurope/deletedVaults/protectedkv"
	vault := func(extra map[string]any) map[string]any {
		props := map[string]any{"tenantId": e.TenantID(), "sku": map[string]any{"family": "A", "name": "standard"}, "enableRbacAuthorization": true}
		for k, v := range extra {
			props[k] = v
		}
		return map[string]any{"location": "westeurope", "properties": props}
	}
	for _, tc := range []struct {
		props map[string]any
		want  string
	}{
		{map[string]any{"enablePurgeProtection": false}, `"enablePurgeProtection" cannot be set to false`},
		{map[string]any{"enableSoftDelete": false}, `"enableSoftDelete" cannot be set to false`},
	} {
		if r := c.do(http.MethodPut, rg+"/providers/Microsoft.KeyVault/vaults/otherkv", kvAPI, vault(tc.props)); r.status != 400 || r.code() != "BadRequest" ||
			!strings.Contains(r.str("error", "message"), tc.want) {
			t.Errorf("create with %v: %d %s", tc.props, r.status, r.raw)
		}
	}
	mustPut(t, c, kv, kvAPI, vault(map[string]any{"enablePurgeProtection": true}))
	if got := mustPut(t, c, kv, kvAPI, vault(nil)); got["properties"].(map[string]any)["enablePurgeProtection"] != true {
		t.Errorf("a PUT without enablePurgeProtection turned it off: %v", got["properties"])
	}
	if r := c.do(http.MethodPut, kv, kvAPI, vault(map[string]any{"enablePurgeProtection": false})); r.status != 400 ||
		!strings.Contains(r.str("error", "message"), "irreversible") {
		t.Errorf("turning purge protection off: %d %s", r.status, r.raw)
	}
	if _, err := c.deleteAndWait(kv, kvAPI); err != nil {
		t.Fatal(err)
	}
	if r := c.do(http.MethodGet, deleted, kvAPI, nil); r.status != 200 || r.body["properties"].(map[string]any)["purgeProtectionEnabled"] != true {
		t.Fatalf("deleted vault: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodPost, deleted+"/purge", kvAPI, nil); r.status != http.StatusMethodNotAllowed || r.code() != "MethodNotAllowed" {
		t.Errorf("purge of a protected vault: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, deleted, kvAPI, nil); r.status != 200 {
		t.Errorf("the refused purge removed the deleted vault: %d", r.status)
	}
	got := mustPut(t, c, kv, kvAPI, vault(map[string]any{"createMode": "recover"}))
	if got["properties"].(map[string]any)["enablePurgeProtection"] != true {
		t.Errorf("recovered vault: %v", got["properties"])
	}
}
