package reconcile_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/harness/benchdata"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

type resyncEnv struct {
	emu *emulator.Emulator
	rec *reconcile.Reconciler
	cli *azure.Client
	db  *state.DB
}

// newResyncEnv applies n generated resources (resource group → Service Bus
// namespace → queue) to an emulator without latency or throttling.
func newResyncEnv(tb testing.TB, n int, opts ...func(*reconcile.Config)) *resyncEnv {
	return newResyncEnvWith(tb, func(dir string) error { return benchdata.GenerateApplyTree(dir, n) }, opts...)
}

// everyRun makes every resource due at every run (a sync period has passed)
// and reads the Activity Log without the production overlap (the emulator
// records events as they happen), with a full read once every k periods.
func everyRun(k int) func(*reconcile.Config) {
	return func(c *reconcile.Config) {
		c.SyncPeriod = time.Nanosecond
		c.ActivityLogOverlap = 0
		c.FullResyncEvery = k
	}
}

// generateTracked writes n tracked resources: 10 resource groups and
// identities spread over them (every one indexed by Resource Graph).
func generateTracked(n int) func(dir string) error {
	return func(dir string) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		var b strings.Builder
		for i := 0; i < 10; i++ {
			fmt.Fprintf(&b, "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg-%02d\n  namespace: bench\nspec:\n  location: westeurope\n---\n", i)
		}
		for i := 0; i < n-10; i++ {
			fmt.Fprintf(&b, "apiVersion: managedidentity.azure.com/v1api20230131\nkind: UserAssignedIdentity\nmetadata:\n  name: id-%04d\n  namespace: bench\nspec:\n  location: westeurope\n  owner:\n    name: rg-%02d\n  tags:\n    team: t%d\n---\n", i, i%10, i%7)
		}
		return os.WriteFile(filepath.Join(dir, "tracked.yaml"), []byte(b.String()), 0o644)
	}
}

func newResyncEnvWith(tb testing.TB, generate func(dir string) error, opts ...func(*reconcile.Config)) *resyncEnv {
	tb.Helper()
	env := emutest.New(tb, emutest.Emulator(emulator.WithoutThrottling()),
		emutest.ClientOptions(func(o *azure.Options) { o.Limits.Disabled = true }))
	return newResyncEnvOn(tb, env, env.Cred, nil, generate, opts...)
}

// newResyncEnvOn applies the generated tree on env as cred, logging to log
// (nil: slog's default).
func newResyncEnvOn(tb testing.TB, env *emutest.Env, cred *azure.Credential, log *slog.Logger, generate func(dir string) error, opts ...func(*reconcile.Config)) *resyncEnv {
	tb.Helper()
	dir := tb.TempDir()
	repo := filepath.Join(dir, "repo")
	if err := generate(repo); err != nil {
		tb.Fatal(err)
	}
	rewriteSubscription(tb, repo, env.Sub)
	db, err := state.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	cfg := reconcile.DefaultConfig()
	cfg.Global = cred
	cfg.Parallelism = 32
	for _, o := range opts {
		o(&cfg)
	}
	rec := reconcile.New(source.NewDir(repo, ""), db, env.Clients, cfg, log)
	rep, err := rec.Once(context.Background(), reconcile.Options{Trigger: "setup"})
	if err != nil || rep.Run.Outcome != record.OutcomeSucceeded {
		tb.Fatalf("setup apply: %v %s", err, rep.Run.Error)
	}
	return &resyncEnv{emu: env.Emu, rec: rec, cli: env.Client, db: db}
}

// armRequests counts the requests ARM saw (token requests excluded) and the
// writes among them.
func armRequests(emu *emulator.Emulator) (requests, writes int) {
	for _, l := range emu.RequestLog() {
		if !strings.HasPrefix(l.Path, "/subscriptions") && !strings.HasPrefix(l.Path, "/providers") {
			continue
		}
		requests++
		if l.Method == "PUT" || l.Method == "PATCH" || l.Method == "DELETE" {
			writes++
		}
	}
	return requests, writes
}

// drift changes maxDeliveryCount of k queues behind gitaso's back.
func drift(tb testing.TB, e *resyncEnv, k int) {
	driftKind(tb, e, k, "NamespacesQueue", `"maxDeliveryCount":10`, `"maxDeliveryCount":99`)
}

// driftKind rewrites from → to in the ARM bodies of k resources of a kind.
func driftKind(tb testing.TB, e *resyncEnv, k int, kind, from, to string) {
	tb.Helper()
	rs, err := e.db.Resources(record.Filter{Kind: kind})
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range rs[:k] {
		body, err := e.cli.Get(context.Background(), r.ARMID, r.APIVersion)
		if err != nil {
			tb.Fatal(err)
		}
		changed := strings.Replace(string(body), from, to, 1)
		if changed == string(body) {
			tb.Fatalf("body has no %s: %s", from, body)
		}
		if _, err := e.cli.Put(context.Background(), r.ARMID, r.APIVersion, []byte(changed)); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkResync1k is the resync benchmark (issues 4 and 12): one sync
// period over 1,000 unchanged resources (issue 12's target: ≤ 2 requests per
// subscription per period, proxy resources included, and no writes), then
// one period with 10 resources changed behind gitaso's back (target: every
// drift corrected in that period, with only their writes). A periodic resync
// asks the subscription's Activity Log what was written since the last read
// and reads only that (activity.go); "full" reads everything, as the startup
// run and the full read every --full-resync-every periods do. "tracked" are
// resources Resource Graph indexes (groups, identities); "tree" is the apply
// benchmark's 10 groups / 90 Service Bus namespaces / 900 queues, whose
// queues are proxy resources the graph does not index (as in Azure), read
// with one list per namespace.
func BenchmarkResync1k(b *testing.B) {
	b.Run("tracked", func(b *testing.B) {
		benchResync(b, newResyncEnvWith(b, generateTracked(1000), everyRun(1000)), false, "UserAssignedIdentity", `"team":"t`, `"team":"drifted-t`)
	})
	b.Run("tree", func(b *testing.B) {
		benchResync(b, newResyncEnv(b, 1000, everyRun(1000)), false, "NamespacesQueue", `"maxDeliveryCount":10`, `"maxDeliveryCount":99`)
	})
	b.Run("tracked-full", func(b *testing.B) {
		benchResync(b, newResyncEnvWith(b, generateTracked(1000)), true, "UserAssignedIdentity", `"team":"t`, `"team":"drifted-t`)
	})
	b.Run("tree-full", func(b *testing.B) {
		benchResync(b, newResyncEnv(b, 1000), true, "NamespacesQueue", `"maxDeliveryCount":10`, `"maxDeliveryCount":99`)
	})
}

// BenchmarkResync10k is BenchmarkResync1k's log path over 10,000 resources
// (100 groups / 900 namespaces / 9,000 queues; 10,000 identities): the idle
// cost stays one request per subscription.
func BenchmarkResync10k(b *testing.B) {
	b.Run("tracked", func(b *testing.B) {
		benchResync(b, newResyncEnvWith(b, generateTracked(10000), everyRun(1000)), false, "UserAssignedIdentity", `"team":"t`, `"team":"drifted-t`)
	})
	b.Run("tree", func(b *testing.B) {
		benchResync(b, newResyncEnv(b, 10000, everyRun(1000)), false, "NamespacesQueue", `"maxDeliveryCount":10`, `"maxDeliveryCount":99`)
	})
}

// benchResync measures an unchanged period and a period with 10 drifts:
// a full read (all) or a periodic resync.
func benchResync(b *testing.B, e *resyncEnv, all bool, kind, from, to string) {
	var req, wr, dreq, dwr, corrected int
	opts := reconcile.Options{Trigger: "refresh", Refresh: true, All: all}
	if _, err := e.rec.Once(context.Background(), opts); err != nil { // the first resync reads everything
		b.Fatal(err)
	}
	for b.Loop() {
		e.emu.ResetStats()
		rep, err := e.rec.Once(context.Background(), opts)
		if err != nil || rep.Plan.HasChanges() {
			b.Fatalf("unchanged resync: %v %v", err, rep.Plan.Summary())
		}
		req, wr = armRequests(e.emu)

		b.StopTimer()
		driftKind(b, e, 10, kind, from, to)
		e.emu.ResetStats()
		b.StartTimer()
		rep, err = e.rec.Once(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		corrected = rep.Plan.Summary()[planner.Drift]
		dreq, dwr = armRequests(e.emu)
	}
	b.ReportMetric(float64(req), "requests/period")
	b.ReportMetric(float64(wr), "writes/period")
	b.ReportMetric(float64(corrected), "drifts-corrected")
	b.ReportMetric(float64(dreq), "requests/drift-period")
	b.ReportMetric(float64(dwr), "writes/drift-period")
}

// TestResyncReadsInBulk checks the full read (All: the startup run, an
// explicit refresh, the full read every --full-resync-every periods) on a
// small scale; activity_test.go checks the periodic resync from the
// Activity Log.
func TestResyncReadsInBulk(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	e := newResyncEnv(t, 100)
	e.emu.ResetStats()
	rep, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "refresh", Refresh: true, All: true})
	if err != nil || rep.Plan.HasChanges() {
		t.Fatalf("unchanged resync: %v %v", err, rep.Plan.Summary())
	}
	// Tracked resources (groups, namespaces) come from Resource Graph; queues,
	// which the graph does not index (as in Azure), from one list per namespace.
	queues, _ := e.db.Resources(record.Filter{Kind: "NamespacesQueue"})
	parents := map[string]bool{}
	for _, q := range queues {
		parents[q.ARMID[:strings.LastIndex(q.ARMID, "/")]] = true
	}
	want := 2 + len(parents)
	if req, wr := armRequests(e.emu); req > want || wr != 0 {
		t.Errorf("resync of 100 unchanged resources: %d requests, %d writes; want ≤ %d (2 graph queries, %d collection lists) and no writes", req, wr, want, len(parents))
	}
	drift(t, e, 3)
	e.emu.ResetStats()
	rep, err = e.rec.Once(context.Background(), reconcile.Options{Trigger: "refresh", Refresh: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Plan.Summary()[planner.Drift]; got != 3 {
		t.Errorf("drifts planned %d, want 3", got)
	}
	if _, wr := armRequests(e.emu); wr != 3 {
		t.Errorf("writes %d, want 3", wr)
	}
	// The next period finds nothing to do.
	e.emu.ResetStats()
	rep, _ = e.rec.Once(context.Background(), reconcile.Options{Trigger: "refresh", Refresh: true, All: true})
	if rep.Plan.HasChanges() {
		t.Errorf("drift not corrected: %v", rep.Plan.Summary())
	}
	// Sync periods: nothing is due right after a read.
	e.emu.ResetStats()
	if _, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "refresh", Refresh: true}); err != nil {
		t.Fatal(err)
	}
	if req, _ := armRequests(e.emu); req != 0 {
		t.Errorf("a resync before the period elapsed sent %d requests", req)
	}
}
