package api

import (
	"encoding/json"
	"testing"

	"github.com/gitaso/gitaso/state"
)

// The index encodes an item only when an answer shows it, keeps it for a
// page while the record is the one the entry was built from, and encodes a
// record that changed since (or leaves out one deleted since) without
// keeping it; a long list's items are not kept.
func TestIndexEncodesItemsOnDemand(t *testing.T) {
	db, ix, snap := indexOfAccounts(t, 3)
	if n := snap.summary().Total; n != 3 {
		t.Fatalf("summary total %d, want 3", n)
	}
	for _, e := range snap.entries {
		if e.item.Load() != nil {
			t.Fatalf("%s encoded by the rebuild", e.key)
		}
	}
	// A long list: encoded, not kept.
	enc, err := encodeItems(db, snap.entries, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range snap.entries {
		if enc[i] == nil || e.item.Load() != nil {
			t.Fatalf("%s: encoded %q, kept %v", e.key, enc[i], e.item.Load() != nil)
		}
	}
	// After the snapshot: acct01 becomes not Ready, acct02 is deleted.
	put(t, db, func(w *state.Writer) error {
		if err := w.PutResource(acctRecord(1, "False")); err != nil {
			return err
		}
		return w.DeleteResource(acctRecord(2, "True").Key())
	})
	// A page: encoded and kept.
	enc, err = encodeItems(db, snap.entries, true)
	if err != nil {
		t.Fatal(err)
	}
	status := func(b []byte) string {
		var v struct {
			Ready struct {
				Status string `json:"status"`
			} `json:"ready"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("item %s: %v", b, err)
		}
		return v.Ready.Status
	}
	if got := status(enc[0]); got != "True" || snap.entries[0].item.Load() == nil {
		t.Fatalf("unchanged record: status %q, kept %v; want True, kept", got, snap.entries[0].item.Load() != nil)
	}
	if got := status(enc[1]); got != "False" || snap.entries[1].item.Load() != nil {
		t.Fatalf("changed record: status %q, kept %v; want False (as stored now), not kept", got, snap.entries[1].item.Load() != nil)
	}
	if enc[2] != nil {
		t.Fatalf("deleted record encoded: %s", enc[2])
	}
	// The next snapshot encodes the changed record again and keeps it.
	snap2, err := ix.current(db)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap2.entries) != 2 || snap2.entries[0] != snap.entries[0] {
		t.Fatalf("rebuilt index: %d entries, unchanged entry kept %v", len(snap2.entries), snap2.entries[0] == snap.entries[0])
	}
	if _, err := encodeItems(db, snap2.entries, true); err != nil {
		t.Fatal(err)
	}
	if snap2.entries[1].item.Load() == nil {
		t.Fatal("changed record not kept once the index has it")
	}
}
