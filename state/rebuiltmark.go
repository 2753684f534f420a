package state

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// metaRebuilt marks a state that `gitaso state rebuild` started over a
// damaged file: until a run has recorded every resource of its revision, a
// resource found in Azure as its manifest declares it is recorded as applied
// without a write (planner.Input.AdoptWithoutWrite).
var metaRebuilt = []byte("rebuilt")

// RebuiltMark is what the marker of a rebuilt state holds.
type RebuiltMark struct {
	// At is when the state was rebuilt (UTC).
	At time.Time `json:"at"`
	// Aside is where the damaged file went, "" for an import.
	Aside string `json:"aside,omitempty"`
	// Import says that `gitaso state import` set the marker, to take over
	// an estate that exists in Azure, rather than a rebuild.
	Import bool `json:"import,omitempty"`
	// FromASO says that `gitaso import` or `gitaso handover` set the
	// marker, taking over from ASO running in a cluster: values a manifest
	// takes from a Secret (SecretReference) that Azure never returns are
	// taken as what Azure holds, since ASO sent them from the same Secret.
	FromASO bool `json:"fromASO,omitempty"`
}

// Why is what the marker is for, as plans and logs say it: "state rebuilt"
// or "import".
func (m *RebuiltMark) Why() string {
	switch {
	case m == nil:
		return ""
	case m.FromASO:
		return "import from ASO"
	case m.Import:
		return "import"
	}
	return "state rebuilt"
}

// MarkImport opens (creating when missing) the state file at path and sets
// the marker for an import: until a run records every resource of its
// revision, resources found in Azure as declared are adopted without a
// write. It returns the marker the file carries now (an existing one is
// kept: a rebuilt state stays rebuilt).
func MarkImport(path string, now time.Time, opts ...Option) (*RebuiltMark, error) {
	return markImport(path, RebuiltMark{At: now.UTC(), Import: true}, opts)
}

// MarkImportFromASO is MarkImport for taking over from ASO running in a
// cluster (RebuiltMark.FromASO); an import mark already there becomes one
// from ASO, a rebuilt state stays rebuilt.
func MarkImportFromASO(path string, now time.Time, opts ...Option) (*RebuiltMark, error) {
	return markImport(path, RebuiltMark{At: now.UTC(), Import: true, FromASO: true}, opts)
}

func markImport(path string, want RebuiltMark, opts []Option) (*RebuiltMark, error) {
	db, err := Open(path, opts...)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	m, err := db.Rebuilt()
	if err != nil || (m != nil && (!m.Import || m.FromASO || !want.FromASO)) {
		return m, err
	}
	m = &want
	if err := db.Update(func(w *Writer) error { return w.SetRebuilt(*m) }); err != nil {
		return nil, err
	}
	return m, nil
}

// SetRebuilt sets the marker of a rebuilt state.
func (w *Writer) SetRebuilt(m RebuiltMark) error {
	b, err := json.Marshal(m)
	if err == nil {
		err = w.tx.Bucket(bucketMeta).Put(metaRebuilt, b)
	}
	if err != nil {
		return fmt.Errorf("state: set rebuilt marker: %w", err)
	}
	return nil
}

// ClearRebuilt removes the marker of a rebuilt state: every resource of a
// revision was recorded.
func (w *Writer) ClearRebuilt() error {
	if err := w.tx.Bucket(bucketMeta).Delete(metaRebuilt); err != nil {
		return fmt.Errorf("state: clear rebuilt marker: %w", err)
	}
	return nil
}

// Rebuilt returns the marker of a rebuilt state, nil when it has none.
func (db *DB) Rebuilt() (*RebuiltMark, error) {
	b, err := db.metaBytes(metaRebuilt, "rebuilt marker")
	if err != nil || b == nil {
		return nil, err
	}
	var m RebuiltMark
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("state: %s: rebuilt marker: %w", db.path, err)
	}
	return &m, nil
}

// createRebuilt writes a new, empty state at path carrying the rebuilt
// marker (through a file beside it, renamed into place, so that an
// interruption leaves no file or the whole one). path must not exist.
func createRebuilt(path string, m RebuiltMark) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".new")
	_ = os.Remove(tmp)
	bdb, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: DefaultLockTimeout, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return err
	}
	db := &DB{bolt: bdb, path: path}
	err = db.init()
	if err == nil {
		err = db.Update(func(w *Writer) error { return w.SetRebuilt(m) })
	}
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("create the new state: %w", err)
	}
	return nil
}
