package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/gitaso/gitaso/manifest"
)

// errSuperseded is the cause of a fetch's context ending because the
// branch moved on while the revision was read and rendered.
var errSuperseded = errors.New("a newer commit superseded the revision being rendered")

// headReader is a source that can tell the branch's commit without
// fetching it (source.Git: ls-remote).
type headReader interface {
	Head(ctx context.Context) (string, error)
}

// maxSuperseded is how many renders in a row one fetch abandons for a
// newer commit before it lets the last one finish (a branch pushed to
// faster than it renders still gets a revision).
const maxSuperseded = 3

// fetch is the source's Fetch; in the daemon loop (Loop sets superseding)
// with a source that reads its branch's head, it also asks for the head
// every poll interval while the revision is read and rendered, and
// abandons the render when a newer commit arrived, to fetch that one
// instead: a render that runs long (up to the render deadline,
// source.Limits.RenderTimeout) never keeps a fix commit waiting.
func (r *Reconciler) fetch(ctx context.Context) (*manifest.Snapshot, error) {
	h, ok := r.src.(headReader)
	if !ok || !r.superseding.Load() {
		return r.src.Fetch(ctx)
	}
	every := max(r.cfg.Interval, time.Second)
	for attempt := 0; ; attempt++ {
		start, err := h.Head(ctx)
		if err != nil || attempt == maxSuperseded {
			return r.src.Fetch(ctx) // which reports the error
		}
		fctx, cancel := context.WithCancelCause(ctx)
		done := make(chan struct{})
		go watchHead(fctx, h, start, every, cancel, done)
		snap, err := r.src.Fetch(fctx)
		close(done)
		superseded := errors.Is(context.Cause(fctx), errSuperseded)
		cancel(nil)
		if !superseded || ctx.Err() != nil {
			return snap, err
		}
		r.log.WarnContext(ctx, "render abandoned: a newer commit arrived while it ran", "revision", start)
	}
}

// watchHead cancels the fetch with errSuperseded when the branch's head is
// no longer start, asking every period until done closes.
func watchHead(ctx context.Context, h headReader, start string, every time.Duration, cancel context.CancelCauseFunc, done <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			if head, err := h.Head(ctx); err == nil && head != start {
				cancel(errSuperseded)
				return
			}
		}
	}
}
