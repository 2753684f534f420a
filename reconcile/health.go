package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
)

// DefaultUnreadyAfter is how long the source may fail to fetch, or the
// state to be written, before Ready reports the daemon not ready
// (Config.UnreadyAfter; gitaso serve --unready-after).
const DefaultUnreadyAfter = 5 * time.Minute

// health is what the loop knows of its source's fetches and its state's
// writes (record.Health). It is kept in memory: a state that cannot be
// written cannot hold it.
type health struct {
	mu  sync.Mutex
	src record.SourceHealth
	st  record.StateHealth
}

// noteFetch records the outcome of a fetch of the source. A revision that
// was fetched but cannot be used (refused, or without the source path) is
// a fetch that worked: the run records the refusal; one that cannot be
// rendered only because a chart registry does not answer is a failure. A fetch the caller
// cancelled (the daemon stopping) says nothing about the source.
func (r *Reconciler) noteFetch(ctx context.Context, snap *manifest.Snapshot, err error) {
	rev := ""
	if snap != nil {
		rev = snap.Revision
	}
	var revErr *source.RevisionError
	var missing *source.PathNotFoundError
	unavailable := source.AsUnavailable(err)
	switch {
	case unavailable != nil:
		// The commit was read but a chart registry it needs was not: a
		// source failure (source.ErrUnavailable).
		rev, err = unavailable.Revision, unavailable
	case errors.As(err, &revErr):
		rev, err = revErr.Revision, nil
	case errors.As(err, &missing):
		rev, err = missing.Revision, nil
	case err != nil && ctx.Err() != nil:
		return
	}
	h := &r.health
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now().UTC()
	h.src.LastAttemptAt = now
	if err == nil {
		if h.src.Failing {
			r.log.InfoContext(ctx, "source fetched again", "failures", h.src.ConsecutiveFailures,
				"failingFor", now.Sub(h.src.FailingSince).Round(time.Second).String())
		}
		h.src.Failing, h.src.Error, h.src.FailingSince, h.src.ConsecutiveFailures = false, "", time.Time{}, 0
		h.src.LastSuccessAt, h.src.Revision = now, rev
		return
	}
	if !h.src.Failing {
		h.src.Failing, h.src.FailingSince = true, now
	}
	h.src.Error = err.Error()
	h.src.ConsecutiveFailures++
	h.src.FailuresTotal++
}

// noteState records whether a run could write the state: failed is a
// run's error when it is a storage failure (isStorageFailure), nil after a
// run that recorded; retry is when the loop tries again.
func (r *Reconciler) noteState(ctx context.Context, failed error, retry time.Time) {
	h := &r.health
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now().UTC()
	if failed == nil {
		if h.st.Failing {
			r.log.InfoContext(ctx, "state written again", "failures", h.st.ConsecutiveFailures,
				"failingFor", now.Sub(h.st.FailingSince).Round(time.Second).String())
		}
		h.st.Failing, h.st.Error, h.st.FailingSince, h.st.ConsecutiveFailures, h.st.NextRetryAt = false, "", time.Time{}, 0, time.Time{}
		return
	}
	if !h.st.Failing {
		h.st.Failing, h.st.FailingSince = true, now
	}
	h.st.Error = failed.Error()
	h.st.ConsecutiveFailures++
	h.st.FailuresTotal++
	h.st.NextRetryAt = retry.UTC()
}

// isStorageFailure reports whether err is the state file's storage
// refusing a write: a full disk or quota, a file system turned read-only.
// Nothing was applied that was not recorded first, so such a run is safe
// to try again once there is room.
func isStorageFailure(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
}

// Status returns what the loop knows of its source and its state, and
// whether it is ready (GET /api/v1/status).
func (r *Reconciler) Status() record.Health {
	h := &r.health
	h.mu.Lock()
	out := record.Health{Source: h.src, State: h.st}
	h.mu.Unlock()
	if s, ok := r.src.(interface {
		URL() string
		Branch() string
	}); ok {
		out.Source.URL, out.Source.Branch = s.URL(), s.Branch()
	}
	if err := r.Ready(); err != nil {
		out.Reason = err.Error()
	} else {
		out.Ready = true
	}
	return out
}

// unready says why the daemon is not ready although it has applied a
// revision: its source has failed, or its state could not be written, for
// longer than Config.UnreadyAfter (0: never).
func (r *Reconciler) unready(now time.Time) error {
	after := r.cfg.UnreadyAfter
	if after <= 0 {
		return nil
	}
	h := &r.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.st.Failing && now.Sub(h.st.FailingSince) >= after {
		return fmt.Errorf("the state cannot be written since %s (%s): %s",
			h.st.FailingSince.Format(time.RFC3339), plural(h.st.ConsecutiveFailures, "failed run"), h.st.Error)
	}
	if h.src.Failing && now.Sub(h.src.FailingSince) >= after {
		return fmt.Errorf("the source cannot be fetched since %s (%s): %s",
			h.src.FailingSince.Format(time.RFC3339), plural(h.src.ConsecutiveFailures, "failed fetch"), h.src.Error)
	}
	return nil
}

// plural is n and what, in the plural unless n is 1 ("es" after ch).
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "ch") {
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
