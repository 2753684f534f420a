// Package metrics owns gitaso's Prometheus registry: what /metrics exports.
//
// It holds, in one registry of its own (never the global default):
//
//   - ASO's ARM client metrics with ASO's names, labels and buckets
//     (azure_successful_requests_total, azure_failed_requests_total,
//     azure_requests_time_seconds), fed by the azcore policy of package azure
//     through ObserveARMRequest, plus gitaso's own count of throttled (429)
//     answers and of retries, and the waits for its client-side rate limiter
//     (ObserveRateLimitWait);
//   - controller-runtime's per-controller reconcile metrics
//     (controller_runtime_reconcile_total, _errors_total,
//     _terminal_reconcile_errors_total, _time_seconds), one controller per
//     kind named as ASO names its controllers ("ResourceGroupController"),
//     fed by Reconciled as the executor finishes each resource;
//   - the plans gitaso makes (Planned);
//   - the health of the daemon's loop (HealthCollector, read at scrape time
//     from record.Health): the source's last successful fetch and its
//     failures, the state's failed writes, readiness;
//   - the Go runtime and process collectors.
//
// The state-derived gauges (resources by Ready status, runs by outcome, the
// held or refused revision) are a collector of package api, registered with
// Register: they read counters state keeps as records change, so a scrape
// costs the same at 10,000 resources as at 10.
//
// docs/metrics.md lists every metric; deploy/grafana/gitaso-dashboard.json
// charts them.
//
//	m := metrics.New()
//	clients := azure.NewClients(cloud, azure.Options{Metrics: m})
//	cfg.Metrics = m                    // reconcile.Config
//	handler := api.New(db, api.Options{Metrics: m})
package metrics
