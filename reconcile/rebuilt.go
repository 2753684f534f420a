package reconcile

import (
	"fmt"
	"log/slog"

	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// rebuiltMark returns the state's rebuilt marker (`gitaso state rebuild`),
// nil when it has none.
func (r *Reconciler) rebuiltMark() (*state.RebuiltMark, error) {
	if r.db == nil {
		return nil, nil
	}
	m, err := r.db.Rebuilt()
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	return m, nil
}

// noteRebuilt says in the log and the run record what a run over a rebuilt
// state did, and reports whether the marker ends with it: every resource of
// the revision is recorded (the run succeeded, nothing is held, no object
// is left known after apply for a later phase).
func (r *Reconciler) noteRebuilt(ru *run, p *planner.Plan) bool {
	m, rep := ru.rebuilt, ru.rep
	if m == nil || p == nil || rep.Result == nil {
		return false
	}
	var noWrite, put int
	for _, rr := range rep.Result.Resources {
		if rr == nil || rr.Resource == nil || rr.Resource.Action != planner.Adopt {
			continue
		}
		switch rr.Outcome {
		case executor.Adopted:
			noWrite++
		case executor.Applied:
			put++
		}
	}
	done := rep.Run.Outcome == record.OutcomeSucceeded && p.Held == nil && len(p.Deferred) == 0
	note := fmt.Sprintf("%s %s: %d resource(s) adopted without a write, %d adopted with a PUT (Azure differed from the manifest)",
		m.Why(), m.At.Format("2006-01-02T15:04:05Z"), noWrite, put)
	if done {
		note += "; every resource of the revision is recorded: adoption without a write ends"
	} else {
		note += "; not every resource is recorded yet: the next run adopts without a write too"
	}
	rep.Run.Rebuilt = note
	r.log.Info("adoption without a write", slog.String("why", m.Why()), slog.Int("adoptedWithoutWrite", noWrite), slog.Int("adoptedWithPut", put),
		slog.Bool("markerCleared", done), slog.String("note", note))
	return done
}
