package api

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gitaso/gitaso/metrics"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// metricsHandler returns GET /metrics: opts.Metrics' registry (a registry of
// its own when nil) with the state collector of s.db in it, in the format
// the scraper asks for (the Prometheus text format by default).
func (s *server) metricsHandler() http.HandlerFunc {
	m := s.opts.Metrics
	if m == nil {
		m = metrics.New()
	}
	sc := newStateCollector(s.db)
	sc.shedCount = s.limit.shed.Load
	if err := m.Replace(sc); err != nil {
		s.log.Error("metrics: the state gauges are not exported", "error", err)
	}
	if err := m.Replace(newUnitCollector(s.db)); err != nil {
		s.log.Error("metrics: the unit gauges are not exported", "error", err)
	}
	if err := m.Replace(metrics.NewHealthCollector(s.health)); err != nil {
		s.log.Error("metrics: the source and state health gauges are not exported", "error", err)
	}
	// Count the resources by Ready status now, once: state keeps the
	// counts from then on, and the first scrape does not pay for the scan.
	if _, err := s.db.ReadyCounts(); err != nil {
		s.log.Error("metrics: counting the resources", "error", err)
	}
	h := m.Handler()
	return func(w http.ResponseWriter, r *http.Request) {
		// The metrics count every namespace's resources and runs together:
		// they need read on every namespace (a scrape token of its own).
		if !s.readsAll(w, r) {
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	}
}

// stateCollector exports what state knows, read at scrape time from values
// state keeps as they change, so that a scrape costs the same at 10,000
// resources as at 10: the Ready counts (kept in memory, state/ready.go), the
// run totals (one record, kept across restarts and run pruning), the two
// newest runs and the operations in flight.
type stateCollector struct {
	db *state.DB

	resources, runsTotal, lastRun, lastDuration, inFlight, held, deletionsHeld, refused, shed *prometheus.Desc
	// shedCount reads the API's requests answered 429 (nil: none).
	shedCount func() uint64
}

func newStateCollector(db *state.DB) *stateCollector {
	return &stateCollector{
		db: db,
		resources: prometheus.NewDesc("gitaso_resources",
			"Resources in state by the status of their Ready condition.", []string{"ready"}, nil),
		runsTotal: prometheus.NewDesc("gitaso_runs_total",
			"Reconcile runs finished, by outcome.", []string{"outcome"}, nil),
		lastRun: prometheus.NewDesc("gitaso_last_run_timestamp_seconds",
			"Unix time the latest run finished (or started, while it runs); 0 before the first run.", nil, nil),
		lastDuration: prometheus.NewDesc("gitaso_last_run_duration_seconds",
			"Duration of the latest finished run.", nil, nil),
		inFlight: prometheus.NewDesc("gitaso_operations_in_flight",
			"ARM long-running operations recorded as in flight.", nil, nil),
		held: prometheus.NewDesc("gitaso_revision_held",
			"1 when the newest finished run was held: its deletions wait for POST /api/v1/approve.", nil, nil),
		deletionsHeld: prometheus.NewDesc("gitaso_deletions_held",
			"Deletions the newest finished run holds for an approval; 0 unless it was held.", nil, nil),
		refused: prometheus.NewDesc("gitaso_revision_refused",
			"1 while the newest revision of the source is refused (from its refused run until a later revision renders; "+
				"the refreshes of the last good revision in between do not clear it): it is invalid and the last good revision stays applied.", nil, nil),
		shed: prometheus.NewDesc("gitaso_api_requests_shed_total",
			"API reads answered 429 too_many_requests: more were asked at once than the API serves (docs/api.md).", nil, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.resources, c.runsTotal, c.lastRun, c.lastDuration, c.inFlight, c.held, c.deletionsHeld, c.refused, c.shed} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	var shed uint64
	if c.shedCount != nil {
		shed = c.shedCount()
	}
	ch <- prometheus.MustNewConstMetric(c.shed, prometheus.CounterValue, float64(shed))
	if ready, err := c.db.ReadyCounts(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.resources, err)
	} else {
		for _, st := range []string{record.StatusTrue, record.StatusFalse, record.StatusUnknown} {
			gauge(c.resources, float64(ready[st]), st)
		}
	}
	if totals, err := c.db.RunTotals(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.runsTotal, err)
	} else {
		for _, o := range record.Outcomes {
			ch <- prometheus.MustNewConstMetric(c.runsTotal, prometheus.CounterValue, float64(totals[o]), string(o))
		}
	}
	if ops, err := c.db.Operations(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.inFlight, err)
	} else {
		gauge(c.inFlight, float64(len(ops)))
	}
	// The newest run, and the newest finished one (one run at a time: a
	// run in progress is the newest, the finished one is next).
	runs, err := c.db.Runs(2)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.lastRun, err)
		return
	}
	var last, dur float64
	if len(runs) > 0 {
		run := runs[0]
		t := run.FinishedAt
		if t.IsZero() {
			t = run.StartedAt
		} else {
			dur = run.FinishedAt.Sub(run.StartedAt).Seconds()
		}
		last = float64(t.UnixNano()) / 1e9
	}
	gauge(c.lastRun, last)
	gauge(c.lastDuration, dur)
	held, deletions, refused := 0, 0, 0
	for _, run := range runs {
		if run.Outcome == "" {
			continue
		}
		switch run.Outcome {
		case record.OutcomeHeld:
			held = 1
			if run.Held != nil {
				deletions = run.Held.Deletions
			}
		case record.OutcomeRefused:
			refused = 1
		}
		break
	}
	gauge(c.held, float64(held))
	gauge(c.deletionsHeld, float64(deletions))
	// The refusal stands in state until a later revision renders: the run
	// that refreshes the last good revision after it is newer, but does
	// not end it.
	_, standing, err := c.db.Refused()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.refused, err)
		return
	}
	if standing {
		refused = 1
	}
	gauge(c.refused, float64(refused))
}
