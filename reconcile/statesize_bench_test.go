package reconcile_test

import (
	"context"
	"os"
	"testing"

	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
)

// BenchmarkStateSizeOverRuns: the state file of 1,000 converged resources,
// and the same file after 100 runs that read Azure and change nothing
// (issue 12: within 1.2× of the converged size; a run writes only the
// records that changed).
func BenchmarkStateSizeOverRuns(b *testing.B) {
	for range b.N {
		e := newResyncEnvWith(b, generateTracked(1000))
		path := e.db.Path()
		size := func() float64 {
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			return float64(fi.Size())
		}
		converged := size()
		for i := 0; i < 100; i++ {
			rep, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "refresh", Refresh: true, All: true})
			if err != nil || rep.Run.Outcome != record.OutcomeSucceeded || rep.Plan.HasChanges() {
				b.Fatalf("run %d: %v %s %v", i, err, rep.Run.Outcome, rep.Plan.Summary())
			}
		}
		after := size()
		b.ReportMetric(converged/1e6, "converged-MB")
		b.ReportMetric(after/converged, "x-after-100-runs")
	}
}
