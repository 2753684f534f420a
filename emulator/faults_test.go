package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/gitaso/gitaso/emulator"
)

// TestResetAfterServing proves Faults.ResetAfterRate: the write takes effect (a resource group is created, a
// long-running namespace create starts, a delete is carried out) while the client gets no response at all, only a
// broken connection.
func TestResetAfterServing(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithSeed(11))
	c, _ := ownerClient(t, e) // no client retries: the first reset is what the test sees
	rg := rgPath(e, "rg-reset-after")
	ns := rg + "/providers/Microsoft.ServiceBus/namespaces/sbresetafter"
	send := func(method, path, apiVersion string, body any) (*http.Response, error) {
		t.Helper()
		req, err := runtime.NewRequest(context.Background(), method, e.ARMEndpoint()+path+"?api-version="+apiVersion)
		if err != nil {
			t.Fatal(err)
		}
		if body != nil {
			b, _ := json.Marshal(body)
			if err := req.SetBody(streamingNopCloser(b), "application/json"); err != nil {
				t.Fatal(err)
			}
		}
		return c.pl.Do(req)
	}

	e.SetFaults(emulator.Faults{ResetAfterRate: 1, Methods: []string{http.MethodPut, http.MethodDelete}})
	for _, w := range []struct {
		method, path, apiVersion string
		body                     any
	}{
		{http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2", "tags": map[string]any{"written": "yes"}}},
		{http.MethodPut, ns, sbAPI, map[string]any{"location": "westus2", "sku": map[string]any{"name": "Standard"}}},
	} {
		if resp, err := send(w.method, w.path, w.apiVersion, w.body); err == nil {
			resp.Body.Close()
			t.Fatalf("%s %s: got status %d, want a connection reset", w.method, w.path, resp.StatusCode)
		}
	}
	// Reads are not faulted (Methods): the writes took effect.
	if r := c.do(http.MethodGet, rg, rgAPI, nil); r.status != http.StatusOK || r.body["tags"].(map[string]any)["written"] != "yes" {
		t.Fatalf("resource group after a reset-after PUT: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, ns, sbAPI, nil); r.status != http.StatusOK {
		t.Fatalf("namespace after a reset-after PUT: %d %s", r.status, r.raw)
	}
	if resp, err := send(http.MethodDelete, ns, sbAPI, nil); err == nil {
		resp.Body.Close()
		t.Fatalf("DELETE: got status %d, want a connection reset", resp.StatusCode)
	}
	e.SetFaults(emulator.Faults{})
	if r := c.do(http.MethodGet, ns, sbAPI, nil); r.status != http.StatusNotFound && r.str("properties", "provisioningState") != "Deleting" {
		t.Fatalf("namespace after a reset-after DELETE: %d %s", r.status, r.raw)
	}

	var resets int
	for _, l := range e.RequestLog() {
		if l.Fault == "reset-after" {
			resets++
			if l.Status != 0 || (l.Method != http.MethodPut && l.Method != http.MethodDelete) {
				t.Errorf("log entry %s %s: status %d, want 0 (reset)", l.Method, l.Path, l.Status)
			}
		}
	}
	if s := e.Stats(); resets != 3 || s.ByStatus[0] != 3 || s.FaultsInjected != 3 {
		t.Errorf("reset-after faults logged %d, stats %d resets %d faults; want 3", resets, s.ByStatus[0], s.FaultsInjected)
	}
}

// TestResetAfterAdmin sets the fault through the admin API.
func TestResetAfterAdmin(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	tok := e.AdminToken()
	if st, b := adminDo(t, e, "PUT", "/_admin/faults", map[string]any{"resetAfterRate": 0.25, "rate500": 0.1}, tok); st != http.StatusOK {
		t.Fatalf("set faults: %d %s", st, b)
	}
	if f := e.CurrentFaults(); f.ResetAfterRate != 0.25 || f.Rate500 != 0.1 {
		t.Errorf("faults after PUT: %+v", f)
	}
	st, b := adminDo(t, e, "GET", "/_admin/faults", nil, tok)
	var got map[string]any
	if st != http.StatusOK || json.Unmarshal(b, &got) != nil || got["resetAfterRate"] != 0.25 {
		t.Errorf("GET faults: %d %s", st, b)
	}
}
