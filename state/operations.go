package state

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Operation is an in-flight ARM long-running operation. The executor records
// it (in its own Update, so it is durable before polling starts) and deletes
// it when the operation finishes; after a crash, Operations lists what to
// resume polling.
type Operation struct {
	// Key identifies the operation, normally the resource key.
	Key       string    `json:"key"`
	ARMID     string    `json:"armId"`
	Method    string    `json:"method"` // PUT or DELETE
	StartedAt time.Time `json:"startedAt"`
	// PollURL is the Azure-AsyncOperation or Location URL to poll.
	PollURL string `json:"pollUrl,omitempty"`
}

// PutOperation records an in-flight operation under op.Key.
func (w *Writer) PutOperation(op Operation) error {
	if op.Key == "" {
		return fmt.Errorf("state: put operation for %s: key is required", op.ARMID)
	}
	v, err := json.Marshal(op)
	if err != nil {
		return fmt.Errorf("state: put operation %s: %w", op.Key, err)
	}
	if err := w.tx.Bucket(bucketOperations).Put([]byte(op.Key), v); err != nil {
		return fmt.Errorf("state: put operation %s: %w", op.Key, err)
	}
	return nil
}

// DeleteOperation forgets the operation under key; a missing key is not an error.
func (w *Writer) DeleteOperation(key string) error {
	if err := w.tx.Bucket(bucketOperations).Delete([]byte(key)); err != nil {
		return fmt.Errorf("state: delete operation %s: %w", key, err)
	}
	return nil
}

// Operations returns every recorded in-flight operation, sorted by key.
func (db *DB) Operations() ([]Operation, error) {
	var out []Operation
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOperations).ForEach(func(k, v []byte) error {
			var op Operation
			if err := json.Unmarshal(v, &op); err != nil {
				return fmt.Errorf("decode operation %s: %w", k, err)
			}
			out = append(out, op)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state: list operations: %w", err)
	}
	return out, nil
}
