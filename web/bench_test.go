package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// seed10k stores 10,000 resources shaped like a platform's: 50 namespaces,
// each a resource group owning an identity, 98 storage accounts with a
// container each, a role assignment and a key vault referencing the
// identity; about 5%
// not ready and 2% unknown; applied bodies of about 400 bytes.
func seed10k(tb testing.TB, db *state.DB) int {
	tb.Helper()
	n := 0
	err := db.Update(func(w *state.Writer) error {
		put := func(ns, group, kind, name, armID string, deps ...string) (string, error) {
			st := record.StatusTrue
			reason := "Succeeded"
			msg := ""
			switch {
			case n%20 == 7:
				st, reason, msg = record.StatusFalse, "AuthorizationFailed", "The client does not have authorization to perform action over scope "+armID
			case n%50 == 11:
				st, reason = record.StatusUnknown, "Reconciling"
			}
			n++
			body := fmt.Sprintf(`{"location":"westeurope","name":%q,"properties":{"minimumTlsVersion":"TLS1_2","allowBlobPublicAccess":false,"encryption":{"keySource":"Microsoft.Storage"},"networkAcls":{"defaultAction":"Deny","bypass":"AzureServices"}},"sku":{"name":"Standard_LRS"},"tags":{"team":%q,"cost-center":"4711","owner":"platform@example.com"}}`, name, ns)
			r := record.Resource{Namespace: ns, Group: group, Version: "v1api20230101", Kind: kind, Name: name, ARMID: armID,
				APIVersion: "2023-01-01", File: ns + "/resources.yaml", Credential: "global", Policy: "manage",
				AppliedHash: "sha256:" + strconv.Itoa(n), AppliedBody: json.RawMessage(body), DesiredHash: "sha256:" + strconv.Itoa(n), Generation: 1,
				Ready:    record.Condition{Type: "Ready", Status: st, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: time.Now().UTC()},
				Revision: "0123456789abcdef0123456789abcdef01234567", DependsOn: deps}
			return r.Key(), w.PutResource(r)
		}
		for t := range 50 {
			ns := fmt.Sprintf("team-%02d", t)
			rgID := "/subscriptions/s/resourceGroups/" + ns + "-rg"
			rg, err := put(ns, "resources.azure.com", "ResourceGroup", ns+"-rg", rgID)
			if err != nil {
				return err
			}
			idID := rgID + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/" + ns + "-id"
			id, err := put(ns, "managedidentity.azure.com", "UserAssignedIdentity", ns+"-id", idID, rg)
			if err != nil {
				return err
			}
			for i := range 98 {
				name := fmt.Sprintf("%ssa%03d", strings.ReplaceAll(ns, "-", ""), i)
				saID := rgID + "/providers/Microsoft.Storage/storageAccounts/" + name
				sa, err := put(ns, "storage.azure.com", "StorageAccount", name, saID, rg)
				if err != nil {
					return err
				}
				if _, err := put(ns, "storage.azure.com", "StorageAccountsBlobServicesContainer", name+"-data", saID+"/blobServices/default/containers/data", sa); err != nil {
					return err
				}
			}
			if _, err := put(ns, "authorization.azure.com", "RoleAssignment", ns+"-contributor", rgID+"/providers/Microsoft.Authorization/roleAssignments/"+ns, rg, id); err != nil {
				return err
			}
			if _, err := put(ns, "keyvault.azure.com", "Vault", ns+"-kv", rgID+"/providers/Microsoft.KeyVault/vaults/"+ns+"-kv", rg, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// cdp runs a Chrome DevTools Protocol command through chromedriver.
func (wd *webDriver) cdp(cmd string, params map[string]any, out any) {
	wd.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	wd.call(http.MethodPost, "/goog/cdp/execute", map[string]any{"cmd": cmd, "params": params}, out)
}

// mark returns the time of a performance mark since navigation start, in ms.
func (wd *webDriver) mark(name string) float64 {
	wd.t.Helper()
	wd.waitFor(name, `return performance.getEntriesByName(arguments[0]).length > 0`, name)
	var ms float64
	wd.exec(&ms, `return performance.getEntriesByName(arguments[0])[0].startTime`, name)
	return ms
}

// jsHeapMB is the page's used JS heap after a garbage collection.
func (wd *webDriver) jsHeapMB() float64 {
	wd.t.Helper()
	wd.cdp("HeapProfiler.collectGarbage", nil, nil)
	var h struct {
		UsedSize float64 `json:"usedSize"`
	}
	wd.cdp("Runtime.getHeapUsage", nil, &h)
	return h.UsedSize / (1 << 20)
}

// BenchmarkPageLoad10k loads the status page over 10,000 resources in
// headless Chromium: the time from navigation to the drawn graph and to
// the first page of the resource list (performance marks set by app.js),
// the page's JS heap (CDP Runtime.getHeapUsage after a GC) in each view,
// and the heap of the daemon's side (api + state, in this process) after
// serving them.
//
//	GITASO_SHARED=/work/shared go test -tags kustomize_disable_go_plugin_support ./web/ -run '^$' -bench PageLoad10k -benchtime 5x
func BenchmarkPageLoad10k(b *testing.B) {
	wd := newWebDriver(b)
	db := openState(b)
	if n := seed10k(b, db); n != 10000 {
		b.Fatalf("seeded %d resources", n)
	}
	srv := serveState(b, db)
	var graphMS, listMS, graphHeap, listHeap float64
	i := 0
	for b.Loop() {
		i++
		wd.open(srv.URL + "/?load=" + strconv.Itoa(i) + "#/graph")
		graphMS += wd.mark("gitaso-graph-drawn")
		if got := wd.str(`return document.getElementById('graph-canvas').dataset.drawn || ''`); got == "" || got == "0" {
			b.Fatalf("graph drew %q nodes", got)
		}
		graphHeap += wd.jsHeapMB()
		if dir := os.Getenv("GITASO_WEB_SCREENSHOTS"); dir != "" && i == 1 {
			wd.screenshot(dir + "/graph-10k.png")
		}
		wd.open(srv.URL + "/?list=" + strconv.Itoa(i) + "#resources") // a new document, not a hash change
		listMS += wd.mark("gitaso-list-drawn")
		listHeap += wd.jsHeapMB()
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	n := float64(i)
	b.ReportMetric(graphMS/n, "ms-to-graph")
	b.ReportMetric(listMS/n, "ms-to-list")
	b.ReportMetric(graphHeap/n, "MB-js-heap-graph")
	b.ReportMetric(listHeap/n, "MB-js-heap-list")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MB-daemon-heap")
	if rss, err := peakRSS(); err == nil {
		b.ReportMetric(rss, "MB-daemon-peak-rss")
	}
}

// peakRSS is this process's peak resident set (VmHWM), in MB: the test
// binary serving the API, Chromium not included.
func peakRSS() (float64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM")
}
