package state

import (
	"errors"
	"testing"

	"github.com/gitaso/gitaso/record"
)

// ResourcesVersion changes when a transaction that wrote or deleted a
// resource commits, and only then; WalkResources gives every resource in
// key order with a digest that changes with its record.
func TestResourcesVersionAndWalk(t *testing.T) {
	db, _ := openTemp(t)
	walk := func() map[string]uint64 {
		t.Helper()
		out := map[string]uint64{}
		var keys []string
		if _, err := db.WalkResources(func(k []byte, digest uint64, decode func() (record.Resource, error)) error {
			r, err := decode()
			if err != nil {
				return err
			}
			if r.Key() != string(k) {
				t.Errorf("key %s decodes to %s", k, r.Key())
			}
			keys = append(keys, string(k))
			out[string(k)] = digest
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(keys); i++ {
			if keys[i-1] >= keys[i] {
				t.Errorf("walked %s before %s", keys[i-1], keys[i])
			}
		}
		return out
	}
	update := func(fn func(w *Writer) error) {
		t.Helper()
		if err := db.Update(fn); err != nil {
			t.Fatal(err)
		}
	}
	a, b := sampleResource("ns", "StorageAccount", "a", "True"), sampleResource("ns", "StorageAccount", "b", "True")
	v0 := db.ResourcesVersion()
	update(func(w *Writer) error {
		if err := w.PutResource(a); err != nil {
			return err
		}
		return w.PutResource(b)
	})
	v1 := db.ResourcesVersion()
	if v1 == v0 {
		t.Fatal("ResourcesVersion did not change when resources were written")
	}
	d1 := walk()
	if len(d1) != 2 {
		t.Fatalf("walked %v", d1)
	}

	update(func(w *Writer) error { return w.PutRun(&record.Run{Revision: "r1", StartedAt: t0}) })
	if err := db.Update(func(w *Writer) error {
		if err := w.PutResource(sampleResource("ns", "StorageAccount", "c", "True")); err != nil {
			return err
		}
		return errors.New("rolled back")
	}); err == nil {
		t.Fatal("the failing update succeeded")
	}
	if v := db.ResourcesVersion(); v != v1 {
		t.Errorf("ResourcesVersion changed (%d→%d) with no resource committed", v1, v)
	}

	b.Ready.Status = "False"
	update(func(w *Writer) error { return w.PutResource(b) })
	v2 := db.ResourcesVersion()
	d2 := walk()
	if v2 == v1 || d2[a.Key()] != d1[a.Key()] || d2[b.Key()] == d1[b.Key()] {
		t.Errorf("after b changed: version %d→%d, digests %v → %v; want a new version, a's digest kept and b's changed", v1, v2, d1, d2)
	}
	update(func(w *Writer) error { return w.DeleteResource(a.Key()) })
	if v := db.ResourcesVersion(); v == v2 {
		t.Error("ResourcesVersion did not change when a resource was deleted")
	}
	if d := walk(); len(d) != 1 {
		t.Errorf("after a was deleted: walked %v", d)
	}
}
