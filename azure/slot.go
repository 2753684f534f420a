package azure

import (
	"context"
	"time"
)

// Slot is a caller's share of bounded concurrency (the executor's
// --parallelism), given to the client its calls go through
// (CallOptions.Slot). A long-running operation hands it back while it waits
// between polls and takes it again before the next poll, so operations
// waiting on ARM do not keep others from starting: with ARM's Retry-After of
// 10 to 20 s, 32 slots held through their waits allowed fewer writes a
// second than ARM's bucket refills (issue 12).
type Slot interface {
	// Release hands the slot back; Acquire takes it again, waiting for a
	// free one, until ctx ends.
	Release()
	Acquire(ctx context.Context) error
}

// CallOptions are what a caller gives the calls of one client besides their
// arguments (Client.With): the share of concurrency they hold and the
// function that hears of the long-running operations they start. The zero
// value is a client's own: no slot, nobody told.
type CallOptions struct {
	// Slot, when not nil, is handed back while a long-running operation
	// waits between polls and taken again before the next poll.
	Slot Slot
	// OperationStarted, when not nil, is called by Put, Patch and Delete,
	// from the calling goroutine, when ARM answers with a long-running
	// operation and before the client starts waiting for it. pollURL is the
	// absolute Azure-AsyncOperation URL, else the Location URL, else (ARM's
	// "poll the resource" pattern) the resource's own URL. Synchronous
	// answers never call it. Post does not call it (actions are not resumed).
	OperationStarted func(pollURL string)
}

// With returns a client that acts as c (the same pipeline, credential and
// endpoint) whose calls are made with o in place of c's options.
func (c *Client) With(o CallOptions) *Client {
	cp := *c
	cp.call = o
	return &cp
}

// sleep waits d or until ctx ends, without the client's slot meanwhile. It
// returns the context's cause when it ends first (the slot is then not
// taken again).
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	s := c.call.Slot
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

// started tells the caller where ARM said to poll the operation it started.
func (c *Client) started(pollURL string) {
	if fn := c.call.OperationStarted; fn != nil {
		fn(pollURL)
	}
}
