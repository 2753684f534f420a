package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/metrics"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// metrics.Metrics is what package azure reports to.
var (
	_ azure.RequestMetrics   = (*metrics.Metrics)(nil)
	_ azure.RateLimitMetrics = (*metrics.Metrics)(nil)
)

const metricsManifests = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: metrics-rg
  namespace: team-m
spec:
  location: westeurope
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: good-identity
  namespace: team-m
spec:
  location: westeurope
  owner:
    name: metrics-rg
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: broken-identity
  namespace: team-m
spec:
  location: westeurope
  owner:
    name: metrics-rg
`

// armBehindFront starts the emulator behind an HTTPS server of the test's
// own whose handler answers the first PUT of the resource group 429 (with
// Retry-After, as ARM throttles) and passes everything else on.
func armBehindFront(t *testing.T, m azure.RequestMetrics) (*emulator.Emulator, *azure.Clients, *azure.Credential, *atomic.Int32) {
	t.Helper()
	emu, err := emulator.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	var throttled atomic.Int32
	front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.HasSuffix(strings.ToLower(r.URL.Path), "/resourcegroups/metrics-rg") && throttled.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"code":"SubscriptionRequestsThrottled","message":"Number of write requests for subscription exceeded the limit."}}`)
			return
		}
		emu.ServeHTTP(w, r)
	}))
	front.StartTLS()
	t.Cleanup(front.Close)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	frontCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})
	if err := os.WriteFile(caFile, append(emu.CACertPEM(), frontCA...), 0o600); err != nil {
		t.Fatal(err)
	}
	cloudFile := filepath.Join(dir, "cloud.json")
	if err := os.WriteFile(cloudFile, emu.CloudConfigJSON(caFile), 0o600); err != nil {
		t.Fatal(err)
	}
	cloud, err := azure.LoadCloud(cloudFile)
	if err != nil {
		t.Fatal(err)
	}
	cloud.ARMEndpoint = front.URL
	sp, err := emu.AddServicePrincipal("platform")
	if err != nil {
		t.Fatal(err)
	}
	if err := emu.AssignRole(sp.ObjectID, "Owner", "/subscriptions/"+emu.SubscriptionID()); err != nil {
		t.Fatal(err)
	}
	cred, err := azure.CredentialFromSecret("platform/aso-credential", map[string]string{
		"AZURE_SUBSCRIPTION_ID": emu.SubscriptionID(), "AZURE_TENANT_ID": emu.TenantID(),
		"AZURE_CLIENT_ID": sp.ClientID, "AZURE_CLIENT_SECRET": sp.Secret})
	if err != nil {
		t.Fatal(err)
	}
	opts := azure.DefaultOptions()
	opts.PollInterval = 10 * time.Millisecond
	opts.Metrics = m
	return emu, azure.NewClients(cloud, opts), cred, &throttled
}

// scrape GETs /metrics over HTTP and returns its samples, "name{labels}" →
// value, and the TYPE of each family.
func scrape(t *testing.T, url string) (map[string]float64, map[string]string) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	samples, types := map[string]float64{}, map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			types[name] = typ
			continue
		}
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	return samples, types
}

// TestMetricsAfterApply applies a revision against the emulator (one PUT
// throttled once, one resource failing) and reads /metrics over HTTP: ASO's
// ARM metrics, controller-runtime's per-controller reconcile metrics, the 429
// and its retry, the plans, the state gauges; then a restart keeps the run
// and resource counts.
func TestMetricsAfterApply(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	m := metrics.New()
	emu, clients, cred, throttled := armBehindFront(t, m)
	emu.SetFaults(emulator.Faults{ProvisioningFailures: []emulator.ProvisioningFailure{
		{Match: "/userAssignedIdentities/broken-identity", Code: "InvalidResourceLocation", Message: "the location is not allowed"}}})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "team-m.yaml"), []byte(metricsManifests), 0o644); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "state.db")
	db, err := state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := reconcile.DefaultConfig()
	cfg.Global = cred
	cfg.Metrics = m
	rec := reconcile.New(source.NewDir(dir, ""), db, clients, cfg, nil)
	srv := httptest.NewServer(api.New(db, api.Options{Metrics: m}))
	defer srv.Close()

	before, _ := scrape(t, srv.URL) // the state gauges are read before the run: they must follow it
	if before[`gitaso_resources{ready="True"}`] != 0 {
		t.Fatalf("resources before the run: %v", before[`gitaso_resources{ready="True"}`])
	}
	rep, err := rec.Once(context.Background(), reconcile.Options{Trigger: "startup"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Run.Outcome != record.OutcomePartial || throttled.Load() < 2 {
		t.Fatalf("run %s (%s), throttled PUTs seen by the front %d: want partial, the resource group retried after its 429", rep.Run.Outcome, rep.Run.Error, throttled.Load())
	}
	samples, types := scrape(t, srv.URL)
	// Labels in the order the text format sorts them.
	rg := `requestType="PUT",resource="Microsoft.Resources/resourceGroups"`
	ids := `requestType="PUT",resource="Microsoft.ManagedIdentity/userAssignedIdentities"`
	want := map[string]float64{
		// ASO's ARM client metrics: the 429 is an answer (ASO counts every
		// answer as a successful request, by response code), then the retry.
		`azure_successful_requests_total{` + rg + `,responseCode="429"}`: 1,
		`gitaso_arm_throttled_requests_total{` + rg + `}`:                1,
		`gitaso_arm_retries_total{` + rg + `}`:                           1,
		`azure_requests_time_seconds_count{` + rg + `}`:                  2,
		`gitaso_arm_rate_limit_wait_seconds_count{` + rg + `}`:           2,
		// controller-runtime's metrics, one controller per kind as ASO names them.
		`controller_runtime_reconcile_total{controller="ResourceGroupController",result="success"}`:        1,
		`controller_runtime_reconcile_total{controller="UserAssignedIdentityController",result="success"}`: 1,
		`controller_runtime_reconcile_total{controller="UserAssignedIdentityController",result="error"}`:   1,
		`controller_runtime_reconcile_errors_total{controller="UserAssignedIdentityController"}`:           1,
		`controller_runtime_reconcile_errors_total{controller="ResourceGroupController"}`:                  0,
		`controller_runtime_reconcile_time_seconds_count{controller="UserAssignedIdentityController"}`:     2,
		`gitaso_resource_outcomes_total{controller="UserAssignedIdentityController",outcome="failed"}`:     1,
		`gitaso_resource_outcomes_total{controller="ResourceGroupController",outcome="applied"}`:           1,
		`gitaso_plans_total{dry_run="false",trigger="startup"}`:                                            1,
		`gitaso_planned_actions_total{action="create"}`:                                                    3,
		// The state gauges, read from counts state keeps.
		`gitaso_resources{ready="True"}`:         2,
		`gitaso_resources{ready="False"}`:        1,
		`gitaso_runs_total{outcome="partial"}`:   1,
		`gitaso_runs_total{outcome="succeeded"}`: 0,
		`gitaso_revision_held`:                   0,
		`gitaso_revision_refused`:                0,
	}
	for k, v := range want {
		if got, ok := samples[k]; (!ok && v != 0) || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	var rgOK, idOK bool
	for k, v := range samples {
		if strings.HasPrefix(k, `azure_successful_requests_total{`+rg+`,responseCode="2`) && v >= 1 {
			rgOK = true
		}
		if strings.HasPrefix(k, `azure_successful_requests_total{`+ids+`,responseCode="2`) && v >= 1 {
			idOK = true
		}
		if strings.HasPrefix(k, "azure_failed_requests_total") {
			t.Errorf("%s = %v: no request failed without an answer", k, v)
		}
	}
	if !rgOK || !idOK {
		t.Errorf("no 2xx answer counted for the resource group (%v) or the identities (%v)", rgOK, idOK)
	}
	for name, typ := range map[string]string{
		"azure_successful_requests_total": "counter", "azure_requests_time_seconds": "histogram",
		"controller_runtime_reconcile_time_seconds": "histogram", "gitaso_resources": "gauge", "gitaso_runs_total": "counter",
		"go_goroutines": "gauge", "process_resident_memory_bytes": "gauge",
	} {
		if types[name] != typ {
			t.Errorf("TYPE %s = %q, want %s", name, types[name], typ)
		}
	}

	// A restart: a new process, registry and API over the same state file.
	srv.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	srv2 := httptest.NewServer(api.New(db2, api.Options{Metrics: metrics.New()}))
	defer srv2.Close()
	after, _ := scrape(t, srv2.URL)
	for _, k := range []string{`gitaso_runs_total{outcome="partial"}`, `gitaso_resources{ready="True"}`, `gitaso_resources{ready="False"}`} {
		if after[k] != want[k] {
			t.Errorf("after a restart %s = %v, want %v", k, after[k], want[k])
		}
	}
	if _, ok := after[`controller_runtime_reconcile_total{controller="ResourceGroupController",result="success"}`]; ok {
		t.Error("the reconcile counters of the previous process survived in a new registry")
	}
}

// exportedFamilies returns the names of the metric families /metrics
// exports once every metric has been fed: the registry's, with the API's
// state collector.
func exportedFamilies(t *testing.T) map[string]bool {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := metrics.New()
	api.New(db, api.Options{Metrics: m})
	m.ObserveARMRequest("Microsoft.Resources/resourceGroups", "PUT", http.StatusTooManyRequests, nil, time.Millisecond, 1)
	m.ObserveARMRequest("Microsoft.Resources/resourceGroups", "PUT", 0, io.ErrUnexpectedEOF, time.Millisecond, 2)
	m.Reconciled("ResourceGroup", "failed", true, time.Second)
	m.Planned("interval", false, map[string]int{"create": 1})
	m.SetLeader("default/gitaso")
	m.ObserveRateLimitWait("Microsoft.Resources/resourceGroups", "PUT", time.Millisecond)
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
		if mf.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[mf.GetName()+s] = true
			}
		}
	}
	return names
}

// metricName matches the metric names of gitaso's families in a PromQL
// expression (label values, in quotes, are removed first).
var (
	metricName = regexp.MustCompile(`\b(?:azure|controller_runtime|gitaso|go|process)_[a-zA-Z0-9_]+`)
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// TestGrafanaDashboardUsesExportedMetrics parses the dashboard and checks
// that every metric its queries and variables name is one /metrics exports.
func TestGrafanaDashboardUsesExportedMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "gitaso-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("gitaso-dashboard.json: %v", err)
	}
	exported := exportedFamilies(t)
	used := map[string]bool{}
	check := func(where, expr string) {
		names := metricName.FindAllString(quoted.ReplaceAllString(expr, `""`), -1)
		if len(names) == 0 {
			t.Errorf("%s: %q names no gitaso metric", where, expr)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] {
				t.Errorf("%s: %s is not exported by /metrics", where, n)
			}
		}
	}
	queries := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for i, tg := range p.Targets {
			queries++
			check(fmt.Sprintf("panel %q query %d", p.Title, i), tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Definition != "" {
			check(fmt.Sprintf("variable %q", v.Name), v.Definition)
		}
	}
	if queries < 20 {
		t.Errorf("%d queries: the dashboard lost its panels", queries)
	}
	// What the issue asks the dashboard to chart.
	for _, n := range []string{"azure_successful_requests_total", "azure_failed_requests_total", "azure_requests_time_seconds_bucket",
		"controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total", "controller_runtime_reconcile_time_seconds_bucket",
		"gitaso_runs_total", "gitaso_revision_held", "gitaso_revision_refused", "gitaso_arm_throttled_requests_total",
		"gitaso_arm_retries_total", "gitaso_arm_rate_limit_wait_seconds_bucket", "process_resident_memory_bytes", "process_cpu_seconds_total"} {
		if !used[n] {
			t.Errorf("the dashboard does not chart %s", n)
		}
	}
	if !slices.Contains([]string{"gitaso"}, dash.Title) {
		t.Errorf("title %q", dash.Title)
	}
}

// BenchmarkMetricsScrape GETs /metrics over HTTP from a real bbolt state of
// 10 and of 10,000 resources (each with a 1 KiB applied body). The scrape
// reads counts state keeps as records change, so both cost the same.
func BenchmarkMetricsScrape(b *testing.B) {
	body := json.RawMessage(`{"location":"westeurope","tags":{"padding":"` + strings.Repeat("x", 1000) + `"}}`)
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			db, err := state.Open(filepath.Join(b.TempDir(), "gitaso.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			statuses := []string{record.StatusTrue, record.StatusTrue, record.StatusFalse, record.StatusUnknown}
			if err := db.Update(func(w *state.Writer) error {
				for i := range n {
					r := resource(fmt.Sprintf("ns-%02d", i%50), "managedidentity.azure.com", "UserAssignedIdentity", fmt.Sprintf("id-%05d", i), statuses[i%4], "", "")
					r.AppliedBody = body
					if err := w.PutResource(r); err != nil {
						return err
					}
				}
				for i := range 3 {
					run := &record.Run{Revision: "rev", Trigger: "interval", StartedAt: t0.Add(time.Duration(i) * time.Minute),
						FinishedAt: t0.Add(time.Duration(i)*time.Minute + time.Second), Outcome: record.OutcomeSucceeded}
					if err := w.PutRun(run); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(api.New(db, api.Options{}))
			defer srv.Close()
			get := func() int {
				resp, err := http.Get(srv.URL + "/metrics")
				if err != nil {
					b.Fatal(err)
				}
				nb, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
				}
				return int(nb)
			}
			get() // warm the connection
			for b.Loop() {
				get()
			}
		})
	}
}
