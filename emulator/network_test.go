package emulator_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

// TestSubnetsProvisionedWithTheirVirtualNetwork: subnets written in a virtual network's PUT are Updating while
// the virtual network's operation runs and Succeeded when it ends, in their own GET and in the network's body.
func TestSubnetsProvisionedWithTheirVirtualNetwork(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithLatency("Microsoft.Network/virtualNetworks", 400*time.Millisecond))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-vnetop")
	putRG(t, c, rg)
	vnet := rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	resp := c.doResp(http.MethodPut, vnet, networkAPI, map[string]any{"location": "westeurope", "properties": map[string]any{
		"addressSpace": map[string]any{"addressPrefixes": []any{"10.0.0.0/16"}},
		"subnets": []any{map[string]any{"name": "a", "properties": map[string]any{"addressPrefix": "10.0.1.0/24"}},
			map[string]any{"name": "b", "properties": map[string]any{"addressPrefix": "10.0.2.0/24"}}}}})
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Azure-AsyncOperation") == "" {
		t.Fatalf("vnet PUT: %d %v", resp.StatusCode, resp.Header)
	}
	states := func() (string, []string) {
		sub := c.do(http.MethodGet, vnet+"/subnets/a", networkAPI, nil)
		v := c.do(http.MethodGet, vnet, networkAPI, nil)
		var embedded []string
		for _, it := range v.body["properties"].(map[string]any)["subnets"].([]any) {
			embedded = append(embedded, it.(map[string]any)["properties"].(map[string]any)["provisioningState"].(string))
		}
		return sub.str("properties", "provisioningState"), embedded
	}
	if s, emb := states(); s != "Updating" || strings.Join(emb, ",") != "Updating,Updating" {
		t.Errorf("while the vnet is provisioned: subnet %s, embedded %v", s, emb)
	}
	if _, err := c.wait(resp); err != nil {
		t.Fatal(err)
	}
	if s, emb := states(); s != "Succeeded" || strings.Join(emb, ",") != "Succeeded,Succeeded" {
		t.Errorf("after the vnet's operation: subnet %s, embedded %v", s, emb)
	}
}

// TestInUseSubnetCannotBeDeleted: a subnet a network interface or a private endpoint uses cannot be deleted, by a
// DELETE of it or of its virtual network or by a PUT of the virtual network that leaves it out; once the user is
// gone it can.
func TestInUseSubnetCannotBeDeleted(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-inuse")
	putRG(t, c, rg)
	vnet := rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	vnetBody := func(subnets ...string) map[string]any {
		var list []any
		for i, s := range subnets {
			list = append(list, map[string]any{"name": s, "properties": map[string]any{"addressPrefix": "10.0." + string(rune('1'+i)) + ".0/24"}})
		}
		return map[string]any{"location": "westeurope", "properties": map[string]any{
			"addressSpace": map[string]any{"addressPrefixes": []any{"10.0.0.0/16"}}, "subnets": list}}
	}
	mustPut(t, c, vnet, networkAPI, vnetBody("used", "pe", "free"))
	nic := rg + "/providers/Microsoft.Network/networkInterfaces/nic"
	mustPut(t, c, nic, networkAPI, map[string]any{"location": "westeurope", "properties": map[string]any{"ipConfigurations": []any{
		map[string]any{"name": "ipconfig1", "properties": map[string]any{"subnet": map[string]any{"id": vnet + "/subnets/used"}}}}}})
	pe := rg + "/providers/Microsoft.Network/privateEndpoints/pe"
	mustPut(t, c, pe, networkAPI, map[string]any{"location": "westeurope", "properties": map[string]any{
		"subnet": map[string]any{"id": vnet + "/subnets/pe"}}})

	refused := func(what string, r result, subnet string) {
		t.Helper()
		if r.status != http.StatusBadRequest || r.code() != "InUseSubnetCannotBeDeleted" || !strings.Contains(r.str("error", "message"), subnet) || !strings.Contains(r.str("error", "message"), "is in use by") {
			t.Errorf("%s: %d %s", what, r.status, r.raw)
		}
	}
	refused("DELETE of the NIC's subnet", c.do(http.MethodDelete, vnet+"/subnets/used", networkAPI, nil), "Subnet used")
	refused("DELETE of the private endpoint's subnet", c.do(http.MethodDelete, vnet+"/subnets/pe", networkAPI, nil), "Subnet pe")
	refused("DELETE of the vnet", c.do(http.MethodDelete, vnet, networkAPI, nil), "Subnet")
	refused("PUT of the vnet without the subnet", c.do(http.MethodPut, vnet, networkAPI, vnetBody("pe", "free")), "Subnet used")
	if r := c.do(http.MethodGet, vnet+"/subnets/used", networkAPI, nil); r.status != 200 {
		t.Fatalf("the refused writes removed the subnet: %d", r.status)
	}
	// A subnet nobody uses goes, with a DELETE or when the vnet's PUT leaves it out.
	mustPut(t, c, vnet, networkAPI, vnetBody("used", "pe"))
	if r := c.do(http.MethodGet, vnet+"/subnets/free", networkAPI, nil); r.status != 404 {
		t.Errorf("subnet left out of the vnet's PUT: %d", r.status)
	}
	for _, id := range []string{nic, pe} {
		if _, err := c.deleteAndWait(id, networkAPI); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"used", "pe"} {
		if _, err := c.deleteAndWait(vnet+"/subnets/"+s, networkAPI); err != nil {
			t.Errorf("DELETE of subnet %s once unused: %v", s, err)
		}
	}
	if _, err := c.deleteAndWait(vnet, networkAPI); err != nil {
		t.Errorf("DELETE of the vnet: %v", err)
	}
}
