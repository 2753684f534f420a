package state

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Outcome is how a run ended.
type Outcome string

// Run outcomes. A run still in progress has an empty Outcome.
const (
	OutcomeSucceeded Outcome = "succeeded" // every action applied
	OutcomeFailed    Outcome = "failed"    // nothing or not all could be applied because of errors
	OutcomeRefused   Outcome = "refused"   // the revision was invalid and not applied at all
	OutcomePartial   Outcome = "partial"   // some resources failed, the rest was applied
	OutcomeHeld      Outcome = "held"      // the revision's deletions wait for an approval; nothing of it was applied
)

// Outcomes lists every outcome, in a stable order (for metrics).
var Outcomes = []Outcome{OutcomeSucceeded, OutcomeFailed, OutcomeRefused, OutcomePartial, OutcomeHeld}

// Run is one reconcile: which revision, why, when, and what it did.
type Run struct {
	// ID is assigned by PutRun when zero; IDs increase with every new run.
	ID         uint64    `json:"id"`
	Revision   string    `json:"revision"`
	Trigger    string    `json:"trigger,omitempty"` // e.g. "interval", "webhook", "api", "startup"
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	Outcome    Outcome   `json:"outcome,omitempty"`
	Error      string    `json:"error,omitempty"`
	// Counts is the number of resources per action (create, update, delete...).
	Counts  map[string]int `json:"counts,omitempty"`
	Summary string         `json:"summary,omitempty"`
	// Held says why the run's deletions wait for an approval (Outcome
	// held), or which deletions were held back in an otherwise applied run
	// (a parent holding resources gitaso does not manage).
	Held *Hold `json:"held,omitempty"`
}

// PutRun stores r. A zero r.ID is replaced by the next sequence number (and
// written back into r); a non-zero ID replaces that run, so a run can be
// written when it starts and again when it finishes. Runs beyond the
// configured maximum are pruned, oldest first. The per-outcome totals behind
// RunTotals count a run once, when it is first stored with an Outcome.
func (w *Writer) PutRun(r *Run) error {
	b := w.tx.Bucket(bucketRuns)
	if r.ID == 0 {
		id, err := b.NextSequence()
		if err != nil {
			return fmt.Errorf("state: put run: %w", err)
		}
		r.ID = id
	} else if r.ID > b.Sequence() {
		if err := b.SetSequence(r.ID); err != nil {
			return fmt.Errorf("state: put run %d: %w", r.ID, err)
		}
	}
	key := u64(r.ID)
	if r.Outcome != "" {
		counted := false
		if prev := b.Get(key); prev != nil {
			var p Run
			if err := json.Unmarshal(prev, &p); err != nil {
				return fmt.Errorf("state: put run %d: decode previous: %w", r.ID, err)
			}
			counted = p.Outcome != ""
		}
		if !counted {
			if err := w.countOutcome(r.Outcome); err != nil {
				return err
			}
		}
	}
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("state: put run %d: %w", r.ID, err)
	}
	if err := b.Put(key, v); err != nil {
		return fmt.Errorf("state: put run %d: %w", r.ID, err)
	}
	return w.pruneRuns()
}

func (w *Writer) countOutcome(o Outcome) error {
	meta := w.tx.Bucket(bucketMeta)
	counts := map[Outcome]uint64{}
	if v := meta.Get(metaRunCounts); v != nil {
		if err := json.Unmarshal(v, &counts); err != nil {
			return fmt.Errorf("state: decode run totals: %w", err)
		}
	}
	counts[o]++
	v, err := json.Marshal(counts)
	if err != nil {
		return fmt.Errorf("state: encode run totals: %w", err)
	}
	if err := meta.Put(metaRunCounts, v); err != nil {
		return fmt.Errorf("state: store run totals: %w", err)
	}
	return nil
}

func (w *Writer) pruneRuns() error {
	b := w.tx.Bucket(bucketRuns)
	c := b.Cursor()
	last, _ := c.Last()
	if last == nil {
		return nil
	}
	newest := binary.BigEndian.Uint64(last)
	max := uint64(w.db.opts.maxRuns)
	if newest <= max {
		return nil
	}
	cutoff := newest - max // keys <= cutoff go
	var old [][]byte
	for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= cutoff; k, _ = c.Next() {
		old = append(old, append([]byte(nil), k...))
	}
	for _, k := range old {
		if err := b.Delete(k); err != nil {
			return fmt.Errorf("state: prune run %d: %w", binary.BigEndian.Uint64(k), err)
		}
	}
	return nil
}

// Runs returns up to limit runs, newest first; limit <= 0 returns all kept runs.
func (db *DB) Runs(limit int) ([]Run, error) {
	var out []Run
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRuns).Cursor()
		for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
			var r Run
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode run %d: %w", binary.BigEndian.Uint64(k), err)
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: list runs: %w", err)
	}
	return out, nil
}

// RunTotals returns how many runs ever finished with each outcome (not
// reduced by pruning), for metrics. Every outcome in Outcomes is present.
func (db *DB) RunTotals() (map[Outcome]uint64, error) {
	counts := map[Outcome]uint64{}
	for _, o := range Outcomes {
		counts[o] = 0
	}
	err := db.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(metaRunCounts); v != nil {
			return json.Unmarshal(v, &counts)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: read run totals: %w", err)
	}
	return counts, nil
}
