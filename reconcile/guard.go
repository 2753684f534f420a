package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// ErrNotHeld is returned by ApproveDeletions when no held run of the given
// revision exists.
var ErrNotHeld = errors.New("no deletions of that revision are held")

// ErrSuperseded is returned (in a *SupersededError) by ApproveDeletions when
// the held revision is no longer the newest revision of the source: the
// daemon plans the newer one, so an approval of the held one would release
// nothing.
var ErrSuperseded = errors.New("the held revision is superseded")

// SupersededError names the held revision an approval asked for and the
// revision that superseded it.
type SupersededError struct {
	// Held is the revision of the held run; Current the newest revision
	// the source had, which the daemon plans instead.
	Held, Current string
}

func (e *SupersededError) Error() string {
	return fmt.Sprintf("%v: revision %s was held, but revision %s is the newest of the source now and is what gitaso plans; "+
		"approving %s would release nothing (approve %s if it is held, or commit again)",
		ErrSuperseded, e.Held, e.Current, e.Held, e.Current)
}

func (e *SupersededError) Unwrap() error { return ErrSuperseded }

// Superseded returns the held and the current revision (the API's 409).
func (e *SupersededError) Superseded() (held, current string) { return e.Held, e.Current }

// ApproveDeletions releases the held deletions of a revision (a full commit
// SHA or a unique prefix of at least 7 characters): exactly the resources the
// held run listed, nothing else. It records the approval and triggers a run;
// a later revision that still exceeds the guard is held again. A held
// revision that a newer one superseded is not approved: *SupersededError.
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
	var held *record.Run
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
	latest, err := r.db.LatestRevision()
	if err != nil {
		return fmt.Errorf("approve deletions: %w", err)
	}
	if latest != "" && latest != held.Revision {
		return &SupersededError{Held: held.Revision, Current: latest}
	}
	a := record.Approval{Revision: held.Revision, Keys: held.Held.Keys, ApprovedAt: time.Now().UTC(), By: "api"}
	if err := r.db.Update(func(w *state.Writer) error { return w.PutApproval(a) }); err != nil {
		return fmt.Errorf("approve deletions: %w", err)
	}
	r.log.InfoContext(ctx, "deletions approved", "revision", held.Revision, "deletions", len(a.Keys))
	r.Trigger(true)
	return nil
}

// hold decides whether a plan's deletions must wait for an approval: the
// mass-deletion guard (Config.Guard; an empty revision always), then, when
// Azure can be read, parents whose deletion would take resources gitaso does
// not manage with it. An approval recorded for the revision that covers
// every deletion, or Options.ApproveDeletions, releases them.
func (r *Reconciler) hold(ctx context.Context, ru *run, g *planner.Graph, p *planner.Plan, prior map[string]record.Resource) *record.Hold {
	if len(p.Deletions()) == 0 || ru.opts.ApproveDeletions {
		return nil
	}
	if r.db != nil {
		a, ok, err := r.db.Approval(p.Revision)
		if err != nil {
			r.log.WarnContext(ctx, "read approval", "revision", p.Revision, "error", err)
		}
		if ok && planner.Approves(a, p) {
			return nil
		}
	}
	h := r.cfg.Guard.Check(p, len(prior))
	if h != nil && ru.pathMissing != "" {
		h.Reason = record.HoldPathMissing
		h.Message = fmt.Sprintf("the source path %q does not exist at revision %s: every managed resource (%d) would be deleted", ru.pathMissing, p.Revision, h.Deletions)
	}
	if r.clients == nil {
		return h
	}
	// One hold names every problem: the unmanaged contents are read even
	// when the guard holds the revision already.
	lc := r.listingsFor(ctx, p.Revision, ru.opts.DryRun)
	found, err := r.unmanagedChildren(ctx, g, p, prior, lc)
	lc.close(ctx)
	if err == nil && len(found) == 0 {
		return h
	}
	if h == nil {
		h = &record.Hold{Reason: record.HoldUnmanagedChildren, Deletions: len(p.Deletions()), Managed: len(prior), Keys: p.Deletions()}
	} else {
		h.Message += "; also, "
	}
	if err != nil {
		h.Message += fmt.Sprintf("could not read what the resources to delete contain, so their deletion is held: %v", err)
		return h
	}
	var parents []string
	for parent, ids := range found {
		parents = append(parents, parent)
		h.Unmanaged = append(h.Unmanaged, ids...)
	}
	sort.Strings(parents)
	sort.Strings(h.Unmanaged)
	h.Message += fmt.Sprintf("deleting %s would also delete %d resources gitaso does not manage (ARM deletes a parent's contents with it, "+
		"role assignments at or below it included): delete or move them first, annotate the parent %s: \"true\", or approve",
		strings.Join(parents, ", "), len(h.Unmanaged), planner.AnnotationDeleteUnmanaged)
	if n := countLocks(h.Unmanaged); n > 0 {
		h.Message += fmt.Sprintf("; %d of them are management locks, under which ARM refuses the deletion (ScopeLocked) until they are removed", n)
	}
	return h
}

// countLocks counts the management locks among ARM IDs.
func countLocks(ids []string) int {
	n := 0
	for _, id := range ids {
		if strings.Contains(strings.ToLower(id), "/providers/microsoft.authorization/locks/") {
			n++
		}
	}
	return n
}

// recordHeld records a held revision: its plan (with the hold), a run with
// outcome held, nothing applied (no drift correction either: the newest run
// stays the held one until an approval or a new revision).
func (r *Reconciler) recordHeld(ctx context.Context, ru *run, g *planner.Graph, p *planner.Plan, planJSON []byte) error {
	rep, opts := ru.rep, ru.opts
	h := p.Held
	rep.Run.Outcome, rep.Run.Held, rep.Run.Error = record.OutcomeHeld, h, h.Message
	rep.Run.Counts = map[string]int{}
	for a, n := range p.Summary() {
		rep.Run.Counts[a.String()] = n
	}
	rep.Run.Summary = "held: " + summary(p)
	rep.Run.FinishedAt = time.Now().UTC()
	if r.db != nil {
		if err := r.db.Update(func(w *state.Writer) error {
			if err := w.SetLatestRevision(g.Revision); err != nil {
				return err
			}
			if err := keepPhasePlans(w, opts); err != nil {
				return err
			}
			if err := w.SetPlan(planJSON); err != nil {
				return err
			}
			// The units that failed are shown failed even though nothing
			// of the revision is applied; the others stay as they were.
			if err := recordUnits(w, rep.units.failedRecords(time.Now().UTC()), nil, nil); err != nil {
				return err
			}
			if ctx.Err() == nil {
				// A hold is an answer, not an interruption: whoever
				// approves it (or changes Azure meanwhile: a lock, a role
				// assignment added) gets a run that reads every collection
				// again. Only a run stopped half way resumes from its
				// listings (listings.go).
				if _, err := w.DeleteListings("", time.Time{}); err != nil {
					return err
				}
			}
			return w.PutRun(&rep.Run)
		}); err != nil {
			return fmt.Errorf("record held run: %w", err)
		}
	}
	r.lastErr.Store(h.Message)
	r.readyWithApplied()
	if r.reportedHeld != g.Revision {
		r.reportedHeld = g.Revision
		r.log.WarnContext(ctx, "revision held: nothing of it is applied until its deletions are approved",
			"revision", g.Revision, "reason", h.Reason, "deletions", h.Deletions, "managed", h.Managed, "unmanaged", len(h.Unmanaged), "message", h.Message)
	}
	return nil
}
