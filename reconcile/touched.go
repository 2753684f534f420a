package reconcile

import (
	"time"

	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// What the status page shows of a run (the resources it touched) and of a
// resource (the runs that touched it, the diff of its last change) is
// recorded here: the touched list once per run, in the transaction that
// stores the run; the previous body when a resource's applied body changes,
// in the transaction that stores its result.

// touchedOf returns what the run did to rr's resource, and false when it
// did nothing worth listing (up to date, or only read).
func touchedOf(rr *executor.ResourceResult) (record.Touched, bool) {
	if rr == nil || rr.Resource == nil {
		return record.Touched{}, false
	}
	act := rr.Resource.Action
	switch rr.Outcome {
	case executor.Failed, executor.Skipped:
	case executor.Unchanged:
		return record.Touched{}, false
	default:
		if act == planner.NoOp || act == planner.Observe {
			return record.Touched{}, false
		}
	}
	t := record.Touched{Key: rr.Key, Action: act.String(), Outcome: string(rr.Outcome)}
	if rr.Outcome == executor.Failed || rr.Outcome == executor.Skipped {
		t.Error = rr.Ready.Message
	}
	return t, true
}

// keepChange records the body rr replaces as the last change of its
// resource when the applied body changed.
func keepChange(w *state.Writer, prior record.Resource, rr *executor.ResourceResult, rev string, now time.Time) error {
	if rr.Hash == "" || rr.Hash == prior.AppliedHash {
		return nil
	}
	return w.PutChange(rr.Key, record.Change{Revision: rev, At: now, Action: rr.Resource.Action.String(), Previous: prior.AppliedBody})
}
