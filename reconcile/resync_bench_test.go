package reconcile_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/azure/emulator"
	"github.com/gitaso/gitaso/internal/benchdata"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
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
func newResyncEnv(tb testing.TB, n int) *resyncEnv {
	tb.Helper()
	env := emutest.New(tb, emutest.Emulator(emulator.WithoutThrottling()),
		emutest.ClientOptions(func(o *azure.Options) { o.Limits.Disabled = true }))
	dir := tb.TempDir()
	repo := filepath.Join(dir, "repo")
	if err := benchdata.GenerateApplyTree(repo, n); err != nil {
		tb.Fatal(err)
	}
	rewriteSubscription(tb, repo, env.Sub)
	db, err := state.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	cfg.Parallelism = 32
	rec := reconcile.New(source.NewDir(repo, ""), db, env.Clients, cfg, nil)
	rep, err := rec.Once(context.Background(), reconcile.Options{Trigger: "setup"})
	if err != nil || rep.Run.Outcome != state.OutcomeSucceeded {
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
	tb.Helper()
	rs, err := e.db.Resources(state.Filter{Kind: "NamespacesQueue"})
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range rs[:k] {
		body, err := e.cli.Get(context.Background(), r.ARMID, r.APIVersion)
		if err != nil {
			tb.Fatal(err)
		}
		changed := strings.Replace(string(body), `"maxDeliveryCount":10`, `"maxDeliveryCount":99`, 1)
		if changed == string(body) {
			tb.Fatalf("queue body has no maxDeliveryCount 10: %s", body)
		}
		if _, err := e.cli.Put(context.Background(), r.ARMID, r.APIVersion, []byte(changed)); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkResync1k is issue 4's resync benchmark: one sync period over
// 1,000 unchanged resources (target ≤ 10 ARM requests per period and no
// writes), then one period with 10 resources changed behind gitaso's back
// (target: every drift corrected in that period, with only their writes).
func BenchmarkResync1k(b *testing.B) {
	e := newResyncEnv(b, 1000)
	var req, wr, dreq, dwr, corrected int
	for b.Loop() {
		e.emu.ResetStats()
		rep, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "resync", Refresh: true, All: true})
		if err != nil || rep.Plan.HasChanges() {
			b.Fatalf("unchanged resync: %v %v", err, rep.Plan.Summary())
		}
		req, wr = armRequests(e.emu)

		b.StopTimer()
		drift(b, e, 10)
		e.emu.ResetStats()
		b.StartTimer()
		rep, err = e.rec.Once(context.Background(), reconcile.Options{Trigger: "resync", Refresh: true, All: true})
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

// TestResyncReadsInBulk checks the same behaviour on a small scale.
func TestResyncReadsInBulk(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	e := newResyncEnv(t, 100)
	e.emu.ResetStats()
	rep, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "resync", Refresh: true, All: true})
	if err != nil || rep.Plan.HasChanges() {
		t.Fatalf("unchanged resync: %v %v", err, rep.Plan.Summary())
	}
	if req, wr := armRequests(e.emu); req > 2 || wr != 0 {
		t.Errorf("resync of 100 unchanged resources: %d requests, %d writes; want ≤ 2 graph queries and no writes", req, wr)
	}
	drift(t, e, 3)
	e.emu.ResetStats()
	rep, err = e.rec.Once(context.Background(), reconcile.Options{Trigger: "resync", Refresh: true, All: true})
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
	rep, _ = e.rec.Once(context.Background(), reconcile.Options{Trigger: "resync", Refresh: true, All: true})
	if rep.Plan.HasChanges() {
		t.Errorf("drift not corrected: %v", rep.Plan.Summary())
	}
	// Sync periods: nothing is due right after a read.
	e.emu.ResetStats()
	if _, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "resync", Refresh: true}); err != nil {
		t.Fatal(err)
	}
	if req, _ := armRequests(e.emu); req != 0 {
		t.Errorf("a resync before the period elapsed sent %d requests", req)
	}
}
