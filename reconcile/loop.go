package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Trigger asks the loop for a run as soon as possible; refresh also reads
// Azure back for drift. It never blocks.
func (r *Reconciler) Trigger(refresh bool) {
	select {
	case r.trigger <- refresh:
	default:
	}
}

// Sync is the API's hook: it triggers a run with a refresh.
func (r *Reconciler) Sync(context.Context) error {
	r.Trigger(true)
	return nil
}

// Ready reports nil once a run has completed, or why not.
func (r *Reconciler) Ready() error {
	if r.ready.Load() {
		return nil
	}
	if s, _ := r.lastErr.Load().(string); s != "" {
		return errors.New("no revision applied yet: " + s)
	}
	return errors.New("no revision applied yet")
}

// Loop reconciles until ctx ends: at start, whenever the source's revision
// changes (polled every Interval), when triggered, and with a refresh of
// Azure every SyncPeriod.
func (r *Reconciler) Loop(ctx context.Context) error {
	if r.cfg.Interval <= 0 {
		return fmt.Errorf("reconcile loop: interval must be positive")
	}
	lastRev := ""
	run := func(trigger string, refresh, all bool) {
		rep, err := r.Once(ctx, Options{Trigger: trigger, Refresh: refresh, All: all})
		if rep != nil {
			lastRev = rep.Run.Revision
			r.log.InfoContext(ctx, "run finished", "revision", rep.Run.Revision, "trigger", trigger,
				"outcome", string(rep.Run.Outcome), "summary", rep.Run.Summary, "refresh", refresh)
		}
		if err != nil && ctx.Err() == nil {
			r.log.ErrorContext(ctx, "run failed", "error", err)
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
			run("api", refresh, true)
		case <-tick.C:
			if due := r.nextDue; !due.IsZero() && !time.Now().Before(due) {
				run("resync", true, false)
				continue
			}
			rev, err := r.peekRevision(ctx)
			if err != nil {
				r.log.WarnContext(ctx, "poll source", "error", err)
				continue
			}
			if rev != lastRev {
				run("interval", false, false)
			}
		}
	}
}

// peekRevision fetches the source and returns its revision.
func (r *Reconciler) peekRevision(ctx context.Context) (string, error) {
	snap, err := r.src.Fetch(ctx)
	if err != nil {
		return "", err
	}
	return snap.Revision, nil
}
