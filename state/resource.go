package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// PutResource stores r under r.Key(), replacing what was there. A zero
// UpdatedAt is set to the current time.
func (w *Writer) PutResource(r record.Resource) error {
	if r.Namespace == "" || r.Kind == "" || r.Name == "" {
		return fmt.Errorf("state: put resource %q: namespace, kind and name are required", r.Key())
	}
	if strings.Contains(r.Namespace, "/") || strings.Contains(r.Group, "/") || strings.Contains(r.Kind, "/") {
		return fmt.Errorf("state: put resource %q: namespace, group and kind must not contain '/'", r.Key())
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = time.Now().UTC()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("state: put resource %s: %w", r.Key(), err)
	}
	if err := w.tx.Bucket(bucketResources).Put([]byte(r.Key()), b); err != nil {
		return fmt.Errorf("state: put resource %s: %w", r.Key(), err)
	}
	w.noteReady(r.Key(), r.ReadyStatus())
	w.noteResourceChange()
	return nil
}

// DeleteResource removes the resource with key; a missing key is not an error.
func (w *Writer) DeleteResource(key string) error {
	if err := w.tx.Bucket(bucketResources).Delete([]byte(key)); err != nil {
		return fmt.Errorf("state: delete resource %s: %w", key, err)
	}
	w.noteReady(key, "")
	w.noteResourceChange()
	return nil
}

// Resource reads a resource inside the write transaction (seeing this
// transaction's own writes).
func (w *Writer) Resource(key string) (record.Resource, bool, error) {
	return getResource(w.tx, key)
}

// SetReady merges cond into the stored resource's Ready condition with
// MergeCondition (ASO's overwrite rules) and reports whether it changed. It
// fails when the resource is not stored.
func (w *Writer) SetReady(key string, cond record.Condition, now time.Time) (bool, error) {
	r, ok, err := getResource(w.tx, key)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("state: set ready on %s: resource not found", key)
	}
	if cond.Type == "" {
		cond.Type = record.ConditionReady
	}
	merged, changed := record.MergeCondition(r.Ready, cond, now)
	if !changed {
		return false, nil
	}
	r.Ready = merged
	r.UpdatedAt = now.UTC()
	return true, w.PutResource(r)
}

// Resource returns the resource stored under key ("namespace/group/Kind/name").
func (db *DB) Resource(key string) (record.Resource, bool, error) {
	var (
		r  record.Resource
		ok bool
	)
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		r, ok, err = getResource(tx, key)
		return err
	})
	return r, ok, err
}

func getResource(tx *bolt.Tx, key string) (record.Resource, bool, error) {
	v := tx.Bucket(bucketResources).Get([]byte(key))
	if v == nil {
		return record.Resource{}, false, nil
	}
	var r record.Resource
	if err := json.Unmarshal(v, &r); err != nil {
		return record.Resource{}, false, fmt.Errorf("state: decode resource %s: %w", key, err)
	}
	return r, true, nil
}

// Resources returns the resources matching f, sorted by key (namespace, group,
// Kind, name).
func (db *DB) Resources(f record.Filter) ([]record.Resource, error) {
	ready, err := record.ParseReady(f.Ready)
	if err != nil {
		return nil, err
	}
	var out []record.Resource
	err = db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketResources).Cursor()
		var k, v []byte
		var prefix []byte
		if f.Namespace != "" {
			prefix = []byte(f.Namespace + "/")
			k, v = c.Seek(prefix)
		} else {
			k, v = c.First()
		}
		// Values point into the mmap and stay valid until the transaction
		// ends; they are decoded (which copies) before it does, a chunk at a
		// time. A read longer than a chunk drops the file's pages from the
		// resident set after each chunk: a plan's full read at 100,000
		// resources otherwise held 200 MB of them on top of the decoded
		// records.
		var keys, vals [][]byte
		released := false
		flush := func() error {
			all, err := decodeResources(keys, vals)
			if err != nil {
				return err
			}
			keys, vals = keys[:0], vals[:0]
			for _, r := range all {
				if ready == "" || r.ReadyStatus() == ready {
					out = append(out, r)
				}
			}
			return nil
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			_, group, kind, _, ok := record.SplitKey(string(k))
			if !ok || !f.MatchKey(group, kind) {
				continue
			}
			keys, vals = append(keys, k), append(vals, v)
			if len(vals) == decodeChunk {
				if err := flush(); err != nil {
					return err
				}
				if err := db.releasePages(tx); err != nil {
					return err
				}
				released = true
			}
		}
		if err := flush(); err != nil {
			return err
		}
		if released {
			return db.releasePages(tx)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: list resources: %w", err)
	}
	return out, nil
}

// decodeChunk is how many records Resources decodes at a time.
const decodeChunk = 4096

// decodeResources decodes vals in parallel (JSON decoding dominates a full
// read), each goroutine writing its own slots.
func decodeResources(keys, vals [][]byte) ([]record.Resource, error) {
	out := make([]record.Resource, len(vals))
	workers := min(runtime.GOMAXPROCS(0), len(vals)/256+1)
	chunk := (len(vals) + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, len(vals))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				if err := json.Unmarshal(vals[i], &out[i]); err != nil {
					errs[w] = fmt.Errorf("decode resource %s: %w", keys[i], err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
