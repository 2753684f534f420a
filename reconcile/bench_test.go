package reconcile_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/benchdata"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

const benchSub = "00000000-0000-0000-0000-000000000000"

// BenchmarkPlan10k is issue 3's plan benchmark: 10,000 generated resources
// in 500 namespaces read from disk, with state (every resource applied
// before) and no ARM reads. Target ≤ 1.5 s and ≤ 300 MB on 2 cores.
func BenchmarkPlan10k(b *testing.B) {
	dir := b.TempDir()
	if err := benchdata.Generate(dir, 500, 20, benchSub); err != nil {
		b.Fatal(err)
	}
	benchPlan(b, dir, nil)
}

// benchPlan measures planning the repository at dir with state (every
// resource applied before) and no ARM reads; check, when set, looks at the
// first plan.
func benchPlan(b *testing.B, dir string, check func(*planner.Plan)) {
	db, err := state.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	cfg := reconcile.DefaultConfig()
	cfg.SubscriptionID = benchSub
	rec := reconcile.New(source.NewDir(dir, ""), db, nil, cfg, nil)
	// Seed state as if every resource had been applied.
	rep, err := rec.PlanOnly(context.Background(), false)
	if err != nil {
		b.Fatal(err)
	}
	seedState(b, db, rep.Plan)
	if check != nil {
		check(rep.Plan)
	}

	runtime.GC()
	b.ResetTimer()
	var n int
	for b.Loop() {
		rep, err := rec.PlanOnly(context.Background(), false)
		if err != nil {
			b.Fatal(err)
		}
		n = len(rep.Plan.Resources)
		if rep.Plan.HasChanges() {
			b.Fatalf("plan of unchanged resources has changes: %v", rep.Plan.Summary())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n), "resources")
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
}

func seedState(tb testing.TB, db *state.DB, p *planner.Plan) {
	tb.Helper()
	outs := planner.Outputs{}
	// Identities export principalIds: give each a fake value.
	for _, r := range p.Resources {
		for _, ex := range r.Exports {
			kind, rest, _ := strings.Cut(ex, ":")
			name, key, _ := strings.Cut(rest, "/")
			outs[planner.OutputKey(r.Namespace, kind == "secret", name, key)] = "00000000-0000-0000-0000-00000000cafe"
		}
	}
	err := db.Update(func(w *state.Writer) error {
		for _, r := range p.Resources {
			body, err := planner.Resolve(r, planner.Values{Outputs: outs})
			if err != nil {
				return err
			}
			red, _ := planner.Redact(body.JSON, body.Secrets)
			res := record.Resource{
				Namespace: r.Namespace, Group: r.Group, Version: r.Version, Kind: r.Kind, Name: r.Name,
				ARMID: r.ARMID, APIVersion: r.APIVersion, Policy: r.Policy, Credential: r.Credential,
				AppliedHash: planner.HashRequest(r.ARMID+"?api-version="+r.APIVersion, body.JSON),
				AppliedBody: red, Ready: record.Condition{Type: "Ready", Status: "True", Reason: "Succeeded"}, Generation: 1,
				Outputs: map[string]string{},
			}
			for _, ex := range r.Exports {
				if kind, rest, _ := strings.Cut(ex, ":"); kind == "configmap" {
					res.Outputs[rest] = "00000000-0000-0000-0000-00000000cafe"
				}
			}
			if err := w.PutResource(res); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// peakRSSMB reads the process's peak resident set size (VmHWM).
func peakRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}
