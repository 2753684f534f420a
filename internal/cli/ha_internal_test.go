package cli

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// team-a and default are in shard 0 of 2, team-b in shard 1 (fnv32a).
func rg(ns, name string) string {
	meta := "  name: " + name + "\n"
	if ns != "" {
		meta += "  namespace: " + ns + "\n"
	}
	return "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n" + meta + "spec:\n  location: westeurope\n"
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestShardSource(t *testing.T) {
	if cluster.ShardOf("team-a", 2) != 0 || cluster.ShardOf("team-b", 2) != 1 || cluster.ShardOf("default", 2) != 0 {
		t.Fatal("the test's namespaces moved between shards")
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.yaml":       rg("team-a", "rg-a"),
		"b.yaml":       rg("team-b", "rg-b"),
		"default.yaml": rg("", "rg-default"),
		"ns.yaml":      "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-b\n",
		"cm.yaml":      "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n  namespace: team-b\n",
	})
	src := source.NewDir(dir, "")
	full, err := src.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		shard            int
		objects, ignored []string
	}{
		{0, []string{"rg-a", "rg-default"}, []string{"team-b"}},
		{1, []string{"rg-b"}, []string{"sa"}},
	} {
		h := &haSettings{shards: 2, shard: tc.shard}
		snap, err := h.filter(src).Fetch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var objs, ign []string
		for _, o := range snap.Objects {
			objs = append(objs, o.Name())
		}
		for _, o := range snap.Ignored {
			ign = append(ign, o.Name())
		}
		slices.Sort(objs)
		slices.Sort(ign)
		if diff := cmp.Diff(tc.objects, objs); diff != "" {
			t.Errorf("shard %d objects (-want +got):\n%s", tc.shard, diff)
		}
		if diff := cmp.Diff(tc.ignored, ign); diff != "" {
			t.Errorf("shard %d ignored (-want +got):\n%s", tc.shard, diff)
		}
		if snap.Revision != full.Revision {
			t.Errorf("shard %d revision %s, want the repository's %s", tc.shard, snap.Revision, full.Revision)
		}
	}
	if h := (&haSettings{shards: 1}); h.filter(src) != source.Source(src) {
		t.Error("one shard: the source is wrapped")
	}
}

// TestShardDeletionGuard: two shards apply one repository into their own
// state files. A shard whose namespaces hold nothing is not held as an
// empty revision (it manages nothing), and a namespace removed from the
// repository is deleted by its own shard only; the other shard's state
// never held it. A state file holding another shard's namespaces is refused.
func TestShardDeletionGuard(t *testing.T) {
	em := emutest.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	open := func(name string) *state.DB {
		db, err := state.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	shards := []*haSettings{{shards: 2, shard: 0}, {shards: 2, shard: 1}}
	dbs := []*state.DB{open("shard-0.db"), open("shard-1.db")}
	cfg := reconcile.DefaultConfig()
	cfg.Global = em.Cred
	recs := make([]*reconcile.Reconciler, 2)
	for i, h := range shards {
		recs[i] = reconcile.New(h.filter(source.NewDir(repo, "")), dbs[i], em.Clients, cfg, nil)
	}
	run := func(i int) *reconcile.Report {
		t.Helper()
		rep, err := recs[i].Once(ctx, reconcile.Options{Trigger: "cli", Refresh: true})
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		return rep
	}
	names := func(db *state.DB) []string {
		t.Helper()
		rs, err := db.Resources(record.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, r.Namespace+"/"+r.Name)
		}
		slices.Sort(out)
		return out
	}

	// Only shard 0's namespace: shard 1 sees an empty snapshot.
	writeFiles(t, repo, map[string]string{"a.yaml": rg("team-a", "rg-a")})
	if rep := run(0); rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("shard 0: %s %s", rep.Run.Outcome, rep.Run.Error)
	}
	if rep := run(1); rep.Run.Outcome == record.OutcomeHeld {
		t.Fatalf("shard 1 with nothing to manage was held: %s", rep.Run.Error)
	}
	// Both namespaces.
	writeFiles(t, repo, map[string]string{"a.yaml": rg("team-a", "rg-a"), "b.yaml": rg("team-b", "rg-b")})
	for i := range recs {
		if rep := run(i); rep.Run.Outcome != record.OutcomeSucceeded {
			t.Fatalf("shard %d: %s %s", i, rep.Run.Outcome, rep.Run.Error)
		}
	}
	if diff := cmp.Diff([]string{"team-a/rg-a"}, names(dbs[0])); diff != "" {
		t.Errorf("shard 0 state (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"team-b/rg-b"}, names(dbs[1])); diff != "" {
		t.Errorf("shard 1 state (-want +got):\n%s", diff)
	}
	// team-a removed: shard 0 manages rg-a and now declares nothing, which
	// is an empty revision of its own namespaces: held. Shard 1 goes on.
	writeFiles(t, repo, map[string]string{"b.yaml": rg("team-b", "rg-b")})
	if rep := run(0); rep.Run.Outcome != record.OutcomeHeld || rep.Run.Held == nil || rep.Run.Held.Reason != record.HoldEmpty {
		t.Errorf("shard 0 with its namespace emptied: %s %+v, want held as %s", rep.Run.Outcome, rep.Run.Held, record.HoldEmpty)
	}
	if rep := run(1); rep.Run.Outcome != record.OutcomeSucceeded {
		t.Errorf("shard 1: %s %s", rep.Run.Outcome, rep.Run.Error)
	}
	// team-b removed while team-a is back: shard 1 is held for its own
	// namespace, shard 0 has nothing of team-b to delete.
	writeFiles(t, repo, map[string]string{"a.yaml": rg("team-a", "rg-a")})
	if rep := run(0); rep.Run.Outcome != record.OutcomeSucceeded || len(rep.Plan.Deletions()) != 0 {
		t.Errorf("shard 0: %s, deletions %v", rep.Run.Outcome, rep.Plan.Deletions())
	}
	if err := shards[1].checkState(dbs[1]); err != nil {
		t.Errorf("shard 1's own state refused: %v", err)
	}
	err := shards[0].checkState(dbs[1])
	if err == nil || !strings.Contains(err.Error(), "team-b") {
		t.Errorf("shard 0 given shard 1's state: %v, want a refusal naming team-b", err)
	}
}

// farFuture keeps a standby's looked-up leader cached.
var farFuture = time.Now().Add(time.Hour)

func slogDiscard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestStandbyForwards: a standby forwards the API to the leader with the
// client's Host and X-Gitaso-Leader, answers probes itself, and answers 503
// with a JSON error when the leader is down or it has just been elected.
func TestStandbyForwards(t *testing.T) {
	var gotHost, gotBy string
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHost, gotBy = r.Host, r.Header.Get(headerForwarded)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"items":[]}`))
	}))
	lo := cluster.LeaderOptions{Namespace: "ns", Name: "gitaso", RetryPeriod: 0}
	sb := &standby{lo: lo, self: "http://self:8080", log: slogDiscard(), rt: http.DefaultTransport}
	sb.looked = farFuture
	sb.leader = leader.URL

	get := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9999"+path, nil)
		rec := httptest.NewRecorder()
		sb.ServeHTTP(rec, req)
		return rec
	}
	rec := get("/api/v1/resources")
	if rec.Code != 200 || rec.Header().Get(headerLeader) != leader.URL || !strings.Contains(rec.Body.String(), "items") {
		t.Errorf("forwarded: %d %q %s", rec.Code, rec.Header().Get(headerLeader), rec.Body)
	}
	if gotHost != "127.0.0.1:9999" || gotBy != "http://self:8080" {
		t.Errorf("leader saw Host %q, forwarded by %q", gotHost, gotBy)
	}
	if rec := get("/readyz"); rec.Code != 200 || rec.Body.String() != "standby, leader "+leader.URL+"\n" {
		t.Errorf("readyz: %d %q", rec.Code, rec.Body)
	}
	if rec := get("/metrics"); rec.Code != 200 || !strings.Contains(rec.Body.String(), `gitaso_leader{lease="ns/gitaso"} 0`) {
		t.Errorf("metrics: %d %q", rec.Code, rec.Body)
	}
	leader.Close()
	sb.looked = farFuture
	if rec := get("/api/v1/resources"); rec.Code != 503 || !strings.Contains(rec.Body.String(), `"code":"unavailable"`) {
		t.Errorf("leader down: %d %s", rec.Code, rec.Body)
	}
	sb.looked, sb.leader = farFuture, sb.self
	if rec := get("/api/v1/runs"); rec.Code != 503 || !strings.Contains(rec.Body.String(), "just elected") {
		t.Errorf("self: %d %s", rec.Code, rec.Body)
	}
}
