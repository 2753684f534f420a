package state

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// PutOperation records an in-flight operation under op.Key.
func (w *Writer) PutOperation(op record.Operation) error {
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
func (db *DB) Operations() ([]record.Operation, error) {
	var out []record.Operation
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOperations).ForEach(func(k, v []byte) error {
			var op record.Operation
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
