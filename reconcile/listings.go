package reconcile

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gitaso/gitaso/state"
)

// Resuming a deletion: before a revision's deletions run, the
// unmanaged-children check (cascade.go) reads every collection a deleted
// parent holds, 900 listings for 900 identities, and nothing is deleted
// before the last one is read. A process that stops during the check or the
// deletions (kill -9, a crash, a restart) used to read them all again: under
// ARM's read throttling (25 a second once 250 are spent) a process that
// lived 13 s never reached its first DELETE.
//
// So each listing is recorded in the state file as it is read (batched, one
// transaction per flushInterval: a crash loses at most that much), and a
// later run uses a recorded listing instead of reading the collection again
// when all of these hold:
//
//   - same revision: the plan that asked for it is the same commit's (a new
//     commit reads everything again, and the listings of other revisions are
//     forgotten);
//   - same collection, API version and credential;
//   - read less than listingMaxAge ago;
//   - everything it holds is still managed or declared, or a child ARM
//     creates with its parent, by the state and graph of the run that reuses
//     it: a listing that names a resource gitaso does not manage is always
//     read again, so a hold is decided on a fresh read and clears as soon as
//     that resource is gone.
//
// The decision (README.md says it too): the check's answer
// can change at any moment, since anyone can create a child under a parent
// gitaso is about to delete; what matters is how old the answer is when the
// DELETE is sent. An uninterrupted run already deletes on listings read
// minutes before (900 identities under ARM's throttling: 26 s of listings,
// then 70 s of DELETEs). A recorded listing is trusted for listingMaxAge,
// a few times that, and never across revisions; after that the child
// collections are read again before anything is deleted. Dry runs (gitaso
// plan) neither use nor record listings.
//
// A run that ends held forgets every listing (guard.go recordHeld): a hold is
// an answer people act on (they remove a lock, approve), and the run after
// it reads everything again. Only a run stopped half way resumes.
//
// What else a stopped deletion run leaves is resumed by other means: a
// long-running DELETE in flight is recorded as an operation and polled to
// its end (resume.go); a DELETE ARM accepted is recorded with the next
// progress flush (progress.go), and one accepted in the last flushInterval
// before a crash is sent again, which ARM answers 404 (done).

// listingMaxAge is how long a recorded listing stands in for reading the
// collection again (see above).
const listingMaxAge = 10 * time.Minute

// listingCache serves the listings of one run's unmanaged-children check:
// from the state file when a valid one is recorded, else from ARM, recorded
// as they come. A nil *listingCache reads everything and records nothing.
type listingCache struct {
	r        *Reconciler
	revision string
	now      time.Time
	recorded map[string]state.Listing
	stale    int // listings to forget: other revisions, too old

	mu      sync.Mutex
	pending []state.Listing
	started bool
	done    chan struct{}
	wg      sync.WaitGroup

	reused, read atomic.Int64
}

// listingsFor returns the listing cache of a run of revision; nil for a dry
// run or without a state file.
func (r *Reconciler) listingsFor(ctx context.Context, revision string, dryRun bool) *listingCache {
	if dryRun || r.db == nil || revision == "" {
		return nil
	}
	now := time.Now().UTC()
	rec, stale, err := r.db.Listings(revision, now.Add(-listingMaxAge))
	if err != nil {
		// Nothing recorded can be used: every collection is read.
		r.log.WarnContext(ctx, "read recorded child listings", "error", err)
		rec = nil
	}
	return &listingCache{r: r, revision: revision, now: now, recorded: rec, stale: stale, done: make(chan struct{})}
}

// list returns the IDs a collection holds: the recorded listing when it is
// valid and clean says that everything in it is still accounted for, else
// what read returns (recorded unless it failed).
func (c *listingCache) list(l listing, clean func([]string) bool, read func() ([]string, error)) ([]string, error) {
	if c == nil {
		return read()
	}
	key := state.ListingKey(c.revision, l.credential, l.path, l.apiVersion)
	if rec, ok := c.recorded[key]; ok && clean(rec.IDs) {
		c.reused.Add(1)
		return rec.IDs, nil
	}
	ids, err := read()
	if err != nil {
		return nil, err
	}
	c.read.Add(1)
	c.add(state.Listing{Revision: c.revision, Credential: l.credential, Path: l.path, APIVersion: l.apiVersion,
		ListedAt: time.Now().UTC(), IDs: ids})
	return ids, nil
}

// add queues a listing for the next flush, starting the flusher.
func (c *listingCache) add(l state.Listing) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, l)
	if c.started {
		return
	}
	c.started = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(flushInterval)
		defer t.Stop()
		for {
			select {
			case <-c.done:
				return
			case <-t.C:
				if err := c.flush(); err != nil {
					c.r.log.Error("record child listings", "error", err)
				}
			}
		}
	}()
}

// flush writes the pending listings in one transaction, and forgets the
// stale ones with the first.
func (c *listingCache) flush() error {
	c.mu.Lock()
	batch, prune := c.pending, c.stale > 0
	c.pending, c.stale = nil, 0
	c.mu.Unlock()
	if len(batch) == 0 && !prune {
		return nil
	}
	return c.r.db.Update(func(w *state.Writer) error {
		if prune {
			if _, err := w.DeleteListings(c.revision, c.now.Add(-listingMaxAge)); err != nil {
				return err
			}
		}
		for _, l := range batch {
			if err := w.PutListing(l); err != nil {
				return err
			}
		}
		return nil
	})
}

// close stops the flusher and writes what is left.
func (c *listingCache) close(ctx context.Context) {
	if c == nil {
		return
	}
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if started {
		close(c.done)
		c.wg.Wait()
	}
	if err := c.flush(); err != nil {
		c.r.log.ErrorContext(ctx, "record child listings", "error", err)
	}
	if n := c.reused.Load(); n > 0 {
		c.r.log.InfoContext(ctx, "child listings recorded by an earlier run of this revision were used, not read again",
			"revision", c.revision, "reused", n, "read", c.read.Load(), "maxAge", listingMaxAge)
	}
}
