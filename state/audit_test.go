package state

import (
	"testing"
	"time"

	"github.com/gitaso/gitaso/record"
)

func TestAuditPagesAndPrunes(t *testing.T) {
	db, path := openTemp(t)
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for i := range 7 {
		e := &record.AuditEvent{At: t0.Add(time.Duration(i) * time.Hour), Action: record.AuditSync, Outcome: record.AuditAllowed, Who: "token ci"}
		if err := db.AppendAudit(e); err != nil {
			t.Fatal(err)
		}
		if e.ID != uint64(i+1) {
			t.Fatalf("event %d got ID %d", i, e.ID)
		}
	}
	var ids []uint64
	before := uint64(0)
	for pages := 0; ; pages++ {
		got, more, err := db.AuditPage(before, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			ids = append(ids, e.ID)
		}
		if !more {
			break
		}
		before = got[len(got)-1].ID
		if pages > 5 {
			t.Fatal("paging does not end")
		}
	}
	if want := []uint64{7, 6, 5, 4, 3, 2, 1}; !equalIDs(ids, want) {
		t.Fatalf("pages gave %v, want %v", ids, want)
	}
	n, err := db.PruneAudit(t0.Add(3 * time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("PruneAudit = %d, %v; want 3 (events 1-3 are older than the cutoff)", n, err)
	}
	// Kept across a reopen; new IDs go on after the pruned ones.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := &record.AuditEvent{At: t0.Add(8 * time.Hour), Action: record.AuditApprove}
	if err := db.AppendAudit(e); err != nil || e.ID != 8 {
		t.Fatalf("append after reopen: ID %d, %v", e.ID, err)
	}
	got, more, err := db.AuditPage(0, 100)
	if err != nil || more || len(got) != 5 || got[0].ID != 8 || got[4].ID != 4 {
		t.Fatalf("after prune: %d events (more %v, %v), want 8..4", len(got), more, err)
	}
}

func equalIDs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
