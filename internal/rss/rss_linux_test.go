package rss

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
)

// After DropExecutablePages little of the executable stays resident, and
// code and read-only data of the executable work as before (they are read
// back from the page cache).
func TestDropExecutablePages(t *testing.T) {
	// Touch code and tables: JSON, hashing, formatting.
	work := func() string {
		b, err := json.Marshal(map[string]any{"a": []int{1, 2, 3}, "b": "x"})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%x", sha256.Sum256(b))
	}
	want := work()
	before, err := ExecutableResidentKB()
	if err != nil {
		t.Fatal(err)
	}
	if before < 1024 {
		t.Fatalf("only %d kB of the test binary resident; want it mapped and used", before)
	}
	dropped, err := DropExecutablePages()
	if err != nil {
		t.Fatal(err)
	}
	after, err := ExecutableResidentKB()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("executable resident: %d kB before, %d kB dropped, %d kB after", before, dropped, after)
	if dropped < before/2 {
		t.Errorf("dropped %d kB of %d kB", dropped, before)
	}
	if after > before/2 {
		t.Errorf("%d kB of %d kB still resident", after, before)
	}
	if got := work(); got != want {
		t.Fatalf("after dropping the pages the same work gave %s, want %s", got, want)
	}
}
