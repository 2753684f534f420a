package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
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

// vaultRecorder records the createMode of every vault PUT the emulator receives.
type vaultRecorder struct {
	mu    sync.Mutex
	modes []string
}

func (v *vaultRecorder) front(arm http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(strings.ToLower(r.URL.Path), "/microsoft.keyvault/vaults/") {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			var body struct {
				Properties struct{ CreateMode string } `json:"properties"`
			}
			_ = json.Unmarshal(b, &body)
			v.mu.Lock()
			v.modes = append(v.modes, body.Properties.CreateMode)
			v.mu.Unlock()
		}
		arm.ServeHTTP(w, r)
	})
}

func (v *vaultRecorder) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.modes)
}

func (v *vaultRecorder) last() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.modes) == 0 {
		return ""
	}
	return v.modes[len(v.modes)-1]
}

// plannedCreateMode is the vault's createMode in the plan's request body.
func plannedCreateMode(t *testing.T, p *planner.Plan) (mode string, knownAfterApply bool) {
	t.Helper()
	for _, r := range p.Resources {
		if r.Kind != "Vault" {
			continue
		}
		var body struct {
			Properties struct{ CreateMode string } `json:"properties"`
		}
		if err := json.Unmarshal(r.Request.Body, &body); err != nil {
			t.Fatal(err)
		}
		return body.Properties.CreateMode, slices.Contains(r.KnownAfterApply, "/properties/createMode")
	}
	t.Fatal("no vault in the plan")
	return "", false
}

// TestVaultCreateModePlanAgreesWithApply: the plan (offline: nothing read from Azure) shows the createMode ARM
// receives, or "(known after apply)" where only the apply's look-up of a soft-deleted vault can tell; the apply
// then sends what the emulator receives.
func TestVaultCreateModePlanAgreesWithApply(t *testing.T) {
	ctx := context.Background()
	rgOther := strings.NewReplacer("name: rg", "name: other").Replace(rg)
	vaultIn := func(group, mode string) string {
		return strings.Replace(vault(mode), "owner: {name: rg}", "owner: {name: "+group+"}", 1)
	}
	tests := []struct {
		name     string
		setup    func(t *testing.T, m *emu) // before the plan
		mode     string
		planned  string // in the offline plan's body
		unknown  bool
		received string // by the emulator; "" when the apply must fail
		failure  string
	}{
		{name: "no vault", mode: "createOrRecover", planned: planner.KnownAfterApply, unknown: true, received: "default"},
		{name: "soft-deleted in the same group", mode: "createOrRecover", planned: planner.KnownAfterApply, unknown: true, received: "recover",
			setup: func(t *testing.T, m *emu) {
				rr := m.apply(t, rg, vault("default"))["teamkv"]
				mustOK(t, rr)
				if err := m.cli.Delete(ctx, rr.Resource.ARMID, rr.Resource.APIVersion); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "soft-deleted in another group", mode: "createOrRecover", planned: planner.KnownAfterApply, unknown: true,
			failure: "cannot recover KeyVault: new resourceGroup rg does not match old resource group other",
			setup: func(t *testing.T, m *emu) {
				rr := m.apply(t, rgOther, vaultIn("other", "default"))["teamkv"]
				mustOK(t, rr)
				if err := m.cli.Delete(ctx, rr.Resource.ARMID, rr.Resource.APIVersion); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "purgeThenCreate over a soft-deleted vault", mode: "purgeThenCreate", planned: "default", received: "default",
			setup: func(t *testing.T, m *emu) {
				rr := m.apply(t, rg, vault("default"))["teamkv"]
				mustOK(t, rr)
				if err := m.cli.Delete(ctx, rr.Resource.ARMID, rr.Resource.APIVersion); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "purgeThenCreate, nothing to purge", mode: "purgeThenCreate", planned: "default", received: "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &vaultRecorder{}
			m := newEmuVia(t, rec.front)
			if tt.setup != nil {
				tt.setup(t, m)
			}
			mode, unknown := plannedCreateMode(t, m.plan(t, rg, vault(tt.mode)))
			if mode != tt.planned || unknown != tt.unknown {
				t.Errorf("plan shows createMode %q (known after apply listed: %v), want %q (%v)", mode, unknown, tt.planned, tt.unknown)
			}
			before := rec.count()
			rr := m.apply(t, rg, vault(tt.mode))["teamkv"]
			if tt.failure != "" {
				if rr.Outcome != executor.Failed || rr.Ready.Severity != record.SeverityError || rr.Ready.Message != tt.failure {
					t.Fatalf("apply: %s %+v", rr.Outcome, rr.Ready)
				}
				if n := rec.count(); n != before {
					t.Errorf("%d vault PUTs were sent", n-before)
				}
				return
			}
			mustOK(t, rr)
			if got := rec.last(); got != tt.received {
				t.Errorf("emulator received createMode %q, want %q", got, tt.received)
			}
			if !tt.unknown && rec.last() != mode {
				t.Errorf("plan %q and apply %q disagree", mode, rec.last())
			}
		})
	}

	// A plan that read the vault from Azure knows it exists: no soft-deleted vault can, so createOrRecover is
	// default, the value the emulator then receives.
	rec := &vaultRecorder{}
	m := newEmuVia(t, rec.front)
	rr := m.apply(t, rg, vault("default"))["teamkv"]
	mustOK(t, rr)
	cur, err := m.cli.Get(ctx, rr.Resource.ARMID, rr.Resource.APIVersion)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.graphPlan(t, rg, vault("createOrRecover"))
	p, err := g.Plan(planner.Input{Observed: planner.Observed{strings.ToLower(rr.Resource.ARMID): cur}})
	if err != nil {
		t.Fatal(err)
	}
	if mode, unknown := plannedCreateMode(t, p); mode != "default" || unknown {
		t.Errorf("plan of an existing vault shows %q (unknown %v)", mode, unknown)
	}
	for _, r := range p.Resources {
		for _, c := range r.Changes {
			if c.Path == "/properties/createMode" {
				t.Errorf("createMode is compared with Azure: %+v", c)
			}
		}
	}
	mustOK(t, m.apply(t, rg, vault("createOrRecover"))["teamkv"])
	if rec.last() != "default" {
		t.Errorf("emulator received %q", rec.last())
	}
}
