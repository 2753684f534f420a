package metrics_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gitaso/gitaso/metrics"
)

// TestARMRequestsAsASO checks ASO's names, help, labels and buckets, and how
// a try is counted: an answer by its code, no answer as a failure, a 429 as
// throttled, a try after the first as a retry.
func TestARMRequestsAsASO(t *testing.T) {
	m := metrics.New()
	const rg = "Microsoft.Resources/resourceGroups"
	m.ObserveARMRequest(rg, "PUT", http.StatusTooManyRequests, nil, 20*time.Millisecond, 1)
	m.ObserveARMRequest(rg, "PUT", http.StatusCreated, nil, 30*time.Millisecond, 2)
	m.ObserveARMRequest(rg, "GET", 0, errors.New("connection reset"), 3*time.Second, 1)
	want := `
# HELP azure_failed_requests_total Total number of failed requests to azure
# TYPE azure_failed_requests_total counter
azure_failed_requests_total{requestType="GET",resource="Microsoft.Resources/resourceGroups"} 1
# HELP azure_successful_requests_total Total number of successful requests to azure
# TYPE azure_successful_requests_total counter
azure_successful_requests_total{requestType="PUT",resource="Microsoft.Resources/resourceGroups",responseCode="201"} 1
azure_successful_requests_total{requestType="PUT",resource="Microsoft.Resources/resourceGroups",responseCode="429"} 1
# HELP gitaso_arm_retries_total ARM requests sent again by the retry policy (tries after the first).
# TYPE gitaso_arm_retries_total counter
gitaso_arm_retries_total{requestType="PUT",resource="Microsoft.Resources/resourceGroups"} 1
# HELP gitaso_arm_throttled_requests_total ARM requests answered 429 Too Many Requests (each try counts).
# TYPE gitaso_arm_throttled_requests_total counter
gitaso_arm_throttled_requests_total{requestType="PUT",resource="Microsoft.Resources/resourceGroups"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "azure_failed_requests_total",
		"azure_successful_requests_total", "gitaso_arm_retries_total", "gitaso_arm_throttled_requests_total"); err != nil {
		t.Error(err)
	}
	// ASO's histogram has Prometheus' default buckets.
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "azure_requests_time_seconds" {
			continue
		}
		for _, metric := range mf.GetMetric() {
			var bounds []float64
			for _, b := range metric.GetHistogram().GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
			if len(bounds) != len(prometheus.DefBuckets) || bounds[0] != prometheus.DefBuckets[0] || bounds[len(bounds)-1] != 10 {
				t.Errorf("azure_requests_time_seconds buckets %v, want %v", bounds, prometheus.DefBuckets)
			}
		}
		return
	}
	t.Error("azure_requests_time_seconds not exported")
}

// TestReconciledAsControllerRuntime checks controller-runtime's results for
// the executor's outcomes, and ASO's controller names.
func TestReconciledAsControllerRuntime(t *testing.T) {
	m := metrics.New()
	for _, o := range []string{"applied", "unchanged", "observed", "deleted", "detached"} {
		m.Reconciled("ResourceGroup", o, false, 100*time.Millisecond)
	}
	m.Reconciled("UserAssignedIdentity", "failed", false, 2*time.Second)
	m.Reconciled("UserAssignedIdentity", "failed", true, time.Second)
	m.Reconciled("UserAssignedIdentity", "skipped", false, 0)
	want := `
# HELP controller_runtime_reconcile_errors_total Total number of reconciliation errors per controller
# TYPE controller_runtime_reconcile_errors_total counter
controller_runtime_reconcile_errors_total{controller="UserAssignedIdentityController"} 2
# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="ResourceGroupController",result="success"} 5
controller_runtime_reconcile_total{controller="UserAssignedIdentityController",result="error"} 2
controller_runtime_reconcile_total{controller="UserAssignedIdentityController",result="requeue"} 1
# HELP controller_runtime_terminal_reconcile_errors_total Total number of terminal reconciliation errors per controller
# TYPE controller_runtime_terminal_reconcile_errors_total counter
controller_runtime_terminal_reconcile_errors_total{controller="UserAssignedIdentityController"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "controller_runtime_reconcile_total",
		"controller_runtime_reconcile_errors_total", "controller_runtime_terminal_reconcile_errors_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.Registry(), "controller_runtime_reconcile_time_seconds"); n != 2 {
		t.Errorf("reconcile time series: %d, want one per controller", n)
	}
}

func TestPlanned(t *testing.T) {
	m := metrics.New()
	m.Planned("interval", false, map[string]int{"create": 2, "delete": 1, "update": 0})
	m.Planned("cli", true, map[string]int{"create": 5})
	want := `
# HELP gitaso_planned_actions_total Resource actions in the plans made (create, update, delete...), dry runs excluded.
# TYPE gitaso_planned_actions_total counter
gitaso_planned_actions_total{action="create"} 2
gitaso_planned_actions_total{action="delete"} 1
# HELP gitaso_plans_total Plans made, by trigger (startup, interval, api, refresh, retry, cli) and whether they were dry runs.
# TYPE gitaso_plans_total counter
gitaso_plans_total{dry_run="false",trigger="interval"} 1
gitaso_plans_total{dry_run="true",trigger="cli"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "gitaso_plans_total", "gitaso_planned_actions_total"); err != nil {
		t.Error(err)
	}
}

// TestProcessAndGoCollectors: the registry carries both.
func TestProcessAndGoCollectors(t *testing.T) {
	m := metrics.New()
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "process_cpu_seconds_total"} {
		if n := testutil.CollectAndCount(m.Registry(), name); n != 1 {
			t.Errorf("%s: %d series", name, n)
		}
	}
}

func TestSetLeader(t *testing.T) {
	m := metrics.New()
	if n := testutil.CollectAndCount(m.Registry(), "gitaso_leader"); n != 0 {
		t.Errorf("gitaso_leader before SetLeader: %d series", n)
	}
	m.SetLeader("default/gitaso")
	want := `
# HELP gitaso_leader 1 while this process holds its Lease and applies, 0 on a standby.
# TYPE gitaso_leader gauge
gitaso_leader{lease="default/gitaso"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "gitaso_leader"); err != nil {
		t.Error(err)
	}
}
