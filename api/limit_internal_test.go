package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

func openState(t *testing.T) *state.DB {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func put(t *testing.T, db *state.DB, fn func(w *state.Writer) error) {
	t.Helper()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func acctRecord(i int, status string) record.Resource {
	name := fmt.Sprintf("acct%02d", i)
	return record.Resource{Namespace: "ns", Group: "storage.azure.com", Version: "v1", Kind: "StorageAccount", Name: name,
		ARMID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/" + name,
		Ready: record.Condition{Type: record.ConditionReady, Status: status}, UpdatedAt: time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)}
}

// Reads beyond MaxInFlight wait in a queue of MaxQueued for QueueWait; the
// others, and those whose wait ends, are answered 429 with Retry-After.
// Probes and /metrics are not bounded.
func TestBoundedReadsShedWithRetryAfter(t *testing.T) {
	db := openState(t)
	put(t, db, func(w *state.Writer) error { return w.PutResource(acctRecord(1, "True")) })
	s, h := newServer(db, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxInFlight: 1, MaxQueued: 1, QueueWait: 300 * time.Millisecond})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	shed := func(resp *http.Response, body []byte, what string) {
		t.Helper()
		var e ErrorBody
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
			json.Unmarshal(body, &e) != nil || e.Error.Code != CodeTooManyRequests {
			t.Errorf("%s: %d Retry-After %q %s; want 429 too_many_requests with Retry-After 1", what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}

	// The one slot is taken (a long answer being written).
	if !s.limit.acquire(context.Background()) {
		t.Fatal("the first slot was refused")
	}
	queued := make(chan int, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/api/v1/resources?limit=10")
		if err != nil {
			queued <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		queued <- resp.StatusCode
	}()
	deadline := time.Now().Add(5 * time.Second)
	for s.limit.queued.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the second request never queued")
		}
		time.Sleep(time.Millisecond)
	}
	// The queue is full: shed at once.
	start := time.Now()
	resp, body := get("/api/v1/summary")
	shed(resp, body, "GET /api/v1/summary with the queue full")
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("a request beyond the queue waited %s; it is shed without waiting", d)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if resp, body := get(p); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s while reads are bounded: %d %s", p, resp.StatusCode, body)
		}
	}
	// The slot is freed: the queued request is served.
	s.limit.release()
	if code := <-queued; code != http.StatusOK {
		t.Errorf("queued request: %d, want 200 once the slot was freed", code)
	}
	// A queued request whose wait ends is shed too.
	if !s.limit.acquire(context.Background()) {
		t.Fatal("the slot was not freed")
	}
	start = time.Now()
	resp, body = get("/api/v1/graph")
	shed(resp, body, "GET /api/v1/graph after its queue wait")
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("shed after %s; it should have waited QueueWait (300ms) for a slot", d)
	}
	s.limit.release()
	if resp, body := get("/api/v1/resources/ns/StorageAccount/acct01"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET a resource once the slot is free: %d %s", resp.StatusCode, body)
	}
	if n := s.limit.shed.Load(); n != 2 {
		t.Errorf("%d requests shed, want 2", n)
	}
	if _, body := get("/metrics"); !strings.Contains(string(body), "\ngitaso_api_requests_shed_total 2\n") {
		t.Errorf("/metrics does not count the 2 requests shed:\n%s", body)
	}
}

// indexOfAccounts stores n storage accounts, Ready, and indexes them.
func indexOfAccounts(t *testing.T, n int) (*state.DB, *resourceIndex, *snapshot) {
	t.Helper()
	db := openState(t)
	put(t, db, func(w *state.Writer) error {
		for i := range n {
			if err := w.PutResource(acctRecord(i, "True")); err != nil {
				return err
			}
		}
		return nil
	})
	ix := &resourceIndex{}
	s, err := ix.current(db)
	if err != nil {
		t.Fatal(err)
	}
	return db, ix, s
}

// The index decodes again only the resources that changed; a commit that
// writes no resource keeps its version (and so every derived answer).
func TestIndexRebuildsOnlyWhatChanged(t *testing.T) {
	db, ix, s1 := indexOfAccounts(t, 3)
	if len(s1.entries) != 3 {
		t.Fatalf("%d entries, want 3", len(s1.entries))
	}
	if again, _ := ix.current(db); again != s1 {
		t.Error("the index was rebuilt though nothing was written")
	}

	put(t, db, func(w *state.Writer) error { return w.PutRun(&record.Run{Revision: "r1", StartedAt: time.Now()}) })
	s2, err := ix.current(db)
	if err != nil {
		t.Fatal(err)
	}
	if s2 != s1 {
		t.Errorf("after a run was written: the index was rebuilt (version %d→%d); no resource changed", s1.version, s2.version)
	}

	put(t, db, func(w *state.Writer) error {
		if err := w.PutResource(acctRecord(1, "False")); err != nil {
			return err
		}
		return w.PutResource(acctRecord(5, "True"))
	})
	s3, err := ix.current(db)
	if err != nil {
		t.Fatal(err)
	}
	if s3.version == s2.version || len(s3.entries) != 4 {
		t.Fatalf("after a change: version %d→%d, %d entries; want a new version and 4 entries", s2.version, s3.version, len(s3.entries))
	}
	if s3.entries[0] != s1.entries[0] || s3.entries[2] != s1.entries[2] {
		t.Error("unchanged resources were encoded again")
	}
	if s3.entries[1] == s1.entries[1] || s3.entries[1].ready != record.StatusFalse {
		t.Errorf("the changed resource kept its old entry (ready %s)", s3.entries[1].ready)
	}
	if s3.entries[3].key != acctRecord(5, "").Key() {
		t.Errorf("entries %v: the new resource is not last", s3.entries)
	}

	put(t, db, func(w *state.Writer) error { return w.DeleteResource(acctRecord(0, "").Key()) })
	s4, err := ix.current(db)
	if err != nil {
		t.Fatal(err)
	}
	if s4.version == s3.version || len(s4.entries) != 3 || s4.entries[0].key != acctRecord(1, "").Key() {
		t.Errorf("after a deletion: version %d→%d, %d entries", s3.version, s4.version, len(s4.entries))
	}
}
