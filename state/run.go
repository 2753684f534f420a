package state

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// PutRun stores r. A zero r.ID is replaced by the next sequence number (and
// written back into r); a non-zero ID replaces that run, so a run can be
// written when it starts and again when it finishes. Runs beyond the
// configured maximum are pruned, oldest first. The per-outcome totals behind
// RunTotals count a run once, when it is first stored with an Outcome.
func (w *Writer) PutRun(r *record.Run) error {
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
			var p record.Run
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

func (w *Writer) countOutcome(o record.Outcome) error {
	meta := w.tx.Bucket(bucketMeta)
	counts := map[record.Outcome]uint64{}
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
func (db *DB) Runs(limit int) ([]record.Run, error) {
	var out []record.Run
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRuns).Cursor()
		for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
			var r record.Run
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
func (db *DB) RunTotals() (map[record.Outcome]uint64, error) {
	counts := map[record.Outcome]uint64{}
	for _, o := range record.Outcomes {
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
