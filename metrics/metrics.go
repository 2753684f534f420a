package metrics

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReconcileBuckets are controller-runtime's buckets for
// controller_runtime_reconcile_time_seconds.
var ReconcileBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
	0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60}

// RateLimitBuckets are the buckets of gitaso_arm_rate_limit_wait_seconds:
// from no wait at all to a bucket refilling after a burst.
var RateLimitBuckets = []float64{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// The results of controller_runtime_reconcile_total, as controller-runtime
// names them.
const (
	ResultSuccess = "success"
	ResultError   = "error"
	ResultRequeue = "requeue"
)

// Metrics is gitaso's registry and the metrics fed while it runs. It is safe
// for concurrent use; the zero value is not: use New.
type Metrics struct {
	reg *prometheus.Registry

	armSuccess *prometheus.CounterVec
	armFailed  *prometheus.CounterVec
	armTime    *prometheus.HistogramVec
	throttled  *prometheus.CounterVec
	retries    *prometheus.CounterVec
	limitWait  *prometheus.HistogramVec

	reconcileTotal    *prometheus.CounterVec
	reconcileErrors   *prometheus.CounterVec
	reconcileTerminal *prometheus.CounterVec
	reconcileTime     *prometheus.HistogramVec
	outcomes          *prometheus.CounterVec

	plans       *prometheus.CounterVec
	planActions *prometheus.CounterVec

	leader *prometheus.GaugeVec

	// otherWriters: see OtherWriters.
	otherWriters prometheus.Gauge
}

// New returns a registry holding the Go runtime and process collectors and
// gitaso's metrics, all at zero.
func New() *Metrics {
	armLabels := []string{"resource", "requestType"}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		// ASO's ARM client metrics: names, help, labels and (default)
		// buckets as ASO's internal/metrics/arm_client_metrics.go.
		armSuccess: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "azure_successful_requests_total",
			Help: "Total number of successful requests to azure",
		}, []string{"resource", "requestType", "responseCode"}),
		armFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "azure_failed_requests_total",
			Help: "Total number of failed requests to azure",
		}, armLabels),
		armTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "azure_requests_time_seconds",
			Help: "Length of time per ARM request",
		}, armLabels),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitaso_arm_throttled_requests_total",
			Help: "ARM requests answered 429 Too Many Requests (each try counts).",
		}, armLabels),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitaso_arm_retries_total",
			Help: "ARM requests sent again by the retry policy (tries after the first).",
		}, armLabels),
		limitWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gitaso_arm_rate_limit_wait_seconds",
			Help:    "Time each ARM request try waited for gitaso's client-side rate limiter (per subscription and operation class) before it was sent.",
			Buckets: RateLimitBuckets,
		}, armLabels),

		// controller-runtime's reconcile metrics: names, help, labels and
		// buckets as its pkg/internal/controller/metrics.
		reconcileTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_runtime_reconcile_total",
			Help: "Total number of reconciliations per controller",
		}, []string{"controller", "result"}),
		reconcileErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_runtime_reconcile_errors_total",
			Help: "Total number of reconciliation errors per controller",
		}, []string{"controller"}),
		reconcileTerminal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_runtime_terminal_reconcile_errors_total",
			Help: "Total number of terminal reconciliation errors per controller",
		}, []string{"controller"}),
		reconcileTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "controller_runtime_reconcile_time_seconds",
			Help:    "Length of time per reconciliation per controller",
			Buckets: ReconcileBuckets,
		}, []string{"controller"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitaso_resource_outcomes_total",
			Help: "Resources the executor finished, by controller and outcome (applied, unchanged, observed, deleted, detached, failed, skipped).",
		}, []string{"controller", "outcome"}),

		plans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitaso_plans_total",
			Help: "Plans made, by trigger (startup, interval, api, refresh, retry, cli) and whether they were dry runs.",
		}, []string{"trigger", "dry_run"}),
		planActions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gitaso_planned_actions_total",
			Help: "Resource actions in the plans made (create, update, delete...), dry runs excluded.",
		}, []string{"action"}),

		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gitaso_leader",
			Help: "1 while this process holds its Lease and applies, 0 on a standby.",
		}, []string{"lease"}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.armSuccess, m.armFailed, m.armTime, m.throttled, m.retries, m.limitWait,
		m.reconcileTotal, m.reconcileErrors, m.reconcileTerminal, m.reconcileTime, m.outcomes,
		m.plans, m.planActions, m.leader,
	)
	m.otherWriters = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gitaso_other_writer_resources",
		Help: "Managed resources whose newest Activity Log read showed writes with gitaso's own principal that this gitaso did not make " +
			"(another gitaso with its own state file, or gitaso's credential used elsewhere).",
	})
	m.reg.MustRegister(m.otherWriters)
	return m
}

// Registry returns the registry (for a test's Gather, or to add a
// collector).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Replace registers c in place of the collector that describes the same
// metrics, if any: the API registers its state collector each time it is
// built over a state file (serve --leader-elect reopens it on every lead).
func (m *Metrics) Replace(c prometheus.Collector) error {
	m.reg.Unregister(c) // by c's descriptors: removes the previous one
	if err := m.reg.Register(c); err != nil {
		return fmt.Errorf("metrics: register: %w", err)
	}
	return nil
}

// Handler serves the registry in the Prometheus text format. Errors of a
// collector are served as HTTP 500 with their message (and logged by the
// caller's request log), as promhttp does.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
}

// ObserveARMRequest records one try of an ARM request, as ASO's
// MetricsPolicy does for a request: its time, then a failure when it got no
// response (err) or a success with its status code otherwise (ASO counts
// every answer, 4xx and 5xx included, as successful). A 429 answer also
// counts as throttled, and a try after the first as a retry. resourceType is
// the ARM resource type of the path ("Microsoft.Network/virtualNetworks/subnets").
func (m *Metrics) ObserveARMRequest(resourceType, method string, statusCode int, err error, d time.Duration, try int) {
	m.armTime.WithLabelValues(resourceType, method).Observe(d.Seconds())
	if try > 1 {
		m.retries.WithLabelValues(resourceType, method).Inc()
	}
	if err != nil || statusCode == 0 {
		m.armFailed.WithLabelValues(resourceType, method).Inc()
		return
	}
	m.armSuccess.WithLabelValues(resourceType, method, strconv.Itoa(statusCode)).Inc()
	if statusCode == http.StatusTooManyRequests {
		m.throttled.WithLabelValues(resourceType, method).Inc()
	}
}

// ObserveRateLimitWait records how long one try of an ARM request waited
// for the client-side rate limiter.
func (m *Metrics) ObserveRateLimitWait(resourceType, method string, d time.Duration) {
	m.limitWait.WithLabelValues(resourceType, method).Observe(d.Seconds())
}

// ControllerName is the controller ASO runs for kind: "ResourceGroup" →
// "ResourceGroupController" (ASO's getControllerName: the Go type name and
// "Controller").
func ControllerName(kind string) string { return kind + "Controller" }

// Reconciled records one resource the executor finished: outcome is the
// executor's (applied, unchanged, observed, deleted, detached, failed,
// skipped), terminal says a failure will not be retried until the manifest
// changes (Ready severity Error), d is how long the resource took.
//
// controller-runtime's result: a failure is "error" (and counts in
// controller_runtime_reconcile_errors_total, a terminal one also in
// controller_runtime_terminal_reconcile_errors_total); a resource skipped
// because a dependency failed is "requeue" (it is tried again with the
// dependency); everything else is "success".
func (m *Metrics) Reconciled(kind, outcome string, terminal bool, d time.Duration) {
	c := ControllerName(kind)
	result := ResultSuccess
	switch outcome {
	case "failed":
		result = ResultError
		m.reconcileErrors.WithLabelValues(c).Inc()
		if terminal {
			m.reconcileTerminal.WithLabelValues(c).Inc()
		}
	case "skipped":
		result = ResultRequeue
	}
	m.reconcileTotal.WithLabelValues(c, result).Inc()
	m.reconcileTime.WithLabelValues(c).Observe(d.Seconds())
	m.outcomes.WithLabelValues(c, outcome).Inc()
}

// Planned records one plan made for trigger, with the number of resources
// per action ("create" → 3); the actions of dry runs are not added to
// gitaso_planned_actions_total.
func (m *Metrics) Planned(trigger string, dryRun bool, actions map[string]int) {
	if trigger == "" {
		trigger = "unknown"
	}
	m.plans.WithLabelValues(trigger, strconv.FormatBool(dryRun)).Inc()
	if dryRun {
		return
	}
	for a, n := range actions {
		if n > 0 {
			m.planActions.WithLabelValues(a).Add(float64(n))
		}
	}
}

// SetLeader sets gitaso_leader{lease} to 1: this process holds the Lease
// ("namespace/name") and applies (serve --leader-elect; a standby answers
// /metrics itself with 0, and a leader that loses its Lease exits).
func (m *Metrics) SetLeader(lease string) { m.leader.WithLabelValues(lease).Set(1) }

// OtherWriters sets gitaso_other_writer_resources: how many managed
// resources another writer wrote with gitaso's own principal, as the newest
// Activity Log read of each showed (reconcile.OtherWriterMetrics).
func (m *Metrics) OtherWriters(resources int) { m.otherWriters.Set(float64(resources)) }
