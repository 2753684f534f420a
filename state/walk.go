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

// WalkResources calls fn with every stored resource, in key order, in one
// read transaction, and returns the CommitID it read at. A caller that keeps
// something derived from each resource (an API's encoded answers) rebuilds
// it after a commit without decoding what did not change: digest is a hash
// of the stored record, equal for equal records within this process, and
// decode decodes it (only while fn runs). key is valid only while fn runs.
func (db *DB) WalkResources(fn func(key []byte, digest uint64, decode func() (record.Resource, error)) error) (uint64, error) {
	var id uint64
	err := db.view(func(tx *bolt.Tx) error {
		id = uint64(tx.ID())
		c := tx.Bucket(bucketResources).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			decode := func() (record.Resource, error) {
				var r record.Resource
				if err := json.Unmarshal(v, &r); err != nil {
					return r, fmt.Errorf("decode resource %s: %w", k, err)
				}
				return r, nil
			}
			if err := fn(k, maphash.Bytes(digestSeed, v), decode); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("state: walk resources: %w", err)
	}
	return id, nil
}
