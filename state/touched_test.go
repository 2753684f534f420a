package state

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

func TestTouchedAndHistory(t *testing.T) {
	db, _ := openTemp(t, WithMaxRuns(3))
	key := "ns/storage.azure.com/StorageAccount/a"
	var ids []uint64
	for i := range MaxResourceRuns + 5 {
		run := &record.Run{Revision: fmt.Sprintf("rev%d", i), StartedAt: t0, Outcome: record.OutcomeSucceeded}
		err := db.Update(func(w *Writer) error {
			if err := w.PutRun(run); err != nil {
				return err
			}
			return w.PutTouched(run, []record.Touched{
				{Key: key, Action: "update", Outcome: "applied"},
				{Key: key + "2", Action: "create", Outcome: "failed", Error: "boom"},
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	last := ids[len(ids)-1]
	r, touched, ok, err := db.Run(last)
	if err != nil || !ok {
		t.Fatalf("Run(%d) = %v, %v", last, ok, err)
	}
	if r.Revision != fmt.Sprintf("rev%d", MaxResourceRuns+4) {
		t.Errorf("run revision %q", r.Revision)
	}
	want := []record.Touched{{Key: key, Action: "update", Outcome: "applied"}, {Key: key + "2", Action: "create", Outcome: "failed", Error: "boom"}}
	if d := cmp.Diff(want, touched); d != "" {
		t.Errorf("touched (-want +got):\n%s", d)
	}
	// Pruned with the runs.
	if _, touched, ok, _ := db.Run(ids[0]); ok || touched != nil {
		t.Errorf("run %d kept after pruning: %v %v", ids[0], ok, touched)
	}
	err = db.view(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketRunResources).Stats().KeyN; n != 3 {
			t.Errorf("%d touched lists kept, want 3", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	hist, err := db.ResourceRuns(key)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != MaxResourceRuns {
		t.Fatalf("history has %d entries, want %d", len(hist), MaxResourceRuns)
	}
	if hist[0].Run != last || hist[len(hist)-1].Run != ids[5] {
		t.Errorf("history not newest first from %d to %d: %+v", last, ids[5], hist)
	}
	if h2, _ := db.ResourceRuns(key + "2"); h2[0].Error != "boom" {
		t.Errorf("history of the failed resource: %+v", h2[0])
	}
	// A key that is a prefix of another has its own history.
	if h, _ := db.ResourceRuns("ns/storage.azure.com/StorageAccount/"); len(h) != 0 {
		t.Errorf("history of an unknown key: %+v", h)
	}
}

func TestChange(t *testing.T) {
	db, _ := openTemp(t)
	key := "ns/g/K/a"
	if _, ok, err := db.Change(key); ok || err != nil {
		t.Fatalf("change on a fresh database: %v %v", ok, err)
	}
	c := record.Change{Revision: "r2", At: t0, Action: "update", Previous: []byte(`{"a":1}`)}
	if err := db.Update(func(w *Writer) error { return w.PutChange(key, c) }); err != nil {
		t.Fatal(err)
	}
	got, ok, err := db.Change(key)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if d := cmp.Diff(c, got); d != "" {
		t.Errorf("change (-want +got):\n%s", d)
	}
	if err := db.Update(func(w *Writer) error { return w.DeleteChange(key) }); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Change(key); ok {
		t.Error("change kept after DeleteChange")
	}
}

// Pages list every resource stored throughout exactly once while others are
// added and removed between pages.
func TestResourcePageWhileWriting(t *testing.T) {
	db, _ := openTemp(t)
	put := func(names ...string) {
		t.Helper()
		if err := db.Update(func(w *Writer) error {
			for _, n := range names {
				st := record.StatusTrue
				if len(n)%2 == 0 {
					st = record.StatusFalse
				}
				if err := w.PutResource(sampleResource("ns", "StorageAccount", n, st)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	var stable []string
	for i := range 50 {
		stable = append(stable, fmt.Sprintf("s%03d", i))
	}
	put(stable...)
	seen := map[string]int{}
	after := ""
	for page := 0; ; page++ {
		items, more, err := db.ResourcePage(Page{After: after, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range items {
			seen[r.Name]++
		}
		if !more {
			break
		}
		after = items[len(items)-1].Key()
		// Writes between pages: new keys before and after the cursor, a
		// removed one, and rewritten ones.
		put(fmt.Sprintf("a%03d", page), fmt.Sprintf("z%03d", page), stable[page])
		if err := db.Update(func(w *Writer) error {
			return w.DeleteResource(sampleResource("ns", "StorageAccount", fmt.Sprintf("z%03d", page), "").Key())
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range stable {
		if seen[n] != 1 {
			t.Errorf("%s listed %d times", n, seen[n])
		}
	}
	for n, c := range seen {
		if c != 1 {
			t.Errorf("%s listed %d times", n, c)
		}
	}
	// Filters: ready and name, over pages of 1.
	after, n := "", 0
	for {
		items, more, err := db.ResourcePage(Page{Filter: record.Filter{Ready: "false"}, Name: "S0", After: after, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range items {
			if r.Ready.Status != record.StatusFalse {
				t.Errorf("%s is %s", r.Name, r.Ready.Status)
			}
			n++
		}
		if !more {
			break
		}
		after = items[0].Key()
	}
	if n != len(stable) {
		// Every stable name has 4 characters: all False.
		t.Errorf("%d resources matched ready=false and name S0, want %d", n, len(stable))
	}
	if _, _, err := db.ResourcePage(Page{Filter: record.Filter{Ready: "maybe"}, Limit: 1}); err == nil {
		t.Error("invalid readiness accepted")
	}
}

func TestRunPage(t *testing.T) {
	db, _ := openTemp(t)
	for i := range 7 {
		if err := db.Update(func(w *Writer) error { return w.PutRun(&record.Run{Revision: fmt.Sprint(i), StartedAt: t0}) }); err != nil {
			t.Fatal(err)
		}
	}
	var got []uint64
	before := uint64(0)
	for {
		runs, more, err := db.RunPage(before, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			got = append(got, r.ID)
		}
		if !more {
			break
		}
		before = runs[len(runs)-1].ID
	}
	if d := cmp.Diff([]uint64{7, 6, 5, 4, 3, 2, 1}, got); d != "" {
		t.Errorf("run pages (-want +got):\n%s", d)
	}
}

// readyOf reads the status without decoding the record; it agrees with a
// full decode whatever the applied body holds.
func TestReadyOfAgreesWithDecode(t *testing.T) {
	bodies := []string{``, `{"ready":{"type":"Ready","status":"True"}}`, `{"x":"\"ready\":{\"type\":\"Ready\",\"status\":\"False\""}`}
	for _, st := range []string{"", "True", "False", "Unknown", "weird"} {
		for _, body := range bodies {
			r := sampleResource("ns", "StorageAccount", "a", st)
			if st == "" {
				r.Ready = record.Condition{}
			}
			r.AppliedBody = nil
			if body != "" {
				r.AppliedBody = []byte(body)
			}
			r.Outputs = map[string]string{"cm/k": `"ready":{"type":"Ready","status":"False"`}
			v, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readyOf(v)
			if err != nil {
				t.Fatal(err)
			}
			if want := r.ReadyStatus(); got != want {
				t.Errorf("status %q, body %s: readyOf %q, want %q", st, body, got, want)
			}
		}
	}
}
