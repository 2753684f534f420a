package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gitaso/gitaso/record"
)

// HealthCollector exports what the daemon's loop knows of its source's
// fetches and its state's writes (record.Health), read at scrape time:
//
//	gitaso_source_last_success_timestamp_seconds   Unix time of the last successful fetch; 0 before the first
//	gitaso_source_last_attempt_timestamp_seconds   Unix time of the last fetch; 0 before the first
//	gitaso_source_consecutive_failures             failed fetches since the last that succeeded
//	gitaso_source_failures_total                   failed fetches since the process started
//	gitaso_state_write_consecutive_failures        runs that could not write the state since the last that did
//	gitaso_state_write_failures_total              runs that could not write the state since the process started
//	gitaso_ready                                   1 while /readyz answers 200, 0 while it answers 503
type HealthCollector struct {
	status func() record.Health

	lastSuccess, lastAttempt, srcConsecutive, srcTotal, stConsecutive, stTotal, ready *prometheus.Desc
}

// NewHealthCollector returns a collector calling status at every scrape;
// register it with Replace.
func NewHealthCollector(status func() record.Health) *HealthCollector {
	return &HealthCollector{
		status: status,
		lastSuccess: prometheus.NewDesc("gitaso_source_last_success_timestamp_seconds",
			"Unix time the source (Git repository or directory) was last fetched successfully; 0 before the first.", nil, nil),
		lastAttempt: prometheus.NewDesc("gitaso_source_last_attempt_timestamp_seconds",
			"Unix time the source was last fetched, successfully or not; 0 before the first.", nil, nil),
		srcConsecutive: prometheus.NewDesc("gitaso_source_consecutive_failures",
			"Fetches of the source that failed (network, TLS, authentication, repository or branch gone, no answer within --git-timeout) since the last that succeeded.", nil, nil),
		srcTotal: prometheus.NewDesc("gitaso_source_failures_total",
			"Fetches of the source that failed since the process started.", nil, nil),
		stConsecutive: prometheus.NewDesc("gitaso_state_write_consecutive_failures",
			"Runs that could not write the state file (a full disk, a read-only file system) since the last that did; nothing of them was applied.", nil, nil),
		stTotal: prometheus.NewDesc("gitaso_state_write_failures_total",
			"Runs that could not write the state file since the process started.", nil, nil),
		ready: prometheus.NewDesc("gitaso_ready",
			"1 while /readyz answers 200, 0 while it answers 503 (docs/metrics.md).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *HealthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lastSuccess, c.lastAttempt, c.srcConsecutive, c.srcTotal, c.stConsecutive, c.stTotal, c.ready} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *HealthCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.status()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(c.lastSuccess, unix(h.Source.LastSuccessAt))
	gauge(c.lastAttempt, unix(h.Source.LastAttemptAt))
	gauge(c.srcConsecutive, float64(h.Source.ConsecutiveFailures))
	counter(c.srcTotal, h.Source.FailuresTotal)
	gauge(c.stConsecutive, float64(h.State.ConsecutiveFailures))
	counter(c.stTotal, h.State.FailuresTotal)
	ready := 0.0
	if h.Ready {
		ready = 1
	}
	gauge(c.ready, ready)
}

// unix is t as Unix seconds; 0 for the zero time.
func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
