package emulator_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
)

func TestTransientStatesRefuseWrites(t *testing.T) {
	e := newEmulator(t, emulator.WithDefaultLatency(0))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg")
	mustPut(t, c, rg, rgAPI, map[string]any{"location": "westeurope"})

	tests := []struct {
		name, parent, child    string
		apiVersion             string
		parentBody, childBody  map[string]any
		state                  map[string]any
		code                   string
		childCode, childParent bool // the child is refused because of its parent
	}{
		{name: "aks", parent: rg + "/providers/Microsoft.ContainerService/managedClusters/aks", child: "/agentPools/pool1", apiVersion: "2024-09-01",
			parentBody: map[string]any{"location": "westeurope", "properties": map[string]any{"dnsPrefix": "aks"}},
			childBody:  map[string]any{"properties": map[string]any{"count": 1}},
			state:      map[string]any{"provisioningState": "Updating"}, code: "OperationNotAllowed"},
		{name: "postgres stopped", parent: rg + "/providers/Microsoft.DBforPostgreSQL/flexibleServers/pg", child: "/databases/db", apiVersion: "2024-08-01",
			parentBody: map[string]any{"location": "westeurope", "properties": map[string]any{"version": "16"}},
			childBody:  map[string]any{"properties": map[string]any{"charset": "UTF8"}},
			state:      map[string]any{"state": "Stopped"}, code: "OperationNotAllowed"},
		{name: "postgres updating", parent: rg + "/providers/Microsoft.DBforPostgreSQL/flexibleServers/pg2", child: "/firewallRules/all", apiVersion: "2024-08-01",
			parentBody: map[string]any{"location": "westeurope", "properties": map[string]any{"version": "16"}},
			childBody:  map[string]any{"properties": map[string]any{"startIpAddress": "0.0.0.0", "endIpAddress": "0.0.0.0"}},
			state:      map[string]any{"state": "Updating"}, code: "ServerIsBusy"},
		{name: "kusto", parent: rg + "/providers/Microsoft.Kusto/clusters/kc", child: "/databases/kdb", apiVersion: "2023-08-15",
			parentBody: map[string]any{"location": "westeurope", "sku": map[string]any{"name": "Dev(No SLA)_Standard_E2a_v4", "tier": "Basic"}},
			childBody:  map[string]any{"location": "westeurope", "kind": "ReadWrite"},
			state:      map[string]any{"provisioningState": "Creating"}, code: "Conflict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustPut(t, c, tt.parent, tt.apiVersion, tt.parentBody)
			mustPut(t, c, tt.parent+tt.child, tt.apiVersion, tt.childBody)
			if err := e.SetResourceProperties(tt.parent, tt.state); err != nil {
				t.Fatal(err)
			}
			if r := c.do(http.MethodPut, tt.parent, tt.apiVersion, tt.parentBody); r.status != http.StatusConflict || r.code() != tt.code {
				t.Errorf("PUT of the resource in %v: %d %s", tt.state, r.status, r.raw)
			}
			if r := c.do(http.MethodPut, tt.parent+tt.child, tt.apiVersion, tt.childBody); r.status != http.StatusConflict || r.code() != tt.code {
				t.Errorf("PUT of its child: %d %s", r.status, r.raw)
			}
			// Reads still work, and the state clears.
			if r := c.do(http.MethodGet, tt.parent, tt.apiVersion, nil); r.status != http.StatusOK {
				t.Errorf("GET: %d", r.status)
			}
			clear := map[string]any{}
			for k := range tt.state {
				clear[k] = map[string]string{"provisioningState": "Succeeded", "state": "Ready"}[k]
			}
			if err := e.SetResourceProperties(tt.parent, clear); err != nil {
				t.Fatal(err)
			}
			mustPut(t, c, tt.parent+tt.child, tt.apiVersion, tt.childBody)
		})
	}

	// A Cosmos DB account being deleted.
	acct := rg + "/providers/Microsoft.DocumentDB/databaseAccounts/cosmos"
	body := map[string]any{"location": "westeurope", "properties": map[string]any{"databaseAccountOfferType": "Standard", "locations": []any{map[string]any{"locationName": "westeurope"}}}}
	mustPut(t, c, acct, "2024-08-15", body)
	if err := e.SetResourceProperties(acct, map[string]any{"provisioningState": "Deleting"}); err != nil {
		t.Fatal(err)
	}
	if r := c.do(http.MethodPut, acct, "2024-08-15", body); r.status != http.StatusConflict {
		t.Errorf("PUT of a deleting account: %d %s", r.status, r.raw)
	}
}

func TestPrivateEndpointConnectionsWaitForApproval(t *testing.T) {
	e := newEmulator(t, emulator.WithDefaultLatency(0))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg")
	mustPut(t, c, rg, rgAPI, map[string]any{"location": "westeurope"})
	vnet := rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	mustPut(t, c, vnet, "2024-03-01", map[string]any{"location": "westeurope", "properties": map[string]any{"addressSpace": map[string]any{"addressPrefixes": []any{"10.0.0.0/16"}}}})
	mustPut(t, c, vnet+"/subnets/s", "2024-03-01", map[string]any{"properties": map[string]any{"addressPrefix": "10.0.1.0/24"}})
	pe := rg + "/providers/Microsoft.Network/privateEndpoints/pe"
	body := map[string]any{"location": "westeurope", "properties": map[string]any{
		"subnet": map[string]any{"id": vnet + "/subnets/s"},
		"manualPrivateLinkServiceConnections": []any{map[string]any{"name": "to-sa", "properties": map[string]any{
			"privateLinkServiceId": rg + "/providers/Microsoft.Storage/storageAccounts/sa", "groupIds": []any{"blob"}}}},
	}}
	out := mustPut(t, c, pe, "2024-03-01", body)
	status := func(m map[string]any) string {
		conns, _ := m["properties"].(map[string]any)["manualPrivateLinkServiceConnections"].([]any)
		if len(conns) != 1 {
			return "no connection"
		}
		st, _ := conns[0].(map[string]any)["properties"].(map[string]any)["privateLinkServiceConnectionState"].(map[string]any)
		id, _ := conns[0].(map[string]any)["id"].(string)
		if id != pe+"/manualPrivateLinkServiceConnections/to-sa" {
			return "id " + id
		}
		s, _ := st["status"].(string)
		return s
	}
	if s := status(out); s != "Pending" {
		t.Fatalf("manual connection after create: %s", s)
	}
	if err := e.SetPrivateEndpointConnectionStatus(pe, "to-sa", "Approved"); err != nil {
		t.Fatal(err)
	}
	// A later PUT keeps the approval.
	if s := status(mustPut(t, c, pe, "2024-03-01", body)); s != "Approved" {
		t.Errorf("after approval and a PUT: %s", s)
	}
}

func TestSubnetKeepsIPConfigurations(t *testing.T) {
	e := newEmulator(t, emulator.WithDefaultLatency(0))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg")
	mustPut(t, c, rg, rgAPI, map[string]any{"location": "westeurope"})
	vnet := rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	mustPut(t, c, vnet, "2024-03-01", map[string]any{"location": "westeurope", "properties": map[string]any{"addressSpace": map[string]any{"addressPrefixes": []any{"10.0.0.0/16"}}}})
	sub := vnet + "/subnets/s"
	mustPut(t, c, sub, "2024-03-01", map[string]any{"properties": map[string]any{"addressPrefix": "10.0.1.0/24"}})
	if err := e.SetResourceProperties(sub, map[string]any{"ipConfigurations": []any{map[string]any{"id": "nic1"}}}); err != nil {
		t.Fatal(err)
	}
	out := mustPut(t, c, sub, "2024-03-01", map[string]any{"properties": map[string]any{"addressPrefix": "10.0.1.0/24"}})
	if ips, _ := out["properties"].(map[string]any)["ipConfigurations"].([]any); len(ips) != 1 {
		t.Errorf("ipConfigurations after a PUT: %v", out["properties"])
	}
}

func TestProductDeleteWithSubscriptions(t *testing.T) {
	e := newEmulator(t, emulator.WithDefaultLatency(0))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg")
	mustPut(t, c, rg, rgAPI, map[string]any{"location": "westeurope"})
	svc := rg + "/providers/Microsoft.ApiManagement/service/apim"
	const v = "2022-08-01"
	mustPut(t, c, svc, v, map[string]any{"location": "westeurope", "sku": map[string]any{"name": "Developer", "capacity": 1},
		"properties": map[string]any{"publisherEmail": "a@b.c", "publisherName": "p"}})
	prod := svc + "/products/starter"
	mustPut(t, c, prod, v, map[string]any{"properties": map[string]any{"displayName": "Starter"}})
	mustPut(t, c, svc+"/subscriptions/s1", v, map[string]any{"properties": map[string]any{"displayName": "s1", "scope": "/products/starter"}})
	mustPut(t, c, svc+"/subscriptions/other", v, map[string]any{"properties": map[string]any{"displayName": "o", "scope": "/apis"}})

	if r := c.do(http.MethodDelete, prod, v, nil); r.status != http.StatusBadRequest || r.code() != "ValidationError" {
		t.Fatalf("DELETE of a product with subscriptions: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodDelete, prod+"?deleteSubscriptions=true", v, nil); r.status >= 300 {
		t.Fatalf("DELETE with deleteSubscriptions: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, svc+"/subscriptions/s1", v, nil); r.status != http.StatusNotFound {
		t.Errorf("the product's subscription survived: %d", r.status)
	}
	if r := c.do(http.MethodGet, svc+"/subscriptions/other", v, nil); r.status != http.StatusOK {
		t.Errorf("another subscription went: %d", r.status)
	}
}

func TestAliasCreatesAndCancelsSubscription(t *testing.T) {
	e := newEmulator(t, emulator.WithDefaultLatency(0))
	_, sp := ownerClient(t, e)
	if err := e.AssignRole(sp.ObjectID, "Owner", "/"); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, e, secretCred(t, e, sp), -1)
	alias := "/providers/Microsoft.Subscription/aliases/team"
	out := mustPut(t, c, alias, "2021-10-01", map[string]any{"properties": map[string]any{"displayName": "Team", "workload": "Production", "billingScope": "/billing"}})
	sub, _ := out["properties"].(map[string]any)["subscriptionId"].(string)
	if sub == "" || e.SubscriptionState(sub) != "Enabled" {
		t.Fatalf("alias %v: subscription %q state %q", out, sub, e.SubscriptionState(sub))
	}
	r := c.do(http.MethodPost, "/subscriptions/"+sub+"/providers/Microsoft.Subscription/cancel", "2021-10-01", nil)
	if r.status != http.StatusOK || r.str("subscriptionId") != sub {
		t.Fatalf("cancel: %d %s", r.status, r.raw)
	}
	if got := c.do(http.MethodGet, "/subscriptions/"+sub, "2022-12-01", nil); got.str("state") != "Disabled" {
		t.Errorf("GET of the cancelled subscription: %s", got.raw)
	}
}

func TestBackupInstanceProtectionStatus(t *testing.T) {
	e := newEmulator(t, emulator.WithDefaultLatency(0))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg")
	mustPut(t, c, rg, rgAPI, map[string]any{"location": "westeurope"})
	vault := rg + "/providers/Microsoft.DataProtection/backupVaults/bv"
	const v = "2023-11-01"
	mustPut(t, c, vault, v, map[string]any{"location": "westeurope", "properties": map[string]any{"storageSettings": []any{}}})
	bi := vault + "/backupInstances/disk"
	body := map[string]any{"properties": map[string]any{"objectType": "BackupInstance"}}
	st := func(m map[string]any) string {
		ps, _ := m["properties"].(map[string]any)["protectionStatus"].(map[string]any)
		s, _ := ps["status"].(string)
		return s
	}
	if s := st(mustPut(t, c, bi, v, body)); s != "ProtectionConfigured" {
		t.Fatalf("new instance: %q", s)
	}
	if err := e.SetResourceProperties(bi, map[string]any{"protectionStatus": map[string]any{"status": "ProtectionError", "errorDetails": map[string]any{"code": "UserErrorMissingPermissions"}}}); err != nil {
		t.Fatal(err)
	}
	if s := st(mustPut(t, c, bi, v, body)); s != "ProtectionError" {
		t.Errorf("a PUT keeps the status Azure owns: %q", s)
	}
	if r := c.do(http.MethodPost, bi+"/sync", v, map[string]any{"syncType": "Default"}); r.status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, bi, v, nil); !strings.Contains(string(r.raw), `"ProtectionConfigured"`) {
		t.Errorf("after sync: %s", r.raw)
	}
}
