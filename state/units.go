package state

import (
	"encoding/json"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// Units: the Flux Kustomizations and HelmReleases gitaso reconciles as units
// of their own, and the objects each last applied (kept while it fails).
//
//	units        unit ID ("Kind/namespace/name") → record.Unit (JSON)
//	unitObjects  unit ID                         → the unit's objects as last applied, sealed
//
// Both are created on first write, so a file without them reads as having
// no units. A unit's objects may hold values substituted from Secrets, so
// they are sealed with the secret exports' key (AES-256-GCM, the unit ID as
// additional data), never stored in clear.
var (
	bucketUnits       = []byte("units")
	bucketUnitObjects = []byte("unitObjects")
)

// PutUnit stores a unit's record.
func (w *Writer) PutUnit(u record.Unit) error {
	b, err := w.tx.CreateBucketIfNotExists(bucketUnits)
	if err != nil {
		return fmt.Errorf("state: put unit %s: %w", u.ID(), err)
	}
	v, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("state: put unit %s: %w", u.ID(), err)
	}
	if err := b.Put([]byte(u.ID()), v); err != nil {
		return fmt.Errorf("state: put unit %s: %w", u.ID(), err)
	}
	return nil
}

// DeleteUnit forgets a unit and its objects (the unit left Git and its
// objects were pruned).
func (w *Writer) DeleteUnit(id string) error {
	for _, name := range [][]byte{bucketUnits, bucketUnitObjects} {
		if b := w.tx.Bucket(name); b != nil {
			if err := b.Delete([]byte(id)); err != nil {
				return fmt.Errorf("state: delete unit %s: %w", id, err)
			}
		}
	}
	return nil
}

// PutUnitObjects stores the unit's objects as last applied (opaque bytes the
// reconciler encodes), sealed.
func (w *Writer) PutUnitObjects(id string, objects []byte) error {
	aead, err := w.db.cipher(true)
	if err != nil {
		return fmt.Errorf("state: put objects of unit %s: %w", id, err)
	}
	b, err := w.tx.CreateBucketIfNotExists(bucketUnitObjects)
	if err != nil {
		return fmt.Errorf("state: put objects of unit %s: %w", id, err)
	}
	ct, err := seal(aead, objects, []byte(id))
	if err != nil {
		return fmt.Errorf("state: put objects of unit %s: %w", id, err)
	}
	if err := b.Put([]byte(id), ct); err != nil {
		return fmt.Errorf("state: put objects of unit %s: %w", id, err)
	}
	return nil
}

// Units returns every unit's record, sorted by ID.
func (db *DB) Units() ([]record.Unit, error) {
	var out []record.Unit
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUnits)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var u record.Unit
			if err := json.Unmarshal(v, &u); err != nil {
				return fmt.Errorf("decode unit %s: %w", k, err)
			}
			out = append(out, u)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state: read units: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out, nil
}

// Unit returns one unit's record.
func (db *DB) Unit(id string) (record.Unit, bool, error) {
	var (
		u  record.Unit
		ok bool
	)
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUnits)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(id))
		if v == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(v, &u)
	})
	if err != nil {
		return record.Unit{}, false, fmt.Errorf("state: read unit %s: %w", id, err)
	}
	return u, ok, nil
}

// UnitObjects returns the unit's objects as last applied, unsealed; false
// when none are stored.
func (db *DB) UnitObjects(id string) ([]byte, bool, error) {
	var sealed []byte
	err := db.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketUnitObjects); b != nil {
			if v := b.Get([]byte(id)); v != nil {
				sealed = append([]byte(nil), v...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("state: read objects of unit %s: %w", id, err)
	}
	if sealed == nil {
		return nil, false, nil
	}
	aead, err := db.cipher(false)
	if err != nil {
		return nil, false, fmt.Errorf("state: read objects of unit %s: %w", id, err)
	}
	plain, err := open(aead, sealed, []byte(id))
	if err != nil {
		return nil, false, fmt.Errorf("state: read objects of unit %s: %w", id, err)
	}
	return plain, true, nil
}
