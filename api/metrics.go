package api

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gitaso/gitaso/record"
)

// metrics writes the Prometheus text exposition format (version 0.0.4) by
// hand: every value is read from state at scrape time, so counters survive
// restarts and there is no registry to keep in sync.
func (s *server) metrics(w http.ResponseWriter, r *http.Request) {
	ready, err := s.db.ReadyCounts()
	if err != nil {
		s.internal(w, r, err)
		return
	}
	totals, err := s.db.RunTotals()
	if err != nil {
		s.internal(w, r, err)
		return
	}
	// The newest run, and the newest finished one (one run at a time: a
	// run in progress is the newest, the finished one is next).
	runs, err := s.db.Runs(2)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	ops, err := s.db.Operations()
	if err != nil {
		s.internal(w, r, err)
		return
	}

	var b bytes.Buffer
	header := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	header("gitaso_resources", "gauge", "Resources in state by the status of their Ready condition.")
	for _, st := range []string{record.StatusTrue, record.StatusFalse, record.StatusUnknown} {
		fmt.Fprintf(&b, "gitaso_resources{ready=%q} %d\n", st, ready[st])
	}
	header("gitaso_runs_total", "counter", "Reconcile runs finished, by outcome.")
	for _, o := range record.Outcomes {
		fmt.Fprintf(&b, "gitaso_runs_total{outcome=%q} %d\n", string(o), totals[o])
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
	header("gitaso_last_run_timestamp_seconds", "gauge", "Unix time the latest run finished (or started, while it runs); 0 before the first run.")
	fmt.Fprintf(&b, "gitaso_last_run_timestamp_seconds %s\n", formatFloat(last))
	header("gitaso_last_run_duration_seconds", "gauge", "Duration of the latest finished run.")
	fmt.Fprintf(&b, "gitaso_last_run_duration_seconds %s\n", formatFloat(dur))
	header("gitaso_operations_in_flight", "gauge", "ARM long-running operations recorded as in flight.")
	fmt.Fprintf(&b, "gitaso_operations_in_flight %d\n", len(ops))
	held, deletions := 0, 0
	for _, run := range runs {
		if run.Outcome == "" {
			continue
		}
		if run.Outcome == record.OutcomeHeld {
			held = 1
			if run.Held != nil {
				deletions = run.Held.Deletions
			}
		}
		break
	}
	header("gitaso_revision_held", "gauge", "1 when the newest finished run was held: its deletions wait for POST /api/v1/approve.")
	fmt.Fprintf(&b, "gitaso_revision_held %d\n", held)
	header("gitaso_deletions_held", "gauge", "Deletions the newest finished run holds for an approval; 0 unless it was held.")
	fmt.Fprintf(&b, "gitaso_deletions_held %d\n", deletions)

	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
