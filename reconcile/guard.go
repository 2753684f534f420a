package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gitaso/gitaso/state"
)

// ErrNotHeld is returned by ApproveDeletions when no held run of the given
// revision exists.
var ErrNotHeld = errors.New("no deletions of that revision are held")

// ApproveDeletions releases the held deletions of a revision (a full commit
// SHA or a unique prefix of at least 7 characters): exactly the resources the
// held run listed, nothing else. It records the approval and triggers a run;
// a later revision that still exceeds the guard is held again.
func (r *Reconciler) ApproveDeletions(ctx context.Context, revision string) error {
	if r.db == nil {
		return errors.New("approve deletions: no state")
	}
	revision = strings.TrimSpace(revision)
	if len(revision) < 7 {
		return fmt.Errorf("approve deletions: revision %q: give at least 7 characters of it", revision)
	}
	runs, err := r.db.Runs(0)
	if err != nil {
		return fmt.Errorf("approve deletions: %w", err)
	}
	var held *state.Run
	for i := range runs {
		run := &runs[i]
		if run.Held == nil || !strings.HasPrefix(run.Revision, revision) {
			continue
		}
		if held != nil && held.Revision != run.Revision {
			return fmt.Errorf("approve deletions: revision prefix %q is ambiguous (%s, %s)", revision, held.Revision, run.Revision)
		}
		if held == nil {
			held = run // newest first
		}
	}
	if held == nil {
		return fmt.Errorf("%w: %s", ErrNotHeld, revision)
	}
	a := state.Approval{Revision: held.Revision, Keys: held.Held.Keys, ApprovedAt: time.Now().UTC(), By: "api"}
	if err := r.db.Update(func(w *state.Writer) error { return w.PutApproval(a) }); err != nil {
		return fmt.Errorf("approve deletions: %w", err)
	}
	r.log.InfoContext(ctx, "deletions approved", "revision", held.Revision, "deletions", len(a.Keys))
	r.Trigger(true)
	return nil
}
