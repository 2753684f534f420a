package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gitaso/gitaso/source"
)

// MinTriggerInterval is the least time between the end of a run and the
// start of a triggered one (POST /api/v1/sync, an approval, a webhook).
// Triggers are cheap to send and runs are not: 700 POSTs in 5 s made 129
// runs when every trigger ran at once. A trigger that arrives sooner waits,
// and every trigger arriving while one waits (or while a run is in
// progress) is absorbed by it.
const MinTriggerInterval = 2 * time.Second

// Trigger asks the loop for a run; refresh also reads Azure back for drift
// and adoption. It never blocks. Triggers coalesce: one is pending at most,
// and it is a refresh when any of those it absorbed was, so a refresh is
// never lost behind a pending poll.
func (r *Reconciler) Trigger(refresh bool) {
	for {
		select {
		case r.trigger <- refresh:
			return
		default:
		}
		if !refresh {
			return // the pending trigger, poll or refresh, covers a poll
		}
		// A trigger is pending and may be a poll: take it out and put
		// back a refresh. Another caller may get in between; each turn
		// either sends or frees the slot, so this ends.
		select {
		case <-r.trigger:
		default:
		}
	}
}

// Sync is the API's hook: it triggers a run with a refresh.
func (r *Reconciler) Sync(context.Context) error {
	r.Trigger(true)
	return nil
}

// Poll is the webhook receiver's hook: it triggers a fetch of the source, and
// a run (trigger "webhook", like a poll of the interval) only if the
// revision changed.
func (r *Reconciler) Poll(context.Context) error {
	r.Trigger(false)
	return nil
}

// Ready reports nil once a run has completed, or once a run refused or
// held the newest revision while state holds a revision applied before
// (by this process or an earlier one: it stays in force, as after a refused
// revision in a running daemon), unless since then the source has failed to
// fetch, or the state to be written, for longer than Config.UnreadyAfter
// (health.go); otherwise it says why not, naming the revision state holds.
func (r *Reconciler) Ready() error {
	if r.ready.Load() {
		if err := r.unready(time.Now()); err != nil {
			return err
		}
		return nil
	}
	last, _ := r.lastErr.Load().(string)
	applied := ""
	if r.db != nil {
		var err error
		if applied, err = r.db.LastGoodRevision(); err != nil {
			return fmt.Errorf("read the applied revision: %w", err)
		}
	}
	switch {
	case applied == "" && last != "":
		return errors.New("no revision applied yet: " + last)
	case applied == "":
		return errors.New("no revision applied yet: the first run is in progress")
	case last != "":
		return fmt.Errorf("revision %s (applied before this start) stays in force, but no run has completed since the start: %s", applied, last)
	}
	return fmt.Errorf("revision %s (applied before this start) stays in force; the first run since the start is in progress", applied)
}

// readyWithApplied marks the reconciler ready when state holds a revision
// applied before (a refused or held revision leaves it in force).
func (r *Reconciler) readyWithApplied() {
	if r.db == nil || r.ready.Load() {
		return
	}
	if applied, err := r.db.LastGoodRevision(); err == nil && applied != "" {
		r.ready.Store(true)
	}
}

// Retry back-off for resources that failed with a retryable error (ASO
// requeues from 1 s up to a few minutes).
const (
	minRetry = time.Second
	maxRetry = 3 * time.Minute
)

// Loop reconciles until ctx ends: at start, whenever the source's revision
// changes (polled every Interval; resources new to state are read from Azure
// then, so that one that already exists shows as adopt), when triggered
// (coalesced, and no sooner than MinTriggerInterval after the previous run),
// when resources are due for a refresh (SyncPeriod, per namespace or kind),
// after a back-off when a run left resources failed with a retryable
// error (honouring ARM's Retry-After), and after a back-off when a run
// could not write the state (a full disk: nothing was applied).
//
// Every fetch has a deadline (source.GitOptions.Timeout), so a Git server
// that never answers fails a poll instead of stopping the loop; a failed
// fetch, like a state that cannot be written, is shown by Status until it
// works again.
func (r *Reconciler) Loop(ctx context.Context) error {
	if r.cfg.Interval <= 0 {
		return fmt.Errorf("reconcile loop: interval must be positive")
	}
	dropExecutablePages(r)
	r.superseding.Store(true) // a newer commit abandons a render in progress (supersede.go)
	lastRev := ""
	backoff := time.Duration(0)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	// The trigger waiting for its turn: pending, and whether it is a
	// refresh; gate fires when MinTriggerInterval has passed since lastEnd.
	var (
		pending, pendingRefresh bool
		gate                    <-chan time.Time
		lastEnd                 time.Time
	)
	// Resyncs run on their own clock, not on poll ticks: the timer fires
	// when the next resource is due (one sync period after the run that
	// last read it started).
	resync := time.NewTimer(time.Hour)
	resync.Stop()
	defer resync.Stop()
	armResync := func() {
		resync.Stop()
		due := r.nextDue
		if due.IsZero() {
			return
		}
		wait := time.Until(due)
		if wait <= 0 {
			// Still due after a run (a read failed, or the run outlasted
			// the period): try again a poll interval on, not at once.
			wait = r.cfg.Interval
		}
		resync.Reset(wait)
	}
	run := func(trigger string, refresh, all bool) {
		defer r.returnMemory()
		defer armResync()
		defer func() { lastEnd = time.Now() }()
		first, err := r.Once(ctx, Options{Trigger: trigger, Refresh: refresh, All: all})
		// A run applies in phases when objects were known after apply; the
		// last phase's revision is the one in force.
		var rep *Report
		for ph, phase := first, 1; ph != nil; ph, phase = ph.Then, phase+1 {
			rep = ph
			lastRev = ph.Run.Revision
			r.log.InfoContext(ctx, "run finished", "revision", ph.Run.Revision, "trigger", trigger, "phase", phase,
				"outcome", string(ph.Run.Outcome), "summary", ph.Run.Summary, "refresh", refresh)
		}
		if err != nil && ctx.Err() == nil {
			r.log.ErrorContext(ctx, "run failed", "error", err)
		}
		retry.Stop()
		if err != nil && isStorageFailure(err) {
			// Nothing was applied that could not be recorded first: try
			// again, backing off, rather than at the next sync period.
			backoff = nextBackoff(backoff)
			r.noteState(ctx, err, time.Now().Add(backoff))
			r.log.WarnContext(ctx, "the state cannot be written; retrying", "in", backoff.String(), "error", err)
			retry.Reset(backoff)
			return
		}
		if rep != nil && rep.Run.Outcome != "" && ctx.Err() == nil {
			r.noteState(ctx, nil, time.Time{}) // the run recorded
		}
		var again bool
		var after time.Duration
		for ph := first; ph != nil; ph = ph.Then {
			if ph.Result != nil {
				a, d := ph.Result.Retry()
				again, after = again || a, max(after, d)
			}
		}
		if rep == nil {
			return
		}
		if !again {
			backoff = 0
			if d := first.unitRetryIn(); d > 0 {
				// A unit whose source did not answer (a chart registry):
				// rendered again after its retryInterval, commit or not.
				r.log.InfoContext(ctx, "retrying units whose source did not answer", "in", d.String())
				retry.Reset(d)
			}
			return
		}
		backoff = nextBackoff(backoff)
		wait := max(backoff, after)
		r.log.InfoContext(ctx, "retrying failed resources", "in", wait.String())
		retry.Reset(wait)
	}
	// runIfNew fetches the source and runs when its revision changed.
	runIfNew := func(trigger string) {
		rev, err := r.peekRevision(ctx)
		if err != nil {
			if ctx.Err() == nil {
				src := r.Status().Source
				r.log.WarnContext(ctx, "poll source", "error", err, "failures", src.ConsecutiveFailures,
					"failingSince", src.FailingSince)
			}
			return
		}
		if rev != lastRev {
			run(trigger, true, false)
		}
	}
	run("startup", true, true)
	tick := time.NewTicker(r.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case refresh := <-r.trigger:
			pendingRefresh = pendingRefresh || refresh
			if !pending {
				pending = true
				gate = time.After(max(0, time.Until(lastEnd.Add(MinTriggerInterval))))
			}
		case <-gate:
			if wait := time.Until(lastEnd.Add(MinTriggerInterval)); wait > 0 {
				gate = time.After(wait) // another run ended meanwhile
				continue
			}
			refresh := pendingRefresh
			pending, pendingRefresh, gate = false, false, nil
			if refresh {
				run("api", true, true)
				continue
			}
			// A webhook: fetch, and run only a new revision.
			runIfNew("webhook")
		case <-retry.C:
			run("retry", false, false)
		case <-resync.C:
			if due := r.nextDue; !due.IsZero() && time.Now().Before(due) {
				armResync() // a run meanwhile read what was due
				continue
			}
			run("refresh", true, false)
		case <-tick.C:
			runIfNew("interval")
		}
	}
}

// nextBackoff doubles the retry delay from minRetry up to maxRetry.
func nextBackoff(d time.Duration) time.Duration {
	if d < minRetry {
		return minRetry
	}
	return min(2*d, maxRetry)
}

// peekRevision fetches the source and returns its revision.
// A revision that cannot be used (refused, or without the source path) is
// still a new revision: the run records it as refused or held instead of
// the loop warning about it on every poll. A failed fetch is recorded for
// Status (health.go).
func (r *Reconciler) peekRevision(ctx context.Context) (string, error) {
	snap, err := r.fetch(ctx)
	r.noteFetch(ctx, snap, err)
	var revErr *source.RevisionError
	var missing *source.PathNotFoundError
	unavailable := source.AsUnavailable(err)
	switch {
	case unavailable != nil:
		// Not a new revision to refuse: its chart registry did not answer.
		// The poll fails (shown, health.go) and the next one tries again.
		return "", unavailable
	case errors.As(err, &revErr):
		return revErr.Revision, nil
	case errors.As(err, &missing):
		return missing.Revision, nil
	case err != nil:
		return "", err
	}
	return snap.Revision, nil
}
