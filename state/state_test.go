package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

func openTemp(t testing.TB, opts ...Option) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gitaso.db")
	db, err := Open(path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, path
}

var t0 = time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)

func sampleResource(ns, kind, name string, status string) record.Resource {
	return record.Resource{
		Namespace:   ns,
		Group:       "storage.azure.com",
		Version:     "v1api20230101",
		Kind:        kind,
		Name:        name,
		ARMID:       "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/" + name,
		APIVersion:  "2023-01-01",
		File:        "team/" + name + ".yaml",
		Credential:  ns + "/aso-credential",
		AppliedHash: "sha256:abc",
		AppliedBody: json.RawMessage(`{"location":"westeurope","properties":{"password":"(redacted)"}}`),
		Generation:  3,
		Ready:       record.Condition{Type: record.ConditionReady, Status: status, Severity: severityFor(status), Reason: "Succeeded", ObservedGeneration: 3, LastTransitionTime: t0},
		Outputs:     map[string]string{"identity/principalId": "p-1"},
		Revision:    "deadbeef",
		UpdatedAt:   t0,
		Policy:      "manage",
	}
}

func severityFor(status string) string {
	if status == record.StatusFalse {
		return record.SeverityWarning
	}
	return ""
}

func TestResourceRoundTripAndReopen(t *testing.T) {
	db, path := openTemp(t)
	want := sampleResource("team-a", "StorageAccount", "sa1", record.StatusTrue)
	want.SecretOutputs = []string{"sa-keys/key1"}
	if err := db.Update(func(w *Writer) error { return w.PutResource(want) }); err != nil {
		t.Fatal(err)
	}
	got, ok, err := db.Resource("team-a/storage.azure.com/StorageAccount/sa1")
	if err != nil || !ok {
		t.Fatalf("Resource: ok=%v err=%v", ok, err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	got, ok, err = db2.Resource(want.Key())
	if err != nil || !ok {
		t.Fatalf("after reopen: ok=%v err=%v", ok, err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("after reopen (-want +got):\n%s", d)
	}
	if _, ok, err := db2.Resource("team-a/storage.azure.com/StorageAccount/missing"); ok || err != nil {
		t.Errorf("missing resource: ok=%v err=%v", ok, err)
	}
	if err := db2.Update(func(w *Writer) error { return w.DeleteResource(want.Key()) }); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db2.Resource(want.Key()); ok {
		t.Error("resource still present after DeleteResource")
	}
}

func TestPutResourceRejectsBadKeys(t *testing.T) {
	db, _ := openTemp(t)
	for _, r := range []record.Resource{
		{Kind: "K", Name: "n"},
		{Namespace: "ns", Kind: "K"},
		{Namespace: "a/b", Kind: "K", Name: "n"},
	} {
		if err := db.Update(func(w *Writer) error { return w.PutResource(r) }); err == nil {
			t.Errorf("PutResource(%+v) succeeded, want error", r)
		}
	}
}

func TestUpdateErrorKeepsNothing(t *testing.T) {
	db, path := openTemp(t)
	committed := sampleResource("ns", "StorageAccount", "kept", record.StatusTrue)
	if err := db.Update(func(w *Writer) error { return w.PutResource(committed) }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := db.Update(func(w *Writer) error {
		if err := w.PutResource(sampleResource("ns", "StorageAccount", "lost", record.StatusTrue)); err != nil {
			return err
		}
		if err := w.DeleteResource(committed.Key()); err != nil {
			return err
		}
		if err := w.SetLastGoodRevision("lost-rev"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want boom", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	all, err := db2.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Name != "kept" {
		t.Errorf("after rolled back update: %d resources %v, want only kept", len(all), names(all))
	}
	if rev, _ := db2.LastGoodRevision(); rev != "" {
		t.Errorf("LastGoodRevision = %q, want empty", rev)
	}
}

// TestCrashMidTransaction runs a child process that commits 100 resources,
// then dies with os.Exit inside a second, uncommitted transaction; the parent
// reopens the file (the lock died with the process) and finds exactly the
// committed data.
func TestCrashMidTransaction(t *testing.T) {
	if path := os.Getenv("GITASO_STATE_CRASH_CHILD"); path != "" {
		crashChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "gitaso.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashMidTransaction$")
	cmd.Env = append(os.Environ(), "GITASO_STATE_CRASH_CHILD="+path)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("child: err=%v output:\n%s", err, out)
	}
	db, err := Open(path, WithLockTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer db.Close()
	all, err := db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 100 {
		t.Errorf("after crash: %d resources, want the 100 committed", len(all))
	}
	for _, r := range all {
		if strings.HasPrefix(r.Name, "uncommitted") {
			t.Errorf("uncommitted resource %s survived the crash", r.Name)
		}
	}
	if rev, _ := db.LastGoodRevision(); rev != "committed" {
		t.Errorf("LastGoodRevision = %q, want committed", rev)
	}
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Errorf("consistency check after crash: %v", err)
	}
}

func crashChild(path string) {
	db, err := Open(path)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	err = db.Update(func(w *Writer) error {
		for i := range 100 {
			if err := w.PutResource(sampleResource("ns", "StorageAccount", fmt.Sprintf("sa%03d", i), record.StatusTrue)); err != nil {
				return err
			}
		}
		return w.SetLastGoodRevision("committed")
	})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	_ = db.Update(func(w *Writer) error {
		for i := range 1000 {
			_ = w.PutResource(sampleResource("ns", "StorageAccount", fmt.Sprintf("uncommitted%04d", i), record.StatusTrue))
		}
		_ = w.SetLastGoodRevision("uncommitted")
		os.Exit(3) // die mid-transaction, without Close
		return nil
	})
	os.Exit(1)
}

func names(rs []record.Resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Namespace + "/" + r.Kind + "/" + r.Name
	}
	return out
}

func TestFilter(t *testing.T) {
	db, _ := openTemp(t)
	seed := []record.Resource{
		sampleResource("team-a", "StorageAccount", "sa1", record.StatusTrue),
		sampleResource("team-a", "StorageAccount", "sa2", record.StatusFalse),
		sampleResource("team-ab", "StorageAccount", "sa3", record.StatusTrue),
		sampleResource("team-b", "StorageAccount", "sa4", ""),
		{Namespace: "team-a", Group: "dbforpostgresql.azure.com", Kind: "FlexibleServer", Name: "pg", Ready: record.Condition{Type: record.ConditionReady, Status: record.StatusUnknown}},
		{Namespace: "team-a", Group: "dbformysql.azure.com", Kind: "FlexibleServer", Name: "my", Ready: record.Condition{Type: record.ConditionReady, Status: record.StatusTrue}},
	}
	if err := db.Update(func(w *Writer) error {
		for _, r := range seed {
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		filter record.Filter
		want   []string
	}{
		{"all sorted by key", record.Filter{}, []string{"team-a/FlexibleServer/my", "team-a/FlexibleServer/pg", "team-a/StorageAccount/sa1", "team-a/StorageAccount/sa2", "team-ab/StorageAccount/sa3", "team-b/StorageAccount/sa4"}},
		{"namespace is exact, not a prefix", record.Filter{Namespace: "team-a"}, []string{"team-a/FlexibleServer/my", "team-a/FlexibleServer/pg", "team-a/StorageAccount/sa1", "team-a/StorageAccount/sa2"}},
		{"kind case-insensitive", record.Filter{Kind: "storageaccount", Namespace: "team-b"}, []string{"team-b/StorageAccount/sa4"}},
		{"group/Kind", record.Filter{Kind: "dbforpostgresql.azure.com/FlexibleServer"}, []string{"team-a/FlexibleServer/pg"}},
		{"ready true", record.Filter{Ready: "true"}, []string{"team-a/FlexibleServer/my", "team-a/StorageAccount/sa1", "team-ab/StorageAccount/sa3"}},
		{"ready False in ns", record.Filter{Ready: "False", Namespace: "team-a"}, []string{"team-a/StorageAccount/sa2"}},
		{"no condition counts as unknown", record.Filter{Ready: "Unknown"}, []string{"team-a/FlexibleServer/pg", "team-b/StorageAccount/sa4"}},
		{"no match", record.Filter{Namespace: "nope"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := db.Resources(tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, names(got)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	if _, err := db.Resources(record.Filter{Ready: "maybe"}); err == nil {
		t.Error("invalid readiness accepted")
	}
	counts, err := db.ReadyCounts()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]int{"True": 3, "False": 1, "Unknown": 2}, counts); d != "" {
		t.Errorf("ReadyCounts (-want +got):\n%s", d)
	}
}

func TestRunsNewestFirstPruningAndTotals(t *testing.T) {
	db, path := openTemp(t, WithMaxRuns(5))
	for i := 1; i <= 12; i++ {
		run := &record.Run{Revision: fmt.Sprintf("rev%d", i), Trigger: "interval", StartedAt: t0.Add(time.Duration(i) * time.Minute)}
		// Written when it starts, then again when it finishes, in separate updates.
		if err := db.Update(func(w *Writer) error { return w.PutRun(run) }); err != nil {
			t.Fatal(err)
		}
		if run.ID != uint64(i) {
			t.Fatalf("run %d got ID %d", i, run.ID)
		}
		run.FinishedAt = run.StartedAt.Add(time.Second)
		run.Outcome = record.OutcomeSucceeded
		if i%4 == 0 {
			run.Outcome, run.Error = record.OutcomeFailed, "ARM said no"
		}
		run.Counts = map[string]int{"create": i}
		if err := db.Update(func(w *Writer) error { return w.PutRun(run) }); err != nil {
			t.Fatal(err)
		}
		// Re-writing a finished run must not count it twice.
		if err := db.Update(func(w *Writer) error { return w.PutRun(run) }); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := db.Runs(0)
	if err != nil {
		t.Fatal(err)
	}
	var revs []string
	for _, r := range runs {
		revs = append(revs, r.Revision)
	}
	if d := cmp.Diff([]string{"rev12", "rev11", "rev10", "rev9", "rev8"}, revs); d != "" {
		t.Errorf("runs after pruning to 5 (-want +got):\n%s", d)
	}
	if runs[0].Outcome != record.OutcomeFailed || runs[0].Error != "ARM said no" || runs[0].Counts["create"] != 12 {
		t.Errorf("newest run = %+v", runs[0])
	}
	two, err := db.Runs(2)
	if err != nil || len(two) != 2 || two[0].ID != 12 || two[1].ID != 11 {
		t.Errorf("Runs(2) = %+v, %v", two, err)
	}
	totals, err := db.RunTotals()
	if err != nil {
		t.Fatal(err)
	}
	want := map[record.Outcome]uint64{record.OutcomeSucceeded: 9, record.OutcomeFailed: 3, record.OutcomeRefused: 0, record.OutcomePartial: 0, record.OutcomeHeld: 0}
	if d := cmp.Diff(want, totals); d != "" {
		t.Errorf("RunTotals (-want +got):\n%s", d)
	}
	// IDs keep increasing after reopen.
	db.Close()
	db2, err := Open(path, WithMaxRuns(5))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	r := &record.Run{Revision: "rev13", StartedAt: t0}
	if err := db2.Update(func(w *Writer) error { return w.PutRun(r) }); err != nil {
		t.Fatal(err)
	}
	if r.ID != 13 {
		t.Errorf("ID after reopen = %d, want 13", r.ID)
	}
}

func TestLockTimeout(t *testing.T) {
	db, path := openTemp(t)
	_ = db
	_, err := Open(path, WithLockTimeout(150*time.Millisecond))
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open error = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "locked by another gitaso") || !strings.Contains(err.Error(), path) {
		t.Errorf("error %q should say locked by another gitaso and name the file", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(path, WithLockTimeout(150*time.Millisecond))
	if err != nil {
		t.Fatalf("Open after the first closed: %v", err)
	}
	db2.Close()
}

func TestNewerSchemaRefused(t *testing.T) {
	db, path := openTemp(t)
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(metaSchema, u64(SchemaVersion+1))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(path)
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Open = %v, want ErrNewerSchema", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("schema version %d", SchemaVersion+1)) {
		t.Errorf("error %q does not name the version", err)
	}
}

func TestMetaPlanAndRevisions(t *testing.T) {
	db, _ := openTemp(t)
	if p, err := db.Plan(); p != nil || err != nil {
		t.Fatalf("Plan on empty db = %q, %v", p, err)
	}
	plan := []byte(`{"revision":"abc","resources":[]}`)
	if err := db.Update(func(w *Writer) error {
		if err := w.SetPlan(plan); err != nil {
			return err
		}
		if err := w.SetLatestRevision("def"); err != nil {
			return err
		}
		return w.SetLastGoodRevision("abc")
	}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Plan()
	if err != nil || !bytes.Equal(got, plan) {
		t.Errorf("Plan = %q, %v", got, err)
	}
	if rev, _ := db.LastGoodRevision(); rev != "abc" {
		t.Errorf("LastGoodRevision = %q", rev)
	}
	if rev, _ := db.LatestRevision(); rev != "def" {
		t.Errorf("LatestRevision = %q", rev)
	}
}

func TestOperations(t *testing.T) {
	db, path := openTemp(t)
	ops := []record.Operation{
		{Key: "ns/g/K/b", ARMID: "/subscriptions/s/b", Method: "PUT", StartedAt: t0, PollURL: "https://arm/op/1"},
		{Key: "ns/g/K/a", ARMID: "/subscriptions/s/a", Method: "DELETE", StartedAt: t0},
	}
	if err := db.Update(func(w *Writer) error {
		for _, op := range ops {
			if err := w.PutOperation(op); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(w *Writer) error { return w.PutOperation(record.Operation{ARMID: "x"}) }); err == nil {
		t.Error("operation without key accepted")
	}
	db.Close()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.Operations()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]record.Operation{ops[1], ops[0]}, got); d != "" {
		t.Errorf("Operations after reopen (-want +got):\n%s", d)
	}
	if err := db.Update(func(w *Writer) error { return w.DeleteOperation("ns/g/K/a") }); err != nil {
		t.Fatal(err)
	}
	got, _ = db.Operations()
	if len(got) != 1 || got[0].Key != "ns/g/K/b" {
		t.Errorf("after delete: %+v", got)
	}
}

func TestSetReady(t *testing.T) {
	db, _ := openTemp(t)
	r := sampleResource("ns", "StorageAccount", "sa", record.StatusTrue)
	r.Ready = record.Condition{}
	if err := db.Update(func(w *Writer) error { return w.PutResource(r) }); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(time.Minute)
	steps := []struct {
		cond    record.Condition
		now     time.Time
		changed bool
		want    record.Condition
	}{
		{record.Condition{Status: record.StatusFalse, Severity: record.SeverityInfo, Reason: "Reconciling", ObservedGeneration: 1}, t0, true,
			record.Condition{Type: "Ready", Status: record.StatusFalse, Severity: record.SeverityInfo, Reason: "Reconciling", ObservedGeneration: 1, LastTransitionTime: t0}},
		{record.Condition{Status: record.StatusUnknown, ObservedGeneration: 1}, t1, false,
			record.Condition{Type: "Ready", Status: record.StatusFalse, Severity: record.SeverityInfo, Reason: "Reconciling", ObservedGeneration: 1, LastTransitionTime: t0}},
		{record.Condition{Status: record.StatusTrue, ObservedGeneration: 1}, t1, true,
			record.Condition{Type: "Ready", Status: record.StatusTrue, ObservedGeneration: 1, LastTransitionTime: t1}},
	}
	for i, s := range steps {
		var changed bool
		if err := db.Update(func(w *Writer) error {
			var err error
			changed, err = w.SetReady(r.Key(), s.cond, s.now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		got, _, _ := db.Resource(r.Key())
		if changed != s.changed {
			t.Errorf("step %d: changed = %v, want %v", i, changed, s.changed)
		}
		if d := cmp.Diff(s.want, got.Ready); d != "" {
			t.Errorf("step %d (-want +got):\n%s", i, d)
		}
	}
	if err := db.Update(func(w *Writer) error {
		_, err := w.SetReady("ns/g/K/missing", record.Condition{Status: record.StatusTrue}, t0)
		return err
	}); err == nil {
		t.Error("SetReady on a missing resource succeeded")
	}
}

// TestConcurrentReadsDuringWrites runs readers while a writer commits, under
// -race: readers always see a whole transaction (all or none of a batch).
func TestConcurrentReadsDuringWrites(t *testing.T) {
	db, _ := openTemp(t)
	const batches, perBatch = 20, 50
	done := make(chan struct{})
	errc := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errc <- nil
					return
				default:
				}
				rs, err := db.Resources(record.Filter{Namespace: "ns"})
				if err != nil {
					errc <- err
					return
				}
				if len(rs)%perBatch != 0 {
					errc <- fmt.Errorf("reader saw %d resources, not a multiple of the batch size", len(rs))
					return
				}
			}
		}()
	}
	for b := range batches {
		if err := db.Update(func(w *Writer) error {
			for i := range perBatch {
				if err := w.PutResource(sampleResource("ns", "StorageAccount", fmt.Sprintf("b%02d-%02d", b, i), record.StatusTrue)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for range 4 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	rs, _ := db.Resources(record.Filter{})
	if len(rs) != batches*perBatch {
		t.Errorf("%d resources, want %d", len(rs), batches*perBatch)
	}
}

func TestApprovals(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, ok, err := db.Approval("abc"); ok || err != nil {
		t.Fatalf("approval before any: %v %v", ok, err)
	}
	a := record.Approval{Revision: "abc", Keys: []string{"ns/g/K/a"}, By: "api"}
	if err := db.Update(func(w *Writer) error { return w.PutApproval(a) }); err != nil {
		t.Fatal(err)
	}
	got, ok, err := db.Approval("abc")
	if err != nil || !ok || got.Revision != "abc" || len(got.Keys) != 1 {
		t.Fatalf("approval: %+v %v %v", got, ok, err)
	}
	if err := db.Update(func(w *Writer) error { return w.DeleteApproval("abc") }); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Approval("abc"); ok {
		t.Error("approval kept after delete")
	}
}
