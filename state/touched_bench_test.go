package state

import (
	"fmt"
	"testing"

	"github.com/gitaso/gitaso/record"
)

// BenchmarkPutTouched10k stores what a run that created 10,000 resources
// touched: its list once, and one history entry per resource, in one
// transaction (as the reconciler does with the run).
//
//	go test -tags kustomize_disable_go_plugin_support ./state/ -run '^$' -bench PutTouched10k
func BenchmarkPutTouched10k(b *testing.B) {
	db, _ := openTemp(b)
	touched := make([]record.Touched, 10000)
	for i := range touched {
		touched[i] = record.Touched{Key: fmt.Sprintf("team-%02d/storage.azure.com/StorageAccount/acct%05d", i%50, i), Action: "create", Outcome: "applied"}
	}
	for b.Loop() {
		run := &record.Run{Revision: "0123456789abcdef0123456789abcdef01234567", StartedAt: t0, Outcome: record.OutcomeSucceeded}
		if err := db.Update(func(w *Writer) error {
			if err := w.PutRun(run); err != nil {
				return err
			}
			return w.PutTouched(run, touched)
		}); err != nil {
			b.Fatal(err)
		}
	}
}
