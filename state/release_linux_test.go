package state

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/record"
)

// residentKB is how much of the file at path is resident in this process
// (the Rss of its mappings in /proc/self/smaps).
func residentKB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	total, in := 0, false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if fields := strings.Fields(line); len(fields) >= 5 && strings.Contains(fields[0], "-") {
			in = strings.HasSuffix(line, path)
			continue
		}
		if v, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			total += kb
		}
	}
	return total
}

// ReleasePages leaves none of the state file resident, and the records read
// back the same afterwards.
func TestReleasePagesDropsTheFileFromTheResidentSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gitaso.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs := benchResources()
	putResources(t, db, rs)
	// A Get of every record touches every page and keeps them.
	walk := func() int {
		n := 0
		for _, r := range rs {
			if _, ok, err := db.Resource(r.Key()); err != nil || !ok {
				t.Fatalf("%s: %v %v", r.Key(), ok, err)
			}
			n++
		}
		return n
	}
	if n := walk(); n != len(rs) {
		t.Fatalf("read %d resources, want %d", n, len(rs))
	}
	before := residentKB(t, path)
	if before < 1024 {
		t.Fatalf("after reading every record %d kB of the state file are resident; want the file mapped and read", before)
	}
	if err := db.ReleasePages(); err != nil {
		t.Fatal(err)
	}
	if after := residentKB(t, path); after > before/10 {
		t.Errorf("after ReleasePages %d kB of %d kB stay resident", after, before)
	}
	if n := walk(); n != len(rs) {
		t.Fatalf("after ReleasePages read %d resources, want %d", n, len(rs))
	}

	// A full Resources read longer than a chunk drops the pages as it goes
	// and returns every record, equal to what was stored, in key order.
	if err := db.ReleasePages(); err != nil {
		t.Fatal(err)
	}
	if len(rs) <= decodeChunk {
		t.Fatalf("%d resources fit in one chunk of %d: the test proves nothing", len(rs), decodeChunk)
	}
	got, err := db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rs) {
		t.Fatalf("Resources read %d, want %d", len(got), len(rs))
	}
	want := map[string]record.Resource{}
	for _, r := range rs {
		want[r.Key()] = r
	}
	for i, r := range got {
		if i > 0 && got[i-1].Key() >= r.Key() {
			t.Fatalf("not in key order at %d: %s after %s", i, r.Key(), got[i-1].Key())
		}
		w, ok := want[r.Key()]
		if !ok || w.ARMID != r.ARMID || w.Name != r.Name || w.ReadyStatus() != r.ReadyStatus() {
			t.Fatalf("record %s read back as %+v", r.Key(), r)
		}
	}
	if after := residentKB(t, path); after > before/4 {
		t.Errorf("after a full Resources read %d kB of %d kB stay resident", after, before)
	}

	// So does a walk.
	walk()
	n := 0
	if _, err := db.WalkResources(func(_ []byte, _ uint64, decode func() (record.Resource, error)) error {
		if _, err := decode(); err != nil {
			return err
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(rs) {
		t.Fatalf("walked %d resources, want %d", n, len(rs))
	}
	if after := residentKB(t, path); after > before/4 {
		t.Errorf("after a walk %d kB of %d kB stay resident", after, before)
	}
}
