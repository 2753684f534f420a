package state

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Hold reasons.
const (
	// HoldMassDeletion: the revision deletes more resources than the
	// deletion guard allows.
	HoldMassDeletion = "MassDeletion"
	// HoldEmpty: the revision declares no resource at all while gitaso
	// manages some (a repository emptied, a path removed).
	HoldEmpty = "EmptyRevision"
	// HoldPathMissing: the source path does not exist at the revision.
	HoldPathMissing = "PathMissing"
	// HoldUnmanagedChildren: deleting a parent would take resources gitaso
	// does not manage with it through ARM's cascade.
	HoldUnmanagedChildren = "UnmanagedChildren"
)

// Hold describes deletions that wait for an explicit approval.
type Hold struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Deletions is how many resources the revision would delete from
	// Azure; Managed how many gitaso manages (in state).
	Deletions int `json:"deletions"`
	Managed   int `json:"managed"`
	// Keys are the state keys of the held deletions, sorted.
	Keys []string `json:"keys,omitempty"`
	// Unmanaged are the ARM IDs of resources gitaso does not manage that a
	// held deletion would take with it.
	Unmanaged []string `json:"unmanaged,omitempty"`
}

// Approval releases the held deletions of one revision: exactly the
// resources in Keys, nothing else.
type Approval struct {
	Revision   string    `json:"revision"`
	Keys       []string  `json:"keys"`
	ApprovedAt time.Time `json:"approvedAt"`
	// By says where the approval came from ("api", "cli").
	By string `json:"by,omitempty"`
}

// PutApproval stores an approval, replacing one for the same revision.
func (w *Writer) PutApproval(a Approval) error {
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
func (db *DB) Approval(revision string) (Approval, bool, error) {
	var a Approval
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
		return Approval{}, false, fmt.Errorf("state: read approval %s: %w", revision, err)
	}
	return a, found, nil
}
