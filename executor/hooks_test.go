package executor_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/executor"
)

// calls returns the emulator's logged requests, as "METHOD path?query", that contain substr.
func (m *emu) calls(substr string) []string {
	var out []string
	for _, l := range m.e.RequestLog() {
		if c := l.Method + " " + l.Path + "?" + l.Query; strings.Contains(strings.ToLower(c), strings.ToLower(substr)) {
			out = append(out, c)
		}
	}
	return out
}

func vault(mode string) string {
	return `apiVersion: keyvault.azure.com/v1api20230701
kind: Vault
metadata:
  name: teamkv
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  properties:
    createMode: ` + mode + `
    tenantId: 00000000-0000-0000-0000-000000000001
    sku: {family: A, name: standard}
    accessPolicies: []`
}

func createModeSent(t *testing.T, rr *executor.ResourceResult) string {
	t.Helper()
	var v struct {
		Properties struct{ CreateMode string } `json:"properties"`
	}
	if err := json.Unmarshal(rr.Body, &v); err != nil {
		t.Fatal(err)
	}
	return v.Properties.CreateMode
}

func TestVaultCreateOrRecover(t *testing.T) {
	// The emulator keeps a deleted vault soft-deleted (locations/{l}/deletedVaults/{name}) until purged, and
	// refuses a create of that name unless createMode is recover, as ARM does.
	m := newEmu(t)
	ctx := context.Background()

	// No soft-deleted vault: createOrRecover sends default.
	rr := m.apply(t, rg, vault("createOrRecover"))["teamkv"]
	mustOK(t, rr)
	if got := createModeSent(t, rr); got != "default" {
		t.Errorf("createMode sent %q, want default", got)
	}
	if got := m.calls("/deletedVaults/teamkv?api-version=2024-11-01"); len(got) != 1 || !strings.HasPrefix(got[0], "GET /subscriptions/"+m.sub+"/providers/Microsoft.KeyVault/locations/westeurope/") {
		t.Errorf("deleted vault look-up %v", got)
	}

	// Someone deletes it: it is soft-deleted, and a plain create conflicts.
	if err := m.cli.Delete(ctx, rr.Resource.ARMID, rr.Resource.APIVersion); err != nil {
		t.Fatal(err)
	}
	if rr := m.apply(t, rg, vault("default"))["teamkv"]; rr.Outcome != executor.Failed || rr.Ready.Reason != "ConflictError" {
		t.Fatalf("default over a soft-deleted vault: %s %+v", rr.Outcome, rr.Ready)
	}
	// createOrRecover recovers it.
	rr = m.apply(t, rg, vault("createOrRecover"))["teamkv"]
	mustOK(t, rr)
	if got := createModeSent(t, rr); got != "recover" {
		t.Errorf("createMode sent %q, want recover", got)
	}
}

func TestVaultPurgeThenCreate(t *testing.T) {
	m := newEmu(t)
	rr := m.apply(t, rg, vault("default"))["teamkv"]
	mustOK(t, rr)
	if err := m.cli.Delete(context.Background(), rr.Resource.ARMID, rr.Resource.APIVersion); err != nil {
		t.Fatal(err)
	}
	rr = m.apply(t, rg, vault("purgeThenCreate"))["teamkv"]
	mustOK(t, rr)
	if got := createModeSent(t, rr); got != "default" {
		t.Errorf("createMode sent %q, want default", got)
	}
	if got := m.calls("/purge?api-version=2024-11-01"); len(got) != 1 || !strings.HasPrefix(got[0], "POST ") {
		t.Errorf("purge calls %v", got)
	}
	// Nothing to purge the second time.
	mustOK(t, m.apply(t, rg, vault("purgeThenCreate"))["teamkv"])
	if got := m.calls("/purge"); len(got) != 1 {
		t.Errorf("purge calls after a second apply %v", got)
	}
}

const vnet = `apiVersion: network.azure.com/v1api20240301
kind: VirtualNetwork
metadata:
  name: vnet
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  addressSpace:
    addressPrefixes: [10.0.0.0/16]
  tags:
    rev: "%s"`

const subnetDoc = `apiVersion: network.azure.com/v1api20240301
kind: VirtualNetworksSubnet
metadata:
  name: apps
  namespace: team
spec:
  owner: {name: vnet}
  addressPrefix: 10.0.1.0/24`

func TestVirtualNetworkKeepsSubnets(t *testing.T) {
	// The emulator lists a VNet's subnets in its GET and deletes the subnets a VNet PUT does not carry, as ARM does.
	m := newEmu(t)
	v := func(rev string) string { return strings.Replace(vnet, "%s", rev, 1) }
	res := m.apply(t, rg, v("1"), subnetDoc)
	mustOK(t, res["vnet"])
	mustOK(t, res["apps"])
	if strings.Contains(string(res["vnet"].Body), "subnets") {
		t.Errorf("first PUT (no VNet yet) should carry no subnets: %s", res["vnet"].Body)
	}
	// The VNet changes; its PUT must carry the subnet managed separately.
	rr := m.apply(t, rg, v("2"), subnetDoc)["vnet"]
	mustOK(t, rr)
	var body struct {
		Tags       map[string]string
		Properties struct {
			Subnets []struct {
				Name       string
				Properties struct{ AddressPrefix string }
			}
		}
	}
	if err := json.Unmarshal(rr.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Properties.Subnets) != 1 || body.Properties.Subnets[0].Name != "apps" || body.Properties.Subnets[0].Properties.AddressPrefix != "10.0.1.0/24" || body.Tags["rev"] != "2" {
		t.Fatalf("VNet body %s", rr.Body)
	}
	// The other members keep the converter's order.
	if i, j := strings.Index(string(rr.Body), `"location"`), strings.Index(string(rr.Body), `"subnets"`); i < 0 || j < i {
		t.Errorf("body order changed: %s", rr.Body)
	}
	if _, err := m.cli.Get(context.Background(), rr.Resource.ARMID+"/subnets/apps", "2024-03-01"); err != nil {
		t.Errorf("subnet was wiped by the VNet PUT: %v", err)
	}
}
