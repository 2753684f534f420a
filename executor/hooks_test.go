package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gitaso/gitaso/executor"
)

// armSemantics is an HTTPS front for the emulator adding two behaviours of
// real ARM that the emulator does not model (and that the hooks exist for):
//
//   - Key Vault soft delete: a deleted vault stays in
//     locations/{l}/deletedVaults/{name} until purged; creating a vault of
//     that name fails with a conflict unless createMode is recover, which
//     needs a soft-deleted vault.
//   - Embedded child collections: a VNet's GET lists its subnets in
//     properties.subnets, and a VNet PUT deletes the subnets its body does
//     not list.
//
// Everything else goes to the emulator unchanged.
type armSemantics struct {
	arm     http.Handler
	mu      sync.Mutex
	deleted map[string]string // lower vault name → vault ID
	calls   []string          // "METHOD path?query" seen here
}

var (
	vaultRE        = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.KeyVault/vaults/([^/]+)$`)
	deletedVaultRE = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/providers/Microsoft\.KeyVault/locations/[^/]+/deletedVaults/([^/]+)(/purge)?$`)
	vnetRE         = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/virtualNetworks/[^/]+$`)
)

func (a *armSemantics) sub(r *http.Request, method, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path+"?"+r.URL.RawQuery, bytes.NewReader(body))
	req.Header = r.Header.Clone()
	req.Host = r.Host
	rec := httptest.NewRecorder()
	a.arm.ServeHTTP(rec, req)
	return rec
}

func writeRec(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func armErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

func (a *armSemantics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if !strings.Contains(r.URL.RawQuery, "operation") {
		a.mu.Lock()
		a.calls = append(a.calls, r.Method+" "+p+"?"+r.URL.RawQuery)
		a.mu.Unlock()
	}
	body, _ := io.ReadAll(r.Body)
	if m := deletedVaultRE.FindStringSubmatch(p); m != nil {
		name := strings.ToLower(m[1])
		a.mu.Lock()
		id, ok := a.deleted[name]
		if ok && m[2] != "" && r.Method == http.MethodPost {
			delete(a.deleted, name)
		}
		a.mu.Unlock()
		switch {
		case !ok:
			armErr(w, http.StatusNotFound, "ResourceNotFound", "deleted vault "+m[1]+" not found")
		case m[2] != "":
			w.WriteHeader(http.StatusOK)
		default:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"name": m[1], "properties": map[string]any{"vaultId": id}})
		}
		return
	}
	if m := vaultRE.FindStringSubmatch(p); m != nil {
		name := strings.ToLower(m[1])
		switch r.Method {
		case http.MethodPut:
			var v struct {
				Properties struct{ CreateMode string } `json:"properties"`
			}
			_ = json.Unmarshal(body, &v)
			a.mu.Lock()
			_, soft := a.deleted[name]
			a.mu.Unlock()
			switch {
			case soft && v.Properties.CreateMode != "recover":
				armErr(w, http.StatusConflict, "ConflictError", "A vault with the same name already exists in deleted state.")
				return
			case !soft && v.Properties.CreateMode == "recover":
				armErr(w, http.StatusNotFound, "ResourceNotFound", "no deleted vault to recover")
				return
			case soft:
				a.mu.Lock()
				delete(a.deleted, name)
				a.mu.Unlock()
			}
		case http.MethodDelete:
			rec := a.sub(r, r.Method, p, body)
			if rec.Code < 300 {
				a.mu.Lock()
				a.deleted[name] = p
				a.mu.Unlock()
			}
			writeRec(w, rec)
			return
		}
	}
	if vnetRE.MatchString(p) {
		switch r.Method {
		case http.MethodGet:
			rec := a.sub(r, r.Method, p, nil)
			if rec.Code == http.StatusOK {
				rec = a.withSubnets(r, p, rec)
			}
			writeRec(w, rec)
			return
		case http.MethodPut:
			rec := a.sub(r, r.Method, p, body)
			var v struct {
				Properties struct {
					Subnets []struct{ Name string } `json:"subnets"`
				} `json:"properties"`
			}
			_ = json.Unmarshal(body, &v)
			keep := map[string]bool{}
			for _, s := range v.Properties.Subnets {
				keep[strings.ToLower(s.Name)] = true
			}
			for _, s := range a.subnets(r, p) {
				if !keep[strings.ToLower(s.Name)] {
					a.sub(r, http.MethodDelete, p+"/subnets/"+s.Name, nil)
				}
			}
			writeRec(w, rec)
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	a.arm.ServeHTTP(w, r)
}

type subnet struct {
	Name       string          `json:"name"`
	ID         string          `json:"id"`
	Properties json.RawMessage `json:"properties"`
}

func (a *armSemantics) subnets(r *http.Request, vnet string) []subnet {
	rec := a.sub(r, http.MethodGet, vnet+"/subnets", nil)
	var l struct{ Value []subnet }
	_ = json.Unmarshal(rec.Body.Bytes(), &l)
	return l.Value
}

func (a *armSemantics) withSubnets(r *http.Request, vnet string, rec *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	var doc map[string]any
	if json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
		return rec
	}
	props, _ := doc["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		doc["properties"] = props
	}
	l := a.subnets(r, vnet)
	if l == nil {
		l = []subnet{}
	}
	props["subnets"] = l
	out := httptest.NewRecorder()
	for k, v := range rec.Header() {
		out.Header()[k] = v
	}
	out.Header().Del("Content-Length")
	out.WriteHeader(rec.Code)
	_ = json.NewEncoder(out).Encode(doc)
	return out
}

func (a *armSemantics) seen(substr string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, c := range a.calls {
		if strings.Contains(strings.ToLower(c), strings.ToLower(substr)) {
			out = append(out, c)
		}
	}
	return out
}

func newSemantics(t *testing.T) (*emu, *armSemantics) {
	a := &armSemantics{deleted: map[string]string{}}
	m := newEmuVia(t, func(arm http.Handler) http.Handler { a.arm = arm; return a })
	return m, a
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
	m, a := newSemantics(t)
	ctx := context.Background()

	// No soft-deleted vault: createOrRecover sends default.
	rr := m.apply(t, rg, vault("createOrRecover"))["teamkv"]
	mustOK(t, rr)
	if got := createModeSent(t, rr); got != "default" {
		t.Errorf("createMode sent %q, want default", got)
	}
	if got := a.seen("/deletedVaults/teamkv?api-version=2024-11-01"); len(got) != 1 || !strings.HasPrefix(got[0], "GET /subscriptions/"+m.sub+"/providers/Microsoft.KeyVault/locations/westeurope/") {
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
	m, a := newSemantics(t)
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
	if got := a.seen("/purge?api-version=2024-11-01"); len(got) != 1 || !strings.HasPrefix(got[0], "POST ") {
		t.Errorf("purge calls %v", got)
	}
	// Nothing to purge the second time.
	mustOK(t, m.apply(t, rg, vault("purgeThenCreate"))["teamkv"])
	if got := a.seen("/purge"); len(got) != 1 {
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
	m, _ := newSemantics(t)
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
