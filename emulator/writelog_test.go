package emulator_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gitaso/gitaso/emulator"
)

func TestWriteLogRecordsWritesWithBodies(t *testing.T) {
	var mu sync.Mutex
	var got []emulator.WriteRecord
	e := newEmulator(t, emulator.WithWriteLog(func(w emulator.WriteRecord) {
		mu.Lock()
		got = append(got, w)
		mu.Unlock()
	}))
	c, sp := ownerClient(t, e)
	rg := rgPath(e, "anchor-rg")
	if r := c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westeurope", "tags": map[string]any{"a": "b"}}); r.status != http.StatusCreated {
		t.Fatalf("PUT resource group: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, rg, rgAPI, nil); r.status != http.StatusOK {
		t.Fatalf("GET resource group: %d", r.status)
	}
	if r := c.do(http.MethodPut, rg+"/providers/Microsoft.Bogus/things/x", "", map[string]any{}); r.status != http.StatusBadRequest {
		t.Fatalf("PUT without api-version: %d, want 400", r.status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("write log has %d records, want 2 (the GET and token requests are not writes): %+v", len(got), got)
	}
	first := got[0]
	if first.Method != http.MethodPut || first.Path != rg || first.APIVersion != rgAPI || first.Status != http.StatusCreated {
		t.Errorf("first record = %s %s api-version %s status %d", first.Method, first.Path, first.APIVersion, first.Status)
	}
	if first.Principal != sp.ObjectID || first.UserAgent == "" {
		t.Errorf("first record written by principal %q user agent %q, want %q and the client's User-Agent", first.Principal, first.UserAgent, sp.ObjectID)
	}
	var body map[string]any
	if err := json.Unmarshal(first.Body, &body); err != nil {
		t.Fatalf("body %q: %v", first.Body, err)
	}
	if body["location"] != "westeurope" || body["tags"].(map[string]any)["a"] != "b" {
		t.Errorf("body = %v, want the PUT's body", body)
	}
	if got[1].Status != http.StatusBadRequest || got[1].APIVersion != "" {
		t.Errorf("refused write = %+v, want status 400 and no api-version", got[1])
	}
	// The handler still saw the body: the resource group was stored with its tag.
	var stored map[string]any
	for _, r := range e.Resources() {
		if strings.EqualFold(r.ID, rg) {
			_ = json.Unmarshal(r.Body, &stored)
		}
	}
	if stored == nil || stored["tags"].(map[string]any)["a"] != "b" {
		t.Errorf("Resources() has %v for %s, want the stored group with its tag", stored, rg)
	}
}
