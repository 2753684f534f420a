package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// What the status page shows of a run and of a resource's history lives in
// three buckets of its own, created on first write (a database without them
// reads as empty), so that recording a run never rewrites resource records:
//
//	runResources   run ID (big-endian)            → []Touched (JSON), written once per run
//	resourceRuns   resource key, 0x00, run ID     → ResourceRun (JSON); the newest MaxResourceRuns per resource
//	changes        resource key                   → Change (JSON): the body before the last change
var (
	bucketRunResources = []byte("runResources")
	bucketResourceRuns = []byte("resourceRuns")
	bucketChanges      = []byte("changes")
)

// MaxResourceRuns is how many runs a resource's history keeps, newest first.
const MaxResourceRuns = 20

// PutTouched records the resources run (already stored by PutRun, so with
// its ID) touched: the list once under the run, and one small entry per
// resource in that resource's history, which keeps its newest
// MaxResourceRuns. Lists of runs pruned by PutRun are pruned with them.
func (w *Writer) PutTouched(run *record.Run, touched []record.Touched) error {
	if run.ID == 0 {
		return fmt.Errorf("state: put touched: the run has no ID (store it with PutRun first)")
	}
	if len(touched) == 0 {
		return nil
	}
	runs, err := w.tx.CreateBucketIfNotExists(bucketRunResources)
	if err != nil {
		return fmt.Errorf("state: put touched of run %d: %w", run.ID, err)
	}
	v, err := json.Marshal(touched)
	if err != nil {
		return fmt.Errorf("state: put touched of run %d: %w", run.ID, err)
	}
	if err := runs.Put(u64(run.ID), v); err != nil {
		return fmt.Errorf("state: put touched of run %d: %w", run.ID, err)
	}
	if err := w.pruneTouched(runs, run.ID); err != nil {
		return err
	}
	hist, err := w.tx.CreateBucketIfNotExists(bucketResourceRuns)
	if err != nil {
		return fmt.Errorf("state: put touched of run %d: %w", run.ID, err)
	}
	for _, t := range touched {
		e, err := json.Marshal(record.ResourceRun{Run: run.ID, Revision: run.Revision, StartedAt: run.StartedAt,
			Action: t.Action, Outcome: t.Outcome, Error: t.Error})
		if err != nil {
			return fmt.Errorf("state: put history of %s: %w", t.Key, err)
		}
		prefix := historyPrefix(t.Key)
		if err := hist.Put(append(prefix, u64(run.ID)...), e); err != nil {
			return fmt.Errorf("state: put history of %s: %w", t.Key, err)
		}
		if err := pruneHistory(hist, prefix); err != nil {
			return fmt.Errorf("state: prune history of %s: %w", t.Key, err)
		}
	}
	return nil
}

func historyPrefix(key string) []byte {
	p := make([]byte, 0, len(key)+9)
	return append(append(p, key...), 0)
}

// pruneHistory keeps the newest MaxResourceRuns entries under prefix.
func pruneHistory(b *bolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for len(keys) > MaxResourceRuns {
		if err := b.Delete(keys[0]); err != nil {
			return err
		}
		keys = keys[1:]
	}
	return nil
}

// pruneTouched drops the lists of runs PutRun no longer keeps.
func (w *Writer) pruneTouched(b *bolt.Bucket, newest uint64) error {
	max := uint64(w.db.opts.maxRuns)
	if newest <= max {
		return nil
	}
	cutoff := newest - max
	var old [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= cutoff; k, _ = c.Next() {
		old = append(old, append([]byte(nil), k...))
	}
	for _, k := range old {
		if err := b.Delete(k); err != nil {
			return fmt.Errorf("state: prune touched of run %d: %w", binary.BigEndian.Uint64(k), err)
		}
	}
	return nil
}

// PutChange records the last change of the resource under key (the body
// before it, redacted); it replaces the previous change.
func (w *Writer) PutChange(key string, c record.Change) error {
	b, err := w.tx.CreateBucketIfNotExists(bucketChanges)
	if err != nil {
		return fmt.Errorf("state: put change of %s: %w", key, err)
	}
	v, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("state: put change of %s: %w", key, err)
	}
	if err := b.Put([]byte(key), v); err != nil {
		return fmt.Errorf("state: put change of %s: %w", key, err)
	}
	return nil
}

// DeleteChange forgets the last change of the resource under key (it was
// deleted); a missing key is not an error.
func (w *Writer) DeleteChange(key string) error {
	b := w.tx.Bucket(bucketChanges)
	if b == nil {
		return nil
	}
	if err := b.Delete([]byte(key)); err != nil {
		return fmt.Errorf("state: delete change of %s: %w", key, err)
	}
	return nil
}

// Change returns the last change of the resource under key.
func (db *DB) Change(key string) (record.Change, bool, error) {
	var (
		c  record.Change
		ok bool
	)
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketChanges)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(key))
		if v == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(v, &c)
	})
	if err != nil {
		return record.Change{}, false, fmt.Errorf("state: read change of %s: %w", key, err)
	}
	return c, ok, nil
}

// Run returns the run with id and the resources it touched.
func (db *DB) Run(id uint64) (record.Run, []record.Touched, bool, error) {
	var (
		r       record.Run
		touched []record.Touched
		ok      bool
	)
	err := db.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketRuns).Get(u64(id))
		if v == nil {
			return nil
		}
		ok = true
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		if b := tx.Bucket(bucketRunResources); b != nil {
			if v := b.Get(u64(id)); v != nil {
				return json.Unmarshal(v, &touched)
			}
		}
		return nil
	})
	if err != nil {
		return record.Run{}, nil, false, fmt.Errorf("state: read run %d: %w", id, err)
	}
	return r, touched, ok, nil
}

// ResourceRuns returns the runs that touched the resource under key, newest
// first (at most MaxResourceRuns).
func (db *DB) ResourceRuns(key string) ([]record.ResourceRun, error) {
	var out []record.ResourceRun
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketResourceRuns)
		if b == nil {
			return nil
		}
		prefix := historyPrefix(key)
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var e record.ResourceRun
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: read history of %s: %w", key, err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
