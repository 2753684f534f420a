package state

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// metaRefused holds the standing refusal: the run that refused the newest
// revision, kept until a later revision renders (a run of the last good
// revision that follows it, a refresh, does not clear it).
var metaRefused = []byte("refused")

// SetRefused records run as the standing refusal, replacing any other.
func (w *Writer) SetRefused(run *record.Run) error {
	v, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("state: set refused run: %w", err)
	}
	if err := w.tx.Bucket(bucketMeta).Put(metaRefused, v); err != nil {
		return fmt.Errorf("state: set refused run: %w", err)
	}
	return nil
}

// ClearRefused forgets the standing refusal (a later revision rendered).
func (w *Writer) ClearRefused() error {
	if err := w.tx.Bucket(bucketMeta).Delete(metaRefused); err != nil {
		return fmt.Errorf("state: clear refused run: %w", err)
	}
	return nil
}

// Refused returns the standing refusal: the run that refused the newest
// revision the source had, while no later revision rendered; false when
// there is none.
func (db *DB) Refused() (record.Run, bool, error) {
	var run record.Run
	found := false
	err := db.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get(metaRefused)
		if v == nil {
			return nil
		}
		found = true
		return json.Unmarshal(v, &run)
	})
	if err != nil {
		return record.Run{}, false, fmt.Errorf("state: read refused run: %w", err)
	}
	return run, found, nil
}
