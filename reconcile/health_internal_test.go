package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// TestReadyAfterUnreadyAfter: a failing source (or state) makes Ready fail
// only once it has failed for Config.UnreadyAfter (never with 0); a fetch
// of a refused revision is not a failure, and one that works clears it.
func TestReadyAfterUnreadyAfter(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		after     time.Duration
		wantReady bool
	}{
		{"never", 0, true},
		{"not yet", time.Hour, true},
		{"at once", time.Nanosecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(nil, nil, nil, Config{UnreadyAfter: tc.after}, nil)
			r.ready.Store(true) // a revision was applied
			r.noteFetch(ctx, nil, errors.New("git fetch https://git.example.com/x.git: 503"))
			if err := r.Ready(); (err == nil) != tc.wantReady {
				t.Errorf("source failing: Ready() = %v, want ready %v", err, tc.wantReady)
			} else if err != nil && !strings.Contains(err.Error(), "(1 failed fetch): git fetch https://git.example.com/x.git: 503") {
				t.Errorf("Ready() = %v", err)
			}
			if h := r.Status(); !h.Source.Failing || h.Ready != tc.wantReady {
				t.Errorf("Status() = %+v", h)
			}
			// A refused revision was fetched: the source works.
			r.noteFetch(ctx, nil, &source.RevisionError{Revision: "bad0"})
			if err := r.Ready(); err != nil {
				t.Errorf("after a refused revision was fetched: %v", err)
			}
			if h := r.Status(); h.Source.Failing || h.Source.Revision != "bad0" || h.Source.ConsecutiveFailures != 0 || h.Source.FailuresTotal != 1 {
				t.Errorf("Status() after a refused revision: %+v", h.Source)
			}
			r.noteState(ctx, errors.New("record plan: no space left on device"), time.Now().Add(time.Second))
			if err := r.Ready(); (err == nil) != tc.wantReady {
				t.Errorf("state failing: Ready() = %v, want ready %v", err, tc.wantReady)
			}
			r.noteState(ctx, nil, time.Time{})
			r.noteFetch(ctx, &manifest.Snapshot{Revision: "c0ffee"}, nil)
			if err := r.Ready(); err != nil {
				t.Errorf("after recovery: %v", err)
			}
			if h := r.Status(); h.State.Failing || h.State.FailuresTotal != 1 || h.Source.Revision != "c0ffee" || !h.Ready {
				t.Errorf("Status() after recovery: %+v", h)
			}
		})
	}
}

// TestNoteFetchIgnoresCancel: a fetch cancelled by the caller (the daemon
// stopping) is not a source failure.
func TestNoteFetchIgnoresCancel(t *testing.T) {
	r := New(nil, nil, nil, Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.noteFetch(ctx, nil, context.Canceled)
	if h := r.Status(); h.Source.Failing || !h.Source.LastAttemptAt.IsZero() {
		t.Errorf("a cancelled fetch counted: %+v", h.Source)
	}
}
