package state

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// PutApproval stores an approval, replacing one for the same revision.
func (w *Writer) PutApproval(a record.Approval) error {
	v, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("state: put approval: %w", err)
	}
	if err := w.tx.Bucket(bucketApprovals).Put([]byte(a.Revision), v); err != nil {
		return fmt.Errorf("state: put approval %s: %w", a.Revision, err)
	}
	return nil
}

// DeleteApproval forgets the approval of a revision (once used).
func (w *Writer) DeleteApproval(revision string) error {
	if err := w.tx.Bucket(bucketApprovals).Delete([]byte(revision)); err != nil {
		return fmt.Errorf("state: delete approval %s: %w", revision, err)
	}
	return nil
}

// Approval returns the approval of a revision, if any.
func (db *DB) Approval(revision string) (record.Approval, bool, error) {
	var a record.Approval
	found := false
	err := db.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketApprovals).Get([]byte(revision))
		if v == nil {
			return nil
		}
		found = true
		return json.Unmarshal(v, &a)
	})
	if err != nil {
		return record.Approval{}, false, fmt.Errorf("state: read approval %s: %w", revision, err)
	}
	return a, found, nil
}
