package emulator_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

// TestExportActions: the key and credential actions ASO's exporters call answer with the shapes real ARM sends
// (the SDK clients' response types), stable across calls.
func TestExportActions(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithDefaultLatency(5*time.Millisecond))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-x")
	mustPut(t, c, rg, rgAPI, map[string]any{"location": "westeurope"})
	loc := map[string]any{"location": "westeurope"}
	str := func(v any) string { s, _ := v.(string); return s }
	post := func(path, api string) result {
		t.Helper()
		r := c.do(http.MethodPost, path, api, nil)
		if r.status != 200 {
			t.Fatalf("POST %s: %d %s", path, r.status, r.raw)
		}
		if again := c.do(http.MethodPost, path, api, nil); string(again.raw) != string(r.raw) {
			t.Errorf("POST %s not stable:\n%s\n%s", path, r.raw, again.raw)
		}
		return r
	}

	t.Run("appconfiguration", func(t *testing.T) {
		store := rg + "/providers/Microsoft.AppConfiguration/configurationStores/conf"
		mustPut(t, c, store, "2024-06-01", map[string]any{"location": "westeurope", "sku": map[string]any{"name": "standard"}})
		r := post(store+"/listKeys", "2022-05-01")
		keys, _ := r.body["value"].([]any)
		if len(keys) != 4 {
			t.Fatalf("keys %s", r.raw)
		}
		names := map[string]bool{}
		for _, k := range keys {
			m := k.(map[string]any)
			names[str(m["name"])] = true
			if cs := str(m["connectionString"]); cs != "Endpoint=https://conf.azconfig.io;Id="+str(m["id"])+";Secret="+str(m["value"]) {
				t.Errorf("connection string %q", cs)
			}
			if ro := m["readOnly"] == true; ro != strings.HasSuffix(str(m["name"]), "Read Only") {
				t.Errorf("readOnly of %v", m)
			}
		}
		for _, n := range []string{"Primary", "Secondary", "Primary Read Only", "Secondary Read Only"} {
			if !names[n] {
				t.Errorf("no key %q in %s", n, r.raw)
			}
		}
	})

	t.Run("redisenterprise", func(t *testing.T) {
		cl := rg + "/providers/Microsoft.Cache/redisEnterprise/cache"
		mustPut(t, c, cl, "2025-04-01", map[string]any{"location": "westeurope", "sku": map[string]any{"name": "Enterprise_E10", "capacity": 2}})
		db := cl + "/databases/default"
		mustPut(t, c, db, "2025-04-01", map[string]any{"properties": map[string]any{}})
		r := post(db+"/listKeys", "2022-01-01")
		if r.str("primaryKey") == "" || r.str("secondaryKey") == "" || r.str("primaryKey") == r.str("secondaryKey") {
			t.Errorf("keys %s", r.raw)
		}
	})

	t.Run("iothub", func(t *testing.T) {
		hub := rg + "/providers/Microsoft.Devices/IotHubs/hub"
		mustPut(t, c, hub, "2021-07-02", map[string]any{"location": "westeurope", "sku": map[string]any{"name": "S1", "capacity": 1}})
		r := post(hub+"/listkeys", "2023-06-30")
		got := map[string]string{}
		for _, k := range r.body["value"].([]any) {
			m := k.(map[string]any)
			got[str(m["keyName"])] = str(m["rights"])
			if str(m["primaryKey"]) == "" || str(m["secondaryKey"]) == "" {
				t.Errorf("policy %v", m)
			}
		}
		if got["iothubowner"] != "RegistryWrite, ServiceConnect, DeviceConnect" || got["registryReadWrite"] != "RegistryWrite" || len(got) != 5 {
			t.Errorf("policies %v", got)
		}
		// A hub that declares its policies gets those.
		mine := rg + "/providers/Microsoft.Devices/IotHubs/mine"
		mustPut(t, c, mine, "2021-07-02", map[string]any{"location": "westeurope", "sku": map[string]any{"name": "S1", "capacity": 1},
			"properties": map[string]any{"authorizationPolicies": []any{map[string]any{"keyName": "ops", "rights": "ServiceConnect"}}}})
		r = post(mine+"/listkeys", "2023-06-30")
		if v := r.body["value"].([]any); len(v) != 1 || str(v[0].(map[string]any)["keyName"]) != "ops" {
			t.Errorf("declared policies: %s", r.raw)
		}
	})

	t.Run("machinelearning", func(t *testing.T) {
		ws := rg + "/providers/Microsoft.MachineLearningServices/workspaces/ml"
		mustPut(t, c, ws, "2024-04-01", loc)
		r := post(ws+"/listKeys", "2021-07-01")
		cr, _ := r.body["containerRegistryCredentials"].(map[string]any)
		nb, _ := r.body["notebookAccessKeys"].(map[string]any)
		pw, _ := cr["passwords"].([]any)
		if r.str("userStorageKey") == "" || r.str("appInsightsInstrumentationKey") == "" || str(cr["username"]) == "" || len(pw) != 2 ||
			str(nb["primaryAccessKey"]) == "" || str(nb["secondaryAccessKey"]) == "" {
			t.Errorf("keys %s", r.raw)
		}
	})

	t.Run("notificationhubs", func(t *testing.T) {
		ns := rg + "/providers/Microsoft.NotificationHubs/namespaces/nh"
		mustPut(t, c, ns, "2023-09-01", map[string]any{"location": "westeurope", "sku": map[string]any{"name": "Free"}})
		hub := ns + "/notificationHubs/hub"
		mustPut(t, c, hub, "2023-09-01", loc)
		for _, rule := range []string{ns + "/AuthorizationRules/RootManageSharedAccessKey", hub + "/AuthorizationRules/DefaultFullSharedAccessSignature"} {
			if g := c.do(http.MethodGet, rule, "2023-09-01", nil); g.status != 200 {
				t.Fatalf("default rule %s: %d %s", rule, g.status, g.raw)
			}
			r := post(rule+"/listKeys", "2017-04-01")
			name := rule[strings.LastIndexByte(rule, '/')+1:]
			want := "Endpoint=sb://nh.servicebus.windows.net/;SharedAccessKeyName=" + name + ";SharedAccessKey=" + r.str("primaryKey")
			if r.str("primaryConnectionString") != want || r.str("keyName") != name || r.str("secondaryKey") == "" {
				t.Errorf("keys %s", r.raw)
			}
		}
		if g := c.do(http.MethodGet, hub+"/AuthorizationRules/DefaultListenSharedAccessSignature", "2023-09-01", nil); g.status != 200 {
			t.Errorf("listen rule: %d", g.status)
		}
	})

	t.Run("search", func(t *testing.T) {
		svc := rg + "/providers/Microsoft.Search/searchServices/find"
		// Search answers a create at once (201, no operation to poll), as recorded from Azure.
		put := c.do(http.MethodPut, svc, "2023-11-01", map[string]any{"location": "westeurope", "sku": map[string]any{"name": "basic"}})
		if put.status != 201 || put.header.Get("Azure-AsyncOperation") != "" || put.str("properties", "provisioningState") != "Succeeded" {
			t.Fatalf("PUT search service: %d %v %s", put.status, put.header, put.raw)
		}
		a := post(svc+"/listAdminKeys", "2025-05-01")
		if len(a.str("primaryKey")) != 52 || a.str("secondaryKey") == "" || a.str("primaryKey") == a.str("secondaryKey") {
			t.Errorf("admin keys %s", a.raw)
		}
		q := post(svc+"/listQueryKeys", "2025-05-01")
		v, _ := q.body["value"].([]any)
		if len(v) != 1 || v[0].(map[string]any)["name"] != nil || len(str(v[0].(map[string]any)["key"])) != 52 {
			t.Errorf("query keys %s", q.raw)
		}
	})

	t.Run("aks", func(t *testing.T) {
		mc := rg + "/providers/Microsoft.ContainerService/managedClusters/aks"
		out := mustPut(t, c, mc, "2025-08-01", map[string]any{"location": "westeurope", "properties": map[string]any{"dnsPrefix": "aks"}})
		fqdn, _ := out["properties"].(map[string]any)["fqdn"].(string)
		if !strings.HasSuffix(fqdn, ".hcp.westeurope.azmk8s.io") {
			t.Errorf("fqdn %q", fqdn)
		}
		for action, name := range map[string]string{"listClusterAdminCredential": "clusterAdmin", "listClusterUserCredential": "clusterUser"} {
			r := post(mc+"/"+action, "2022-04-01")
			kc, _ := r.body["kubeconfigs"].([]any)
			if len(kc) != 1 || str(kc[0].(map[string]any)["name"]) != name {
				t.Fatalf("%s: %s", action, r.raw)
			}
			b, err := base64.StdEncoding.DecodeString(str(kc[0].(map[string]any)["value"]))
			if err != nil || !strings.Contains(string(b), "server: https://"+fqdn+":443") || !strings.Contains(string(b), "kind: Config") {
				t.Errorf("%s kubeconfig %q (%v)", action, b, err)
			}
		}
	})

	t.Run("openshift", func(t *testing.T) {
		oc := rg + "/providers/Microsoft.RedHatOpenShift/openShiftClusters/aro"
		mustPut(t, c, oc, "2023-11-22", map[string]any{"location": "westeurope", "properties": map[string]any{"clusterProfile": map[string]any{"domain": "team"}}})
		a := post(oc+"/listAdminCredentials", "2023-11-22")
		if !strings.Contains(a.str("kubeconfig"), "server: https://api.team.westeurope.aroapp.io:6443/") {
			t.Errorf("admin kubeconfig %s", a.raw)
		}
		cr := post(oc+"/listCredentials", "2023-11-22")
		if cr.str("kubeadminUsername") != "kubeadmin" || len(cr.str("kubeadminPassword")) != 23 {
			t.Errorf("credentials %s", cr.raw)
		}
	})

	t.Run("unknown action", func(t *testing.T) {
		svc := rg + "/providers/Microsoft.Search/searchServices/find"
		if r := c.do(http.MethodPost, svc+"/listSomething", "2025-05-01", nil); r.status != 404 {
			t.Errorf("unknown action: %d %s", r.status, r.raw)
		}
	})
}

// TestPrivateEndpointNetworkInterface: a private endpoint gets a network interface of its own with a primary
// private address of its subnet, kept across updates and removed with the endpoint.
func TestPrivateEndpointNetworkInterface(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithDefaultLatency(5*time.Millisecond))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-pe")
	mustPut(t, c, rg, rgAPI, map[string]any{"location": "westeurope"})
	vnet := rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	mustPut(t, c, vnet, "2024-03-01", map[string]any{"location": "westeurope", "properties": map[string]any{
		"addressSpace": map[string]any{"addressPrefixes": []any{"10.1.0.0/16"}},
		"subnets":      []any{map[string]any{"name": "pe", "properties": map[string]any{"addressPrefix": "10.1.2.0/24"}}}}})
	subnet := vnet + "/subnets/pe"
	body := func(name string) map[string]any {
		return map[string]any{"location": "westeurope", "properties": map[string]any{"subnet": map[string]any{"id": subnet},
			"privateLinkServiceConnections": []any{map[string]any{"name": name, "properties": map[string]any{
				"privateLinkServiceId": rg + "/providers/Microsoft.Storage/storageAccounts/sa", "groupIds": []any{"blob"}}}}}}
	}
	nicOf := func(pe map[string]any) string {
		nics, _ := pe["properties"].(map[string]any)["networkInterfaces"].([]any)
		if len(nics) != 1 {
			t.Fatalf("networkInterfaces %v", pe["properties"])
		}
		id, _ := nics[0].(map[string]any)["id"].(string)
		return id
	}
	pe1 := rg + "/providers/Microsoft.Network/privateEndpoints/pe1"
	nic1 := nicOf(mustPut(t, c, pe1, "2024-03-01", body("c1")))
	if !strings.Contains(nic1, "/networkInterfaces/pe1.nic.") {
		t.Errorf("nic id %q", nic1)
	}
	g := c.do(http.MethodGet, nic1, "2022-01-01", nil)
	ipc, _ := g.body["properties"].(map[string]any)["ipConfigurations"].([]any)
	if g.status != 200 || len(ipc) != 1 {
		t.Fatalf("GET nic: %d %s", g.status, g.raw)
	}
	p := ipc[0].(map[string]any)["properties"].(map[string]any)
	if p["privateIPAddress"] != "10.1.2.4" || p["primary"] != true || !strings.EqualFold(p["subnet"].(map[string]any)["id"].(string), subnet) {
		t.Errorf("ip configuration %v", p)
	}
	// An update keeps the interface; a second endpoint gets the next address.
	if again := nicOf(mustPut(t, c, pe1, "2024-03-01", body("c1"))); again != nic1 {
		t.Errorf("update changed the nic: %s → %s", nic1, again)
	}
	nic2 := nicOf(mustPut(t, c, rg+"/providers/Microsoft.Network/privateEndpoints/pe2", "2024-03-01", body("c2")))
	g2 := c.do(http.MethodGet, nic2, "2022-01-01", nil)
	if ip := g2.body["properties"].(map[string]any)["ipConfigurations"].([]any)[0].(map[string]any)["properties"].(map[string]any)["privateIPAddress"]; ip != "10.1.2.5" {
		t.Errorf("second endpoint address %v", ip)
	}
	if _, err := c.deleteAndWait(pe1, "2024-03-01"); err != nil {
		t.Fatal(err)
	}
	if g := c.do(http.MethodGet, nic1, "2022-01-01", nil); g.status != 404 {
		t.Errorf("nic after endpoint delete: %d", g.status)
	}
}
