package emulator_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

const activityAPI = "2015-04-01"

type activityPage struct {
	Value []struct {
		OperationName  struct{ Value string } `json:"operationName"`
		Status         struct{ Value string } `json:"status"`
		ResourceID     string                 `json:"resourceId"`
		ResourceGroup  string                 `json:"resourceGroupName"`
		EventTimestamp time.Time              `json:"eventTimestamp"`
		Caller         string                 `json:"caller"`
		CorrelationID  string                 `json:"correlationId"`
		EventName      struct{ Value string } `json:"eventName"`
		EventDataID    string                 `json:"eventDataId"`
	} `json:"value"`
	NextLink string `json:"nextLink"`
}

func activityQuery(c *client, e *emulator.Emulator, filter, sel string) (int, activityPage, []byte) {
	q := url.Values{"$filter": {filter}}
	if sel != "" {
		q.Set("$select", sel)
	}
	r := c.do(http.MethodGet, "/subscriptions/"+e.SubscriptionID()+"/providers/Microsoft.Insights/eventtypes/management/values?"+q.Encode(), activityAPI, nil)
	var page activityPage
	_ = json.Unmarshal(r.raw, &page)
	return r.status, page, r.raw
}

func window(from time.Time) string {
	return fmt.Sprintf("eventTimestamp ge '%s' and eventTimestamp le '%s'", from.UTC().Format(time.RFC3339Nano), time.Now().UTC().Add(time.Minute).Format(time.RFC3339Nano))
}

// TestActivityLog records control-plane writes as Azure's Activity Log does and answers its query: Started then
// Succeeded for a synchronous write, Started, Accepted and (when the operation ends) Succeeded for a long-running
// one, Failed for a refused write, newest first, filtered by resource group and resource, $select, paging; writes
// through the admin API (drift outside gitaso) show with their caller.
func TestActivityLog(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, sp := ownerClient(t, e)
	start := time.Now().Add(-time.Second)
	rg := rgPath(e, "rg-activity")
	other := rgPath(e, "rg-other")
	c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2"})
	c.do(http.MethodPut, other, rgAPI, map[string]any{"location": "westus2"})
	uai := rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id1"
	c.do(http.MethodPut, uai, miAPI, map[string]any{"location": "westus2"})
	sa := rg + "/providers/Microsoft.Storage/storageAccounts/saactivity"
	if _, err := c.putAndWait(sa, storageAPI, map[string]any{"location": "westus2", "kind": "StorageV2", "sku": map[string]any{"name": "Standard_LRS"}}); err != nil {
		t.Fatal(err)
	}
	if r := c.do(http.MethodPut, rg+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/nolocation", miAPI, map[string]any{}); r.status != http.StatusBadRequest {
		t.Fatalf("refused write: %d", r.status)
	}
	c.do(http.MethodGet, uai, miAPI, nil) // reads are not recorded
	if err := e.SetResourceProperties(uai, map[string]any{"drifted": true}); err != nil {
		t.Fatal(err)
	}
	if st, b := adminDo(t, e, "PUT", "/_admin/resource", map[string]any{"id": other + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/portal",
		"body": map[string]any{"location": "westus2"}, "caller": "someone@example.com"}, e.AdminToken()); st != http.StatusNoContent {
		t.Fatalf("out-of-band write: %d %s", st, b)
	}

	gone := rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/gone"
	c.do(http.MethodPut, gone, miAPI, map[string]any{"location": "westus2"})
	if st, b := adminDo(t, e, "DELETE", "/_admin/resource?id="+url.QueryEscape(gone)+"&caller=portal", nil, e.AdminToken()); st != http.StatusNoContent {
		t.Fatalf("out-of-band delete: %d %s", st, b)
	}
	if r := c.do(http.MethodGet, gone, miAPI, nil); r.status != http.StatusNotFound {
		t.Errorf("after the out-of-band delete: %d", r.status)
	}

	st, page, raw := activityQuery(c, e, window(start), "")
	if st != http.StatusOK {
		t.Fatalf("query: %d %s", st, raw)
	}
	type ev struct{ op, status, id, caller string }
	var got []ev
	for i, v := range page.Value {
		if i > 0 && v.EventTimestamp.After(page.Value[i-1].EventTimestamp) {
			t.Errorf("events not newest first at %d", i)
		}
		got = append(got, ev{v.OperationName.Value, v.Status.Value, v.ResourceID, v.Caller})
	}
	has := func(want ev) bool {
		for _, g := range got {
			if strings.EqualFold(g.op, want.op) && g.status == want.status && strings.EqualFold(g.id, want.id) && (want.caller == "" || g.caller == want.caller) {
				return true
			}
		}
		return false
	}
	for _, want := range []ev{
		{"Microsoft.Resources/subscriptions/resourceGroups/write", "Started", rg, sp.ObjectID},
		{"Microsoft.Resources/subscriptions/resourceGroups/write", "Succeeded", rg, sp.ObjectID},
		{"Microsoft.ManagedIdentity/userAssignedIdentities/write", "Succeeded", uai, sp.ObjectID},
		{"Microsoft.Storage/storageAccounts/write", "Started", sa, ""},
		{"Microsoft.Storage/storageAccounts/write", "Accepted", sa, ""},
		{"Microsoft.Storage/storageAccounts/write", "Succeeded", sa, sp.ObjectID},
		{"Microsoft.ManagedIdentity/userAssignedIdentities/write", "Failed", rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/nolocation", ""},
		{"Microsoft.ManagedIdentity/userAssignedIdentities/write", "Succeeded", uai, emulator.AdminCaller},
		{"Microsoft.ManagedIdentity/userAssignedIdentities/write", "Succeeded", other + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/portal", "someone@example.com"},
		{"Microsoft.ManagedIdentity/userAssignedIdentities/delete", "Succeeded", gone, "portal"},
	} {
		if !has(want) {
			t.Errorf("missing event %+v in %+v", want, got)
		}
	}
	for _, g := range got {
		if strings.HasSuffix(g.op, "/read") {
			t.Errorf("a read was recorded: %+v", g)
		}
	}

	// Filters: a resource group, a resource; $select keeps only the named fields.
	_, byRG, _ := activityQuery(c, e, window(start)+" and resourceGroupName eq 'RG-OTHER'", "")
	if len(byRG.Value) == 0 {
		t.Error("no events for rg-other")
	}
	for _, v := range byRG.Value {
		if !strings.EqualFold(v.ResourceGroup, "rg-other") {
			t.Errorf("resourceGroupName filter let through %s", v.ResourceID)
		}
	}
	_, byURI, raw := activityQuery(c, e, window(start)+" and resourceUri eq '"+sa+"'", "eventTimestamp,operationName,status")
	if len(byURI.Value) != 3 {
		t.Errorf("storage account events: %s", raw)
	}
	var sel struct{ Value []map[string]any }
	_ = json.Unmarshal(raw, &sel)
	for _, v := range sel.Value {
		if len(v) != 3 || v["resourceId"] != nil {
			t.Errorf("$select: %v", v)
		}
	}
	// The window: nothing before start.
	_, none, _ := activityQuery(c, e, fmt.Sprintf("eventTimestamp ge '%s' and eventTimestamp le '%s'",
		start.Add(-time.Hour).UTC().Format(time.RFC3339), start.Add(-time.Minute).UTC().Format(time.RFC3339)), "")
	if len(none.Value) != 0 {
		t.Errorf("events outside the window: %d", len(none.Value))
	}
	// Refused queries.
	for _, f := range []string{"", "resourceGroupName eq 'x'", "eventTimestamp ge 'yesterday'", window(start) + " or caller eq 'x'",
		window(start) + " and resourceGroupName eq 'a' and resourceUri eq 'b'"} {
		if st, _, raw := activityQuery(c, e, f, ""); st != http.StatusBadRequest {
			t.Errorf("filter %q: %d %s", f, st, raw)
		}
	}
}

// TestActivityLogPaging pages events with nextLink, newest first, without losing or repeating one.
func TestActivityLogPaging(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	start := time.Now().Add(-time.Second)
	rg := rgPath(e, "rg-paging")
	c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2"})
	const n = 260
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id%03d", rg, i)
		if r := c.do(http.MethodPut, id, miAPI, map[string]any{"location": "westus2"}); r.status != http.StatusCreated {
			t.Fatalf("PUT: %d", r.status)
		}
	}
	_, page, raw := activityQuery(c, e, window(start)+" and resourceGroupName eq 'rg-paging'", "")
	seen := map[string]int{}
	ids := map[string]bool{}
	pages := 1
	for {
		for _, v := range page.Value {
			seen[v.ResourceID+" "+v.Status.Value]++
			if ids[v.EventDataID] || len(v.EventDataID) != 36 {
				t.Errorf("eventDataId %q repeated or malformed", v.EventDataID)
			}
			ids[v.EventDataID] = true
		}
		if page.NextLink == "" {
			break
		}
		pages++
		u, _ := url.Parse(page.NextLink)
		r := c.do(http.MethodGet, u.RequestURI(), "", nil)
		page = activityPage{}
		if err := json.Unmarshal(r.raw, &page); err != nil || r.status != http.StatusOK {
			t.Fatalf("next page: %d %s", r.status, r.raw)
		}
	}
	if want := 2*n + 2; len(seen) != want || pages < 3 {
		t.Errorf("%d distinct events over %d pages, want %d over at least 3 (%s…)", len(seen), pages, want, raw[:min(len(raw), 200)])
	}
	for k, v := range seen {
		if v != 1 {
			t.Errorf("%s seen %d times", k, v)
		}
	}
	if got := e.ActivityLog(e.SubscriptionID(), start); len(got) != 2*n+2 {
		t.Errorf("ActivityLog: %d events", len(got))
	}
}
