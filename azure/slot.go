package azure

import (
	"context"
	"time"
)

// Slot is a caller's share of bounded concurrency (the executor's
// --parallelism), carried in the context of the calls it makes. A
// long-running operation hands it back while it waits between polls and
// takes it again before the next poll, so operations waiting on ARM do not
// keep others from starting: with ARM's Retry-After of 10 to 20 s, 32 slots
// held through their waits allowed fewer writes a second than ARM's bucket
// refills (issue 12).
type Slot interface {
	// Release hands the slot back; Acquire takes it again, waiting for a
	// free one, until ctx ends.
	Release()
	Acquire(ctx context.Context) error
}

type slotKey struct{}

// WithSlot returns a context whose long-running operations hand s back
// while they wait.
func WithSlot(ctx context.Context, s Slot) context.Context {
	return context.WithValue(ctx, slotKey{}, s)
}

// sleep waits d or until ctx ends, without the context's slot meanwhile. It
// returns the context's cause when it ends first (the slot is then not
// taken again).
func sleep(ctx context.Context, d time.Duration) error {
	s, _ := ctx.Value(slotKey{}).(Slot)
	if s != nil {
		s.Release()
	}
	t := time.NewTimer(d)
	select {
	case <-ctx.Done():
		t.Stop()
		return context.Cause(ctx)
	case <-t.C:
	}
	if s != nil {
		return s.Acquire(ctx)
	}
	return nil
}
