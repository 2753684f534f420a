package state

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// smallState writes a state file like a small deployment's after a few
// dozen runs: resources, runs with what they touched, exports, secret
// exports, an operation, an approval and a plan. It is 60-some pages.
func smallState(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gitaso.db")
	db, err := Open(path, WithEncryptionKey(bytes.Repeat([]byte{7}, keySize)))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 30 {
		if err := db.Update(func(w *Writer) error {
			var touched []record.Touched
			for i := range 40 {
				r := sampleResource(fmt.Sprintf("team-%d", i%4), "StorageAccount", fmt.Sprintf("sa%02d", i), record.StatusTrue)
				r.Generation = int64(round + 1)
				if err := w.PutResource(r); err != nil {
					return err
				}
				if i%10 == round%10 {
					touched = append(touched, record.Touched{Key: r.Key(), Action: "update", Outcome: "succeeded"})
					if err := w.PutChange(r.Key(), record.Change{Revision: fmt.Sprintf("rev%d", round), Action: "update", Previous: r.AppliedBody}); err != nil {
						return err
					}
				}
			}
			run := &record.Run{Revision: fmt.Sprintf("rev%d", round), Trigger: "interval", StartedAt: t0, FinishedAt: t0.Add(time.Second), Outcome: record.OutcomeSucceeded}
			if err := w.PutRun(run); err != nil {
				return err
			}
			if err := w.PutTouched(run, touched); err != nil {
				return err
			}
			if err := w.PutExports("team-1", "cm", map[string]string{"k": fmt.Sprint(round)}); err != nil {
				return err
			}
			if err := w.PutSecretExports("team-1", "sec", map[string]string{"key1": "s3cret"}); err != nil {
				return err
			}
			if err := w.PutOperation(record.Operation{Key: "team-0/storage.azure.com/StorageAccount/sa00", Method: "PUT", PollURL: "https://x/op"}); err != nil {
				return err
			}
			if err := w.PutApproval(record.Approval{Revision: fmt.Sprintf("rev%d", round)}); err != nil {
				return err
			}
			return w.SetPlan([]byte(strings.Repeat(`{"plan":"x"}`, 300)))
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func copyFile(t testing.TB, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "gitaso.db")
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

func fileSum(t testing.TB, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// overwritePage writes random bytes over page id (4,096 bytes: the page
// size these files have); seed 0 writes zeros.
func overwritePage(t testing.TB, path string, id int, seed uint64) {
	t.Helper()
	overwrite(t, path, int64(id)*4096, 4096, seed)
}

// overwrite writes n random bytes (zeros for seed 0) at off.
func overwrite(t testing.TB, path string, off int64, n int, seed uint64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := off / 4096
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, uint64(id)))
	for i := range b {
		if seed != 0 {
			b[i] = byte(r.Uint32())
		}
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// readEverything reads every record of every bucket through the package's
// read paths, returning the first error.
func readEverything(db *DB) error {
	if _, err := db.Resources(record.Filter{}); err != nil {
		return err
	}
	if _, _, err := db.RunPage(0, 1000); err != nil {
		return err
	}
	if _, err := db.Runs(1000); err != nil {
		return err
	}
	if _, err := db.RunTotals(); err != nil {
		return err
	}
	if _, _, _, err := db.Run(1); err != nil {
		return err
	}
	if _, err := db.ResourceRuns("team-0/storage.azure.com/StorageAccount/sa00"); err != nil {
		return err
	}
	if _, _, err := db.Change("team-0/storage.azure.com/StorageAccount/sa00"); err != nil {
		return err
	}
	if _, err := db.ExportsIn("team-1"); err != nil {
		return err
	}
	if _, _, err := db.SecretExports("team-1", "sec"); err != nil {
		return err
	}
	if _, err := db.Operations(); err != nil {
		return err
	}
	if _, err := db.Plan(); err != nil {
		return err
	}
	if _, _, err := db.Approval("rev3"); err != nil {
		return err
	}
	// Every key and value of every bucket, as bbolt reads them.
	return db.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error { return nil })
		})
	})
}

func wantDamaged(t *testing.T, err error, path string, says ...string) *DamagedError {
	t.Helper()
	var d *DamagedError
	if !errors.Is(err, ErrDamaged) || !errors.As(err, &d) {
		t.Fatalf("got %v, want a *DamagedError", err)
	}
	msg := err.Error()
	want := []string{path, "gitaso state check --state " + path, "restore a backup", "gitaso state rebuild --state " + path, "history"}
	if d.Report != nil && d.Report.DataIntact {
		want = []string{path, "Only the freelist", "gitaso state rebuild --state " + path, "losing nothing"}
	}
	for _, s := range append(want, says...) {
		if !strings.Contains(msg, s) {
			t.Errorf("the error does not say %q:\n%s", s, msg)
		}
	}
	return d
}

// Every kind of damage the reliability probe found ends in a
// *DamagedError naming it and the ways out, from Open, Check and Compact
// alike, and leaves the file as it was; one damaged meta page is not damage.
func TestOpenDamagedFile(t *testing.T) {
	sound := smallState(t)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		says   string // in the error; "" for a file that opens
		pages  []uint64
	}{
		{"truncated to 100 kB", func(t *testing.T, p string) {
			if err := os.Truncate(p, 100_000); err != nil {
				t.Fatal(err)
			}
		}, "truncated: the file is 100000 bytes", nil},
		{"zero length", func(t *testing.T, p string) {
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
		}, "zero length", nil},
		{"both meta pages", func(t *testing.T, p string) {
			overwritePage(t, p, 0, 1)
			overwritePage(t, p, 1, 1)
		}, "both meta pages are damaged", nil},
		{"not a bbolt file", func(t *testing.T, p string) {
			if err := os.WriteFile(p, bytes.Repeat([]byte("not bbolt "), 1000), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "both meta pages are damaged", nil},
		{"meta page 0", func(t *testing.T, p string) { overwritePage(t, p, 0, 2) }, "", nil},
		{"meta page 1", func(t *testing.T, p string) { overwritePage(t, p, 1, 2) }, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := copyFile(t, sound)
			tc.damage(t, path)
			before := fileSum(t, path)
			rep, cerr := Check(path)
			if cerr != nil {
				t.Fatalf("Check: %v", cerr)
			}
			db, err := Open(path, WithEncryptionKey(bytes.Repeat([]byte{7}, keySize)))
			if tc.says == "" {
				if err != nil {
					t.Fatalf("one damaged meta page: Open: %v", err)
				}
				defer db.Close()
				if !rep.OK() || !strings.Contains(rep.MetaFallback, tc.name+" is damaged") || db.CheckReport().MetaFallback != rep.MetaFallback {
					t.Errorf("report %+v, open's %+v: want sound with the meta fallback said", rep, db.CheckReport())
				}
				if err := readEverything(db); err != nil {
					t.Errorf("reads after a meta fallback: %v", err)
				}
				return
			}
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			wantDamaged(t, err, path, tc.says)
			if rep.OK() || !strings.Contains(rep.Problems[0].What, tc.says) {
				t.Errorf("Check: %+v, want %q", rep, tc.says)
			}
			_, _, err = Compact(path)
			wantDamaged(t, err, path, tc.says)
			if fileSum(t, path) != before {
				t.Error("the damaged file was changed")
			}
		})
	}
}

// Random bytes, then zeros, over each page of a small state in turn: nothing
// panics or faults, and each file either opens and reads in full, or is
// refused as damaged naming a page, by Open, Check and Compact alike.
func TestRandomPageDamage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		seed       uint64
		keepHeader bool
	}{{"random", 3, false}, {"zeros", 0, false}, {"random under the header", 5, true}} {
		t.Run(tc.name, func(t *testing.T) { pageDamage(t, tc.seed, tc.keepHeader) })
	}
}

func pageDamage(t *testing.T, seed uint64, keepHeader bool) {
	sound := smallState(t)
	fi, err := os.Stat(sound)
	if err != nil {
		t.Fatal(err)
	}
	pages := int(fi.Size() / 4096)
	rep, err := Check(sound)
	if err != nil || !rep.OK() || rep.Pages < 40 {
		t.Fatalf("the sound file: %+v, %v", rep, err)
	}
	damaged, readable, salvaged := 0, 0, 0
	for id := range pages {
		path := copyFile(t, sound)
		if keepHeader {
			overwrite(t, path, int64(id)*4096+pageHeaderSize, 4096-pageHeaderSize, seed)
		} else {
			overwritePage(t, path, id, seed)
		}
		rep, err := Check(path)
		if err != nil {
			t.Fatalf("page %d: Check: %v", id, err)
		}
		db, err := Open(path, WithEncryptionKey(bytes.Repeat([]byte{7}, keySize)))
		if err != nil {
			d := wantDamaged(t, err, path)
			if rep.OK() || len(d.Report.Problems) == 0 {
				t.Errorf("page %d: Open refused (%v) but Check found it sound", id, err)
			}
			if _, _, err := Compact(path); !errors.Is(err, ErrDamaged) {
				t.Errorf("page %d: Compact: %v, want ErrDamaged", id, err)
			}
			if d.Report.DataIntact {
				// Only the freelist: rebuild loses nothing.
				res, err := Rebuild(path, false, t0)
				if err != nil || !res.Salvaged {
					t.Errorf("page %d: Rebuild of a damaged freelist: %+v, %v", id, res, err)
				} else if db, err := Open(path, WithEncryptionKey(bytes.Repeat([]byte{7}, keySize))); err != nil {
					t.Errorf("page %d: Open after the salvage: %v", id, err)
				} else {
					if err := readEverything(db); err != nil {
						t.Errorf("page %d: after the salvage: %v", id, err)
					}
					db.Close()
				}
				salvaged++
			}
			damaged++
			continue
		}
		if !rep.OK() {
			t.Errorf("page %d: Open succeeded but Check found %+v", id, rep.Problems)
		}
		if err := readEverything(db); err != nil {
			t.Errorf("page %d: the file opened but a read failed: %v", id, err)
		}
		// bbolt's own check agrees that the file is sound.
		if err := db.view(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				return err
			}
			return nil
		}); err != nil {
			t.Errorf("page %d: the file opened but bbolt's check says %v", id, err)
		}
		db.Close()
		if _, _, err := Compact(path); err != nil {
			t.Errorf("page %d: Compact: %v", id, err)
		}
		readable++
	}
	t.Logf("%d pages (%d below the high-water mark): %d damaged (%d of them only the freelist, salvaged), %d readable (meta fallback or a free page)",
		pages, rep.Pages, damaged, salvaged, readable)
	if damaged == 0 || readable < 2 {
		t.Errorf("%d damaged, %d readable: want both kinds (the meta pages read after a fallback)", damaged, readable)
	}
}

// A page damaged while the file is open (after its check) makes the reads
// that reach it fail with a *DamagedError instead of panicking, and Damaged
// remembers it.
func TestReadDamagedAfterOpen(t *testing.T) {
	path := smallState(t)
	db, err := Open(path, WithEncryptionKey(bytes.Repeat([]byte{7}, keySize)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var root uint64
	if err := db.view(func(tx *bolt.Tx) error {
		root = uint64(tx.Bucket(bucketRuns).Root())
		return nil
	}); err != nil || root == 0 {
		t.Fatalf("the runs bucket's root page: %d, %v", root, err)
	}
	if db.Damaged() != nil {
		t.Fatalf("Damaged before any damage: %v", db.Damaged())
	}
	overwritePage(t, path, int(root), 4) // the mapping is shared: bbolt sees it
	_, _, err = db.RunPage(0, 50)
	d := wantDamaged(t, err, path)
	if d.Panic == nil || !strings.HasPrefix(d.Where, "go.etcd.io/bbolt") {
		t.Errorf("the error names no bbolt panic: %+v", d)
	}
	if !errors.Is(db.Damaged(), ErrDamaged) {
		t.Errorf("Damaged() = %v after a damaged read", db.Damaged())
	}
	// A panic in a caller's code inside a transaction is not damage: it is
	// raised again.
	func() {
		defer func() {
			if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "negative Repeat count") {
				t.Errorf("recovered %v, want the caller's panic", v)
			}
		}()
		_, _ = db.WalkResources(func([]byte, uint64, func() (record.Resource, error)) error {
			_ = strings.Repeat("x", -1) // panics in package strings
			return nil
		})
	}()
}

// A branch page whose child ID points far past the file, written while the
// file is open: bbolt reads it from the mapping, which faults; the fault is
// a *DamagedError too, not the end of the process.
func TestReadFaultAfterOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gitaso.db")
	db, err := Open(path, WithoutKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(w *Writer) error {
		for i := range 400 {
			if err := w.PutRun(&record.Run{Revision: fmt.Sprintf("%040d", i), StartedAt: t0, Outcome: record.OutcomeSucceeded, Error: strings.Repeat("e", 200)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var root int64
	_ = db.view(func(tx *bolt.Tx) error { root = int64(tx.Bucket(bucketRuns).Root()); return nil })
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	if _, err := f.ReadAt(page, root*4096); err != nil {
		t.Fatal(err)
	}
	if ne.Uint16(page[8:]) != flagBranch {
		t.Fatalf("the runs bucket's root page %d is not a branch page (flags %#x): write more runs", root, ne.Uint16(page[8:]))
	}
	// The first element's child: page 2^30, 4 TB into the mapping's address
	// space, where nothing is mapped.
	ne.PutUint64(page[pageHeaderSize+8:], 1<<30)
	if _, err := f.WriteAt(page, root*4096); err != nil {
		t.Fatal(err)
	}
	_, _, err = db.RunPage(0, 1000)
	d := wantDamaged(t, err, path)
	if !strings.Contains(fmt.Sprint(d.Panic), "invalid memory address") || !strings.HasPrefix(d.Where, "go.etcd.io/bbolt") {
		t.Errorf("the read panicked with %v in %s, want a memory fault in bbolt", d.Panic, d.Where)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(path)
	if err != nil || rep.OK() || !strings.Contains(rep.Problems[0].String(), fmt.Sprintf("page %d", 1<<30)) {
		t.Errorf("Check: %+v, %v; want page %d named", rep, err, 1<<30)
	}
}

// freelistPage returns the freelist page the meta in use records.
func freelistPage(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := &verifier{f: f, rep: &Report{}}
	m, ok, err := v.metas()
	if err != nil || !ok || m.freelist == noFreelist {
		t.Fatalf("meta: %+v %v %v", m, ok, err)
	}
	return int(m.freelist)
}

// Only the freelist damaged: Open refuses the file saying every record is
// intact, and rebuild copies them all into a new file (nothing lost), the
// damaged one kept beside it.
func TestRebuildSalvagesFreelistDamage(t *testing.T) {
	path := copyFile(t, smallState(t))
	key := WithEncryptionKey(bytes.Repeat([]byte{7}, keySize))
	db, err := Open(path, key)
	if err != nil {
		t.Fatal(err)
	}
	wantRes, _ := db.Resources(record.Filter{})
	wantRuns, _ := db.Runs(1000)
	db.Close()
	overwritePage(t, path, freelistPage(t, path), 5)
	damaged, _ := os.ReadFile(path)

	_, err = Open(path, key)
	var d *DamagedError
	if !errors.As(err, &d) || !d.Report.DataIntact || !strings.Contains(err.Error(), "Only the freelist") ||
		!strings.Contains(err.Error(), "gitaso state rebuild --state "+path) {
		t.Fatalf("Open: %v, want a *DamagedError saying the data is intact", err)
	}
	res, err := Rebuild(path, false, t0)
	if err != nil || !res.Salvaged {
		t.Fatalf("Rebuild: %+v, %v; want salvaged", res, err)
	}
	if b, err := os.ReadFile(res.Aside); err != nil || !bytes.Equal(b, damaged) {
		t.Errorf("the damaged file is not kept as it was at %s: %v", res.Aside, err)
	}
	db, err = Open(path, key)
	if err != nil {
		t.Fatalf("Open after the salvage: %v", err)
	}
	defer db.Close()
	if err := readEverything(db); err != nil {
		t.Fatal(err)
	}
	gotRes, _ := db.Resources(record.Filter{})
	gotRuns, _ := db.Runs(1000)
	if len(gotRes) != len(wantRes) || len(gotRuns) != len(wantRuns) || len(wantRuns) == 0 {
		t.Errorf("after the salvage %d resources and %d runs, want %d and %d", len(gotRes), len(gotRuns), len(wantRes), len(wantRuns))
	}
	if v, ok, err := db.SecretExports("team-1", "sec"); err != nil || !ok || v["key1"] != "s3cret" {
		t.Errorf("secret export after the salvage: %v %v %v", v, ok, err)
	}
}

// A few bytes flipped at random places, 300 times: nothing panics or faults;
// a file the check passes opens, and no read of it meets a page bbolt
// panics on (a record may still not decode: the check does not read values).
func TestFlippedBytesNeverPanic(t *testing.T) {
	sound := smallState(t)
	rep, err := Check(sound)
	if err != nil || !rep.OK() {
		t.Fatal(rep, err)
	}
	size := int64(rep.Pages) * int64(rep.PageSize)
	// GITASO_STATE_FLIPS=N GITASO_STATE_FLIP_SEED=S explore further.
	seed, n := uint64(7), 300
	if v, err := strconv.ParseUint(os.Getenv("GITASO_STATE_FLIP_SEED"), 10, 64); err == nil {
		seed = v
	}
	if v, err := strconv.Atoi(os.Getenv("GITASO_STATE_FLIPS")); err == nil && v > 0 {
		n = v
	}
	r := rand.New(rand.NewPCG(seed, 7))
	key := WithEncryptionKey(bytes.Repeat([]byte{7}, keySize))
	refused, opened, undecodable, valueRefused := 0, 0, 0, 0
	for i := range n {
		path := copyFile(t, sound)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		var flips []int64
		for range 1 + r.IntN(8) {
			off := r.Int64N(size)
			flips = append(flips, off)
			if _, err := f.WriteAt([]byte{byte(r.Uint32())}, off); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
		rep, err := Check(path)
		if err != nil {
			t.Fatalf("%d: Check: %v", i, err)
		}
		db, err := Open(path, key)
		if err != nil && !errors.Is(err, ErrDamaged) {
			// A flip in a value Open reads (the sealed key check, the
			// schema version): refused as that value says (a wrong key,
			// a newer gitaso). Values are not checked.
			valueRefused++
			continue
		}
		if err != nil {
			wantDamaged(t, err, path)
			refused++
			continue
		}
		opened++
		if !rep.OK() {
			t.Errorf("%d (bytes %v): Open succeeded over %v", i, flips, rep.Problems)
		}
		if err := readEverything(db); errors.Is(err, ErrDamaged) {
			t.Errorf("%d (bytes %v): the check passed but bbolt panicked reading: %v", i, flips, err)
		} else if err != nil {
			undecodable++
		}
		db.Close()
		if _, _, err := Compact(path); errors.Is(err, ErrDamaged) {
			t.Errorf("%d (bytes %v): the check passed but compact met damage: %v", i, flips, err)
		}
	}
	t.Logf("%d files with bytes flipped (seed %d): %d refused, %d opened (%d with a record that does not decode), %d refused over a value Open reads",
		n, seed, refused, opened, undecodable, valueRefused)
}
