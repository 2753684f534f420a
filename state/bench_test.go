package state

import (
	"fmt"
	"testing"

	"github.com/gitaso/gitaso/record"
)

const benchN = 10_000

func benchResources() []record.Resource {
	rs := make([]record.Resource, benchN)
	for i := range rs {
		ns := fmt.Sprintf("team-%03d", i%500)
		rs[i] = sampleResource(ns, "StorageAccount", fmt.Sprintf("sa%05d", i), record.StatusTrue)
	}
	return rs
}

// BenchmarkUpdate10k writes 10,000 resources in one Update (one fsync).
func BenchmarkUpdate10k(b *testing.B) {
	db, _ := openTemp(b)
	rs := benchResources()
	b.ReportAllocs()
	for b.Loop() {
		putResources(b, db, rs)
	}
}

// BenchmarkResources10k reads and decodes all 10,000 resources.
func BenchmarkResources10k(b *testing.B) {
	db, _ := openTemp(b)
	rs := benchResources()
	putResources(b, db, rs)
	b.ReportAllocs()
	for b.Loop() {
		got, err := db.Resources(record.Filter{})
		if err != nil || len(got) != benchN {
			b.Fatalf("got %d, %v", len(got), err)
		}
	}
}

// BenchmarkResourcesNamespace reads one namespace's 20 resources out of 10,000.
func BenchmarkResourcesNamespace(b *testing.B) {
	db, _ := openTemp(b)
	rs := benchResources()
	putResources(b, db, rs)
	for b.Loop() {
		got, err := db.Resources(record.Filter{Namespace: "team-250"})
		if err != nil || len(got) != benchN/500 {
			b.Fatalf("got %d, %v", len(got), err)
		}
	}
}

// putResources writes rs in one transaction.
func putResources(tb testing.TB, db *DB, rs []record.Resource) {
	tb.Helper()
	if err := db.Update(func(w *Writer) error {
		for _, r := range rs {
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
}
