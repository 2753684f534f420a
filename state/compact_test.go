package state_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// Compact gives a file's free pages back and keeps every record; it refuses
// a file another process (gitaso serve) holds.
func TestCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gitaso.db")
	db, err := state.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		if err := db.Update(func(w *state.Writer) error {
			for i := range 500 {
				r := record.Resource{Namespace: "n", Group: "resources.azure.com", Kind: "ResourceGroup", Name: fmt.Sprintf("rg-%03d", i),
					ARMID: fmt.Sprintf("/subscriptions/s/resourceGroups/rg-%03d", i), Generation: int64(round + 1),
					AppliedBody: []byte(fmt.Sprintf(`{"location":"westeurope","tags":{"round":"%d"}}`, round))}
				if err := w.PutResource(r); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := state.Compact(path); !errors.Is(err, state.ErrLocked) {
		t.Errorf("compact of a file in use: %v, want ErrLocked", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before, after, err := state.Compact(path)
	if err != nil {
		t.Fatal(err)
	}
	if after <= 0 || after >= before {
		t.Errorf("compacted %d → %d bytes", before, after)
	}
	db, err = state.Open(path, state.WithLockTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 500 || rs[0].Generation != 20 {
		t.Errorf("after compaction: %d resources, generation %d", len(rs), rs[0].Generation)
	}
}
