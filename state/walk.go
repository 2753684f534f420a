package state

import (
	"encoding/json"
	"fmt"
	"hash/maphash"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// digestSeed makes Digest values comparable within one process (and only
// there: they are never stored).
var digestSeed = maphash.MakeSeed()

// ResourcesVersion returns a number that changes whenever a transaction
// that wrote or deleted a resource commits, and only then; it is read
// without a transaction. It is kept in memory: it starts again when the
// database is opened. A reader that derived something from the resources
// while ResourcesVersion returned v (read before it started reading) may
// keep it while ResourcesVersion still returns v: every later change of
// a resource changes it before its Update returns.
func (db *DB) ResourcesVersion() uint64 { return db.resVersion.Load() }

// noteResourceChange arranges for ResourcesVersion to change when w's
// transaction commits.
func (w *Writer) noteResourceChange() {
	if w.resChanged {
		return
	}
	w.resChanged = true
	db := w.db
	w.tx.OnCommit(func() { db.resVersion.Add(1) })
}

// WalkResources calls fn with every stored resource, in key order, in one
// read transaction, and returns the CommitID it read at. A caller that keeps
// something derived from each resource (an API's encoded answers) rebuilds
// it after a commit without decoding what did not change: digest is a hash
// of the stored record, equal for equal records within this process, and
// decode decodes it (only while fn runs). key is valid only while fn runs.
// The file's pages the walk touched are dropped from the resident set as it
// goes (see ReleasePages).
func (db *DB) WalkResources(fn func(key []byte, digest uint64, decode func() (record.Resource, error)) error) (uint64, error) {
	var id uint64
	err := db.view(func(tx *bolt.Tx) error {
		id = uint64(tx.ID())
		var k, v []byte
		decode := func() (record.Resource, error) {
			var r record.Resource
			if err := json.Unmarshal(v, &r); err != nil {
				return r, fmt.Errorf("decode resource %s: %w", k, err)
			}
			return r, nil
		}
		c := tx.Bucket(bucketResources).Cursor()
		n := 0
		for k, v = c.First(); k != nil; k, v = c.Next() {
			if err := fn(k, maphash.Bytes(digestSeed, v), decode); err != nil {
				return err
			}
			if n++; n%decodeChunk == 0 {
				if err := db.releasePages(tx); err != nil {
					return err
				}
			}
		}
		// The walk touched every page of the file: none of them stays in
		// the resident set (the API walks after each change it serves).
		return db.releasePages(tx)
	})
	if err != nil {
		return 0, fmt.Errorf("state: walk resources: %w", err)
	}
	return id, nil
}

// ResourcesByKey calls fn for each of keys, in order, in one read
// transaction: with the stored record's digest (as WalkResources gives it)
// and a decode of it into a value of the caller's type (a record.Resource,
// or a struct with the fields it needs), valid only while fn runs; or with
// ok false when no resource is stored under the key.
func (db *DB) ResourcesByKey(keys []string, fn func(i int, ok bool, digest uint64, decode func(into any) error) error) error {
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketResources)
		var key string
		var v []byte
		decode := func(into any) error {
			if err := json.Unmarshal(v, into); err != nil {
				return fmt.Errorf("decode resource %s: %w", key, err)
			}
			return nil
		}
		for i, k := range keys {
			key, v = k, b.Get([]byte(k))
			var digest uint64
			if v != nil {
				digest = maphash.Bytes(digestSeed, v)
			}
			if err := fn(i, v != nil, digest, decode); err != nil {
				return err
			}
			if (i+1)%decodeChunk == 0 {
				if err := db.releasePages(tx); err != nil {
					return err
				}
			}
		}
		if len(keys) >= decodeChunk {
			return db.releasePages(tx) // as WalkResources: not the whole file resident
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("state: read resources: %w", err)
	}
	return nil
}
