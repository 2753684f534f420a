package state

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// The audit trail is kept in its own bucket, keyed by a sequence number
// (big-endian, so in the order written): AppendAudit adds, AuditPage reads
// newest first, PruneAudit drops what is older than the retention.

// AppendAudit stores events in one transaction, assigning each zero ID the
// next sequence number (written back into the events).
func (db *DB) AppendAudit(events ...*record.AuditEvent) error {
	if len(events) == 0 {
		return nil
	}
	return db.Update(func(w *Writer) error { return w.AppendAudit(events...) })
}

// AppendAudit stores events within a transaction.
func (w *Writer) AppendAudit(events ...*record.AuditEvent) error {
	b := w.tx.Bucket(bucketAudit)
	for _, e := range events {
		if e.ID == 0 {
			id, err := b.NextSequence()
			if err != nil {
				return fmt.Errorf("state: append audit event: %w", err)
			}
			e.ID = id
		}
		v, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("state: append audit event %d: %w", e.ID, err)
		}
		if err := b.Put(u64(e.ID), v); err != nil {
			return fmt.Errorf("state: append audit event %d: %w", e.ID, err)
		}
	}
	return nil
}

// AuditPage returns at most limit audit events older than the event with
// ID before (0: from the newest), newest first, and whether older ones
// remain.
func (db *DB) AuditPage(before uint64, limit int) ([]record.AuditEvent, bool, error) {
	var out []record.AuditEvent
	more := false
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		if b == nil {
			return nil // a file opened read-only, written before the audit trail
		}
		c := b.Cursor()
		var k, v []byte
		if before == 0 {
			k, v = c.Last()
		} else {
			c.Seek(u64(before))
			k, v = c.Prev()
		}
		for ; k != nil; k, v = c.Prev() {
			if len(out) == limit {
				more = true
				return nil
			}
			var e record.AuditEvent
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode audit event %d: %w", binary.BigEndian.Uint64(k), err)
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("state: read audit trail: %w", err)
	}
	return out, more, nil
}

// PruneAudit deletes the audit events recorded before cutoff and returns
// how many. Events are in the order written, so it stops at the first kept.
func (db *DB) PruneAudit(cutoff time.Time) (int, error) {
	n := 0
	err := db.Update(func(w *Writer) error {
		c := w.tx.Bucket(bucketAudit).Cursor()
		for k, v := c.First(); k != nil; k, v = c.First() {
			var e struct {
				At time.Time `json:"at"`
			}
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode audit event %d: %w", binary.BigEndian.Uint64(k), err)
			}
			if !e.At.Before(cutoff) {
				return nil
			}
			if err := c.Delete(); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("state: prune audit trail: %w", err)
	}
	return n, nil
}
