package emulator_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/emulator"
)

// recordedStorageServices are the GET bodies Azure returned for the services of a new StorageV2 Standard_LRS
// account in ASO's recorded storage sample (Test_Samples_CreationAndDeletion/Test_Storage_v20230101, api-version
// 2023-01-01; the services had been PUT with {"name":"default"}), with the account's ID as {sa}.
var recordedStorageServices = map[string]string{
	"blobServices":  `{"sku":{"name":"Standard_LRS","tier":"Standard"},"id":"{sa}/blobServices/default","name":"default","type":"Microsoft.Storage/storageAccounts/blobServices","properties":{"cors":{"corsRules":[]},"deleteRetentionPolicy":{"allowPermanentDelete":false,"enabled":false}}}`,
	"fileServices":  `{"sku":{"name":"Standard_LRS","tier":"Standard"},"id":"{sa}/fileServices/default","name":"default","type":"Microsoft.Storage/storageAccounts/fileServices","properties":{"protocolSettings":{"smb":{}},"cors":{"corsRules":[]},"shareDeleteRetentionPolicy":{"enabled":true,"days":7}}}`,
	"queueServices": `{"id":"{sa}/queueServices/default","name":"default","type":"Microsoft.Storage/storageAccounts/queueServices","properties":{"logging":{"version":"1.0","delete":false,"read":false,"write":false,"retentionPolicy":{"enabled":false}},"cors":{"corsRules":[]}}}`,
	"tableServices": `{"id":"{sa}/tableServices/default","name":"default","type":"Microsoft.Storage/storageAccounts/tableServices","properties":{"cors":{"corsRules":[]}}}`,
}

var storageServiceSegments = []string{"blobServices", "fileServices", "queueServices", "tableServices"}

func recordedService(t *testing.T, sa, segment string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(recordedStorageServices[segment], "{sa}", sa)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func newStorageAccount(t *testing.T, c *client, sa, kind string) {
	t.Helper()
	mustPut(t, c, sa, storageAPI, map[string]any{"kind": kind, "location": "westcentralus", "name": lastSegment(sa),
		"properties": map[string]any{"accessTier": "Hot"}, "sku": map[string]any{"name": "Standard_LRS"}, "tags": nil})
}

func lastSegment(id string) string { return id[strings.LastIndexByte(id, '/')+1:] }

// A storage account is created with its blob, file, queue and table services, as Azure creates them: a table PUT
// straight after the account succeeds, each service reads as Azure's did, the parent's collection lists it,
// /resources and Resource Graph do not, a PUT of a service answers 200 and keeps what it omits, and the services
// go with the account.
func TestStorageAccountDefaultServices(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithDefaultLatency(20*time.Millisecond))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-services")
	putRG(t, c, rg)
	sa := rg + "/providers/Microsoft.Storage/storageAccounts/svcaccount"
	newStorageAccount(t, c, sa, "StorageV2")

	// ASO's StorageAccountsTableServicesTable request, with no table service PUT before it (recorded status 200).
	table := sa + "/tableServices/default/tables/events"
	if r := c.do(http.MethodPut, table, storageAPI, map[string]any{"name": "events"}); r.status != 200 {
		t.Fatalf("table PUT straight after the account: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, table, storageAPI, nil); r.status != 200 {
		t.Fatalf("table GET: %d %s", r.status, r.raw)
	}

	for _, seg := range storageServiceSegments {
		want := recordedService(t, sa, seg)
		r := c.do(http.MethodGet, sa+"/"+seg+"/default", storageAPI, nil)
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", seg, r.status, r.raw)
		}
		if d := cmp.Diff(want, r.body); d != "" {
			t.Errorf("GET %s (-recorded +emulator):\n%s", seg, d)
		}
		l := c.do(http.MethodGet, sa+"/"+seg, storageAPI, nil)
		if d := cmp.Diff(map[string]any{"value": []any{want}}, l.body); l.status != 200 || d != "" {
			t.Errorf("GET %s collection: %d (-want +got):\n%s", seg, l.status, d)
		}
	}

	if r := c.do(http.MethodGet, rg+"/resources", rgAPI, nil); len(r.body["value"].([]any)) != 1 || !strings.EqualFold(r.body["value"].([]any)[0].(map[string]any)["id"].(string), sa) {
		t.Errorf("RG resources list the services: %s", r.raw)
	}
	graph := c.do(http.MethodPost, "/providers/Microsoft.ResourceGraph/resources", "2021-03-01", map[string]any{
		"subscriptions": []string{e.SubscriptionID()}, "query": "Resources | where id contains 'svcaccount' | project id"})
	if data, _ := graph.body["data"].([]any); graph.status != 200 || len(data) != 1 {
		t.Errorf("Resource Graph rows: %d %s", graph.status, graph.raw)
	}

	// A PUT of an existing service answers 200 (as recorded) and keeps the properties its body omits.
	blob := sa + "/blobServices/default"
	r := c.do(http.MethodPut, blob, storageAPI, map[string]any{"name": "default"})
	if r.status != 200 {
		t.Fatalf("blob service PUT: %d %s", r.status, r.raw)
	}
	if d := cmp.Diff(recordedService(t, sa, "blobServices"), c.do(http.MethodGet, blob, storageAPI, nil).body); d != "" {
		t.Errorf("blob service after an empty PUT (-recorded +emulator):\n%s", d)
	}
	retention := map[string]any{"enabled": true, "days": float64(7)}
	if r := c.do(http.MethodPut, blob, storageAPI, map[string]any{"properties": map[string]any{"deleteRetentionPolicy": retention}}); r.status != 200 {
		t.Fatalf("blob service PUT: %d %s", r.status, r.raw)
	}
	want := recordedService(t, sa, "blobServices")
	want["properties"].(map[string]any)["deleteRetentionPolicy"] = retention
	if d := cmp.Diff(want, c.do(http.MethodGet, blob, storageAPI, nil).body); d != "" {
		t.Errorf("blob service after setting a policy (-want +emulator):\n%s", d)
	}

	// The services show the account's sku as it changes.
	mustPut(t, c, sa, storageAPI, map[string]any{"kind": "StorageV2", "location": "westcentralus", "sku": map[string]any{"name": "Standard_GRS"}})
	for _, seg := range []string{"blobServices", "fileServices"} {
		got := c.do(http.MethodGet, sa+"/"+seg+"/default", storageAPI, nil).body["sku"]
		if d := cmp.Diff(map[string]any{"name": "Standard_GRS", "tier": "Standard"}, got); d != "" {
			t.Errorf("%s sku after the account's update (-want +got):\n%s", seg, d)
		}
	}

	// Deleting the account removes them.
	if _, err := c.deleteAndWait(sa, storageAPI); err != nil {
		t.Fatal(err)
	}
	for _, seg := range storageServiceSegments {
		if r := c.do(http.MethodGet, sa+"/"+seg+"/default", storageAPI, nil); r.status != 404 {
			t.Errorf("GET %s after the account's delete: %d %s", seg, r.status, r.raw)
		}
		if r := c.do(http.MethodGet, sa+"/"+seg, storageAPI, nil); r.status != 404 || r.code() != "ParentResourceNotFound" {
			t.Errorf("GET %s collection after the account's delete: %d %s", seg, r.status, r.raw)
		}
	}
	if r := c.do(http.MethodGet, table, storageAPI, nil); r.status != 404 {
		t.Errorf("table after the account's delete: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodPut, table, storageAPI, map[string]any{"name": "events"}); r.status != 404 || r.code() != "ParentResourceNotFound" {
		t.Errorf("table PUT after the account's delete: %d %s", r.status, r.raw)
	}
}

// An account has the services its kind has.
func TestStorageServicesByKind(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithDefaultLatency(20*time.Millisecond))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-kinds")
	putRG(t, c, rg)
	for _, tc := range []struct {
		kind string
		has  []string
	}{
		{"StorageV2", storageServiceSegments},
		{"Storage", storageServiceSegments},
		{"BlobStorage", []string{"blobServices"}},
		{"BlockBlobStorage", []string{"blobServices"}},
		{"FileStorage", []string{"fileServices"}},
	} {
		sa := rg + "/providers/Microsoft.Storage/storageAccounts/" + strings.ToLower(tc.kind)
		newStorageAccount(t, c, sa, tc.kind)
		var got []string
		for _, seg := range storageServiceSegments {
			if r := c.do(http.MethodGet, sa+"/"+seg+"/default", storageAPI, nil); r.status == 200 {
				got = append(got, seg)
			}
		}
		if d := cmp.Diff(tc.has, got); d != "" {
			t.Errorf("%s services (-want +got):\n%s", tc.kind, d)
		}
	}
}

// A data file written without the services (by an older emulator) gets them on load.
func TestStorageServicesRestoredOnLoad(t *testing.T) {
	data := filepath.Join(t.TempDir(), "state.json")
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithDefaultLatency(20*time.Millisecond), emulator.WithDataFile(data))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-load")
	putRG(t, c, rg)
	sa := rg + "/providers/Microsoft.Storage/storageAccounts/loadaccount"
	newStorageAccount(t, c, sa, "StorageV2")
	for _, seg := range storageServiceSegments {
		if _, err := c.deleteAndWait(sa+"/"+seg+"/default", storageAPI); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = newEmulator(t, emulator.WithoutThrottling(), emulator.WithDefaultLatency(20*time.Millisecond), emulator.WithDataFile(data))
	c, _ = ownerClient(t, e)
	for _, seg := range storageServiceSegments {
		r := c.do(http.MethodGet, sa+"/"+seg+"/default", storageAPI, nil)
		if d := cmp.Diff(recordedService(t, sa, seg), r.body); r.status != 200 || d != "" {
			t.Errorf("GET %s after load: %d (-recorded +emulator):\n%s", seg, r.status, d)
		}
	}
}
