package reconcile

import (
	"slices"
	"sync"
	"time"

	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// Progress is recorded while a plan runs, so that the API shows it and a
// crash loses at most the last flush interval of results: ASO's transient
// Reconciling and Deleting conditions when the run starts, then each
// resource's result within flushInterval of it being known.

const flushInterval = 250 * time.Millisecond

// releaseEvery is how often a run drops the state file's pages from the
// resident set while it records progress.
const releaseEvery = 5 * time.Second

// markInProgress writes Ready Unknown/Info Reconciling (or Deleting) for
// every resource the plan writes or deletes, under ASO's overwrite rules,
// markBatch resources per transaction: a transaction holds every page it
// changes in memory until it commits (280 MB for 100,000 new records in
// one), and the marks need not be written at once (a crash between two
// leaves some resources marked, which the next run marks again or settles).
func (r *Reconciler) markInProgress(p *planner.Plan, prior map[string]record.Resource) error {
	if r.db == nil {
		return nil
	}
	now := time.Now().UTC()
	for rs := range slices.Chunk(p.Resources, markBatch) {
		if err := r.db.Update(func(w *state.Writer) error {
			for _, pr := range rs {
				if err := markOne(w, pr, prior, now); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// markBatch is how many resources markInProgress marks per transaction.
const markBatch = 4096

func markOne(w *state.Writer, pr *planner.Resource, prior map[string]record.Resource, now time.Time) error {
	reason, msg := "", ""
	switch {
	case pr.Action.Writes():
		reason, msg = "Reconciling", "the resource is being reconciled ("+pr.Action.String()+")"
	case pr.Action == planner.Delete && pr.DeletedWith == "":
		reason, msg = "Deleting", "the resource is being deleted"
	default:
		return nil
	}
	key := pr.Key()
	if pr.MovedFrom != "" {
		// Until its result is recorded, a moved resource's record
		// is the old key's.
		key = pr.MovedFrom
	}
	s, ok := prior[key]
	if !ok {
		s = record.Resource{Namespace: pr.Namespace, Group: pr.Group, Version: pr.Version, Kind: pr.Kind, Name: pr.Name,
			ARMID: pr.ARMID, APIVersion: pr.APIVersion, File: pr.File, Credential: pr.Credential, Policy: string(pr.Policy)}
	}
	cond := record.Condition{Type: record.ConditionReady, Status: record.StatusUnknown, Severity: record.SeverityInfo,
		Reason: reason, Message: msg}
	setReady(&s, s.Ready, cond, generation(s, pr.Hash, pr.ARMID), now)
	return w.PutResource(s)
}

// recorder batches results from the executor's goroutines into periodic
// transactions.
type recorder struct {
	r     *Reconciler
	prior map[string]record.Resource
	rev   string

	mu      sync.Mutex
	pending []*executor.ResourceResult
	// ended are the keys of operations that ended, forgotten with the next
	// write.
	ended []string
	// touched lists what the run did, stored with the run (write only).
	touched []record.Touched
	done    chan struct{}
	wg      sync.WaitGroup

	// deletedWith lists, per resource the plan deletes with a DELETE, the
	// resources ARM deletes with it (planner.Resource.DeletedWith): their
	// records go in the transaction that records the parent's deletion.
	// The executor reports them a little later (after every deletion ahead
	// of them in its queue, which ARM's throttling can make seconds): a
	// crash in between used to leave their records, and the next run sent
	// each of them a DELETE of its own for a resource already gone (half
	// the DELETEs of a restart, with 900 identities killed every 13 s).
	deletedWith map[string][]string
}

func newRecorder(r *Reconciler, prior map[string]record.Resource, p *planner.Plan) *recorder {
	rec := &recorder{r: r, prior: prior, rev: p.Revision, done: make(chan struct{}), deletedWith: map[string][]string{}}
	for _, pr := range p.Resources {
		if pr.Action == planner.Delete && pr.DeletedWith != "" {
			rec.deletedWith[pr.DeletedWith] = append(rec.deletedWith[pr.DeletedWith], pr.Key())
		}
	}
	if r.db == nil {
		return rec
	}
	rec.wg.Add(1)
	go func() {
		defer rec.wg.Done()
		t := time.NewTicker(flushInterval)
		defer t.Stop()
		released := time.Now()
		for {
			select {
			case <-rec.done:
				return
			case <-t.C:
				if err := r.db.Update(rec.write); err != nil {
					r.log.Error("record progress", "error", err)
				}
				// Each write reads the pages it changes, and a run changes
				// records all over the file: drop them from the resident
				// set now and then rather than keep the whole file (23 MB
				// at 10,000 resources) for the whole run.
				if time.Since(released) >= releaseEvery {
					released = time.Now()
					if err := r.db.ReleasePages(); err != nil {
						r.log.Debug("releasing the state file's pages", "error", err)
					}
				}
			}
		}
	}()
	return rec
}

func (rec *recorder) add(rr *executor.ResourceResult) {
	rec.mu.Lock()
	rec.pending = append(rec.pending, rr)
	rec.mu.Unlock()
}

// operation records a long-running operation as it starts, in its own
// transaction so that it is durable before the executor polls it, and
// forgets it with the next write once it ended (with its result, which the
// executor reports right after). A crash in between leaves the operation
// recorded: the next run resumes it, which costs one poll of an operation
// that is over.
func (rec *recorder) operation(op record.Operation, done bool) {
	if rec.r.db == nil {
		return
	}
	if done {
		rec.mu.Lock()
		rec.ended = append(rec.ended, op.Key)
		rec.mu.Unlock()
		return
	}
	if err := rec.r.db.Update(func(w *state.Writer) error { return w.PutOperation(op) }); err != nil {
		rec.r.log.Error("record operation", "resource", op.Key, "method", op.Method, "error", err)
	}
}

// stop ends periodic flushing; the caller writes what is left with write.
func (rec *recorder) stop() {
	close(rec.done)
	rec.wg.Wait()
}

// write records the pending results in w's transaction.
func (rec *recorder) write(w *state.Writer) error {
	rec.mu.Lock()
	batch, ended := rec.pending, rec.ended
	rec.pending, rec.ended = nil, nil
	rec.mu.Unlock()
	for _, k := range ended {
		if err := w.DeleteOperation(k); err != nil {
			return err
		}
	}
	now := time.Now().UTC()
	for _, rr := range batch {
		key := rr.Key
		if from := rr.Resource.MovedFrom; from != "" {
			// A move: the old key's record becomes this one's.
			if _, ok, err := w.Resource(from); err != nil {
				return err
			} else if ok {
				key = from
			}
		}
		prior, _, err := w.Resource(key)
		if err != nil {
			return err
		}
		// The in-progress mark must not count as the prior condition's
		// history: merge with the condition from before the run.
		if p, ok := rec.prior[key]; ok {
			prior.Ready = p.Ready
		} else {
			prior.Ready = record.Condition{}
		}
		if err := recordOne(w, rr, prior, rec.rev, now); err != nil {
			return err
		}
		if rr.Outcome == executor.Deleted {
			if err := rec.forgetDeletedWith(w, rr.Key); err != nil {
				return err
			}
		}
		if t, ok := touchedOf(rr); ok {
			rec.touched = append(rec.touched, t)
		}
	}
	// Recorded: the bodies are in the state file now. The run's result
	// keeps each resource's outcome and condition, not the body sent, its
	// hash, ARM's answer or the values exported (about 1 KB a resource, held
	// to the end of the run before: 100 MB at 100,000).
	for _, rr := range batch {
		rr.Body, rr.Response, rr.Outputs, rr.Secrets, rr.Hash = nil, nil, nil, nil, ""
	}
	return nil
}

// forgetDeletedWith forgets the records of the resources ARM deleted with
// the resource under key (see recorder.deletedWith).
func (rec *recorder) forgetDeletedWith(w *state.Writer, key string) error {
	for _, k := range rec.deletedWith[key] {
		s, ok, err := w.Resource(k)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := w.DeleteChange(k); err != nil {
			return err
		}
		if err := forget(w, k, s); err != nil {
			return err
		}
	}
	return nil
}
