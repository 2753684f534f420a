package state

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/record"
)

func readyCounts(t *testing.T, db *DB) map[string]int {
	t.Helper()
	c, err := db.ReadyCounts()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func counts(tr, f, u int) map[string]int {
	return map[string]int{record.StatusTrue: tr, record.StatusFalse: f, record.StatusUnknown: u}
}

// TestReadyCountsKeptAsRecordsChange checks the in-memory counts against
// writes, deletions, a rolled-back transaction and a reopen.
func TestReadyCountsKeptAsRecordsChange(t *testing.T) {
	db, path := openTemp(t)
	put := func(rs ...record.Resource) {
		t.Helper()
		if err := db.Update(func(w *Writer) error {
			for _, r := range rs {
				if err := w.PutResource(r); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(sampleResource("a", "StorageAccount", "one", "True"), sampleResource("a", "StorageAccount", "two", "False"))
	if d := cmp.Diff(counts(1, 1, 0), readyCounts(t, db)); d != "" {
		t.Fatalf("first scan (-want +got):\n%s", d)
	}
	put(sampleResource("a", "StorageAccount", "three", ""), sampleResource("a", "StorageAccount", "two", "True"))
	if d := cmp.Diff(counts(2, 0, 1), readyCounts(t, db)); d != "" {
		t.Errorf("after writes (-want +got):\n%s", d)
	}
	boom := errors.New("boom")
	if err := db.Update(func(w *Writer) error {
		if err := w.PutResource(sampleResource("a", "StorageAccount", "four", "True")); err != nil {
			return err
		}
		if err := w.DeleteResource(sampleResource("a", "StorageAccount", "one", "").Key()); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if d := cmp.Diff(counts(2, 0, 1), readyCounts(t, db)); d != "" {
		t.Errorf("after a rolled-back transaction (-want +got):\n%s", d)
	}
	if err := db.Update(func(w *Writer) error {
		if err := w.PutResource(sampleResource("a", "StorageAccount", "three", "False")); err != nil {
			return err
		}
		return w.DeleteResource(sampleResource("a", "StorageAccount", "one", "").Key())
	}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(counts(1, 1, 0), readyCounts(t, db)); d != "" {
		t.Errorf("after an update and a deletion (-want +got):\n%s", d)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if d := cmp.Diff(counts(1, 1, 0), readyCounts(t, db2)); d != "" {
		t.Errorf("after reopen (-want +got):\n%s", d)
	}
}

// TestReadyCountsConcurrentWriters races writers against the first scan and
// against each other; the counts must end equal to a fresh scan.
func TestReadyCountsConcurrentWriters(t *testing.T) {
	db, _ := openTemp(t)
	statuses := []string{"True", "False", ""}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				r := sampleResource("a", "StorageAccount", fmt.Sprintf("r%d", i%10), statuses[(g+i)%3])
				if err := db.Update(func(w *Writer) error {
					if i%7 == 0 {
						return w.DeleteResource(r.Key())
					}
					return w.PutResource(r)
				}); err != nil {
					t.Error(err)
				}
				if i == 5 {
					if _, err := db.ReadyCounts(); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	got := readyCounts(t, db)
	fresh := &readyIndex{}
	if err := fresh.seed(db); err != nil {
		t.Fatal(err)
	}
	want := counts(0, 0, 0)
	for st, n := range fresh.counts {
		want[st] += n
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("kept counts differ from a scan (-scan +kept):\n%s", d)
	}
}

// BenchmarkReadyCounts reads the counts of 10,000 resources (kept in memory
// after the first call).
func BenchmarkReadyCounts(b *testing.B) {
	db, _ := openTemp(b)
	if err := db.Update(func(w *Writer) error {
		for i := range 10000 {
			if err := w.PutResource(sampleResource("a", "StorageAccount", fmt.Sprintf("r%05d", i), "True")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := db.ReadyCounts(); err != nil {
			b.Fatal(err)
		}
	}
}
