package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/harness/benchdata"
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
// first plan. It reports s/plan (in this process, planning again and again,
// as the daemon does) and cpu-s/plan (the CPU time of one plan, all cores);
// and of a fresh process that plans once, as gitaso plan does
// (TestPlanProcess), rss-MB (its peak resident memory, which neither the
// generator, the seeding nor earlier plans reach), cold-s and cold-cpu-s.
func benchPlan(b *testing.B, dir string, check func(*planner.Plan)) {
	dbPath := filepath.Join(b.TempDir(), "state.db")
	db, err := state.Open(dbPath)
	if err != nil {
		b.Fatal(err)
	}
	rec := reconcile.New(source.NewDir(dir, ""), db, nil, benchConfig(), nil)
	// Seed state as if every resource had been applied.
	rep, err := rec.PlanOnly(context.Background(), false)
	if err != nil {
		b.Fatal(err)
	}
	seedState(b, db, rep.Plan)
	if check != nil {
		check(rep.Plan)
	}
	rep = nil
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	cold := planProcess(b, dir, dbPath)

	db, err = state.Open(dbPath)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rec = reconcile.New(source.NewDir(dir, ""), db, nil, benchConfig(), nil)
	runtime.GC()
	b.ResetTimer()
	var n, plans int
	cpu := cpuSeconds()
	for b.Loop() {
		plans++
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
	// CPU time tells the work apart from the machine's load (wall time
	// stretches when other processes share the cores).
	b.ReportMetric((cpuSeconds()-cpu)/float64(plans), "cpu-s/plan")
	b.ReportMetric(float64(n), "resources")
	b.ReportMetric(cold.rssMB, "rss-MB")
	b.ReportMetric(cold.seconds, "cold-s")
	b.ReportMetric(cold.cpuSeconds, "cold-cpu-s")
}

// coldPlan is what a fresh process planning once took: its peak resident
// memory, wall time (start, catalog, state and repository reads included)
// and CPU time.
type coldPlan struct {
	rssMB, seconds, cpuSeconds float64
}

func benchConfig() reconcile.Config {
	cfg := reconcile.DefaultConfig()
	cfg.SubscriptionID = benchSub
	return cfg
}

// Environment of TestPlanProcess: the repository and the state to plan.
const (
	envPlanDir   = "GITASO_BENCH_PLAN_DIR"
	envPlanState = "GITASO_BENCH_PLAN_STATE"
)

// planProcess runs TestPlanProcess in a fresh process of this test binary.
func planProcess(b *testing.B, dir, dbPath string) coldPlan {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPlanProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envPlanDir+"="+dir, envPlanState+"="+dbPath)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "planned ") {
		b.Fatalf("plan in a fresh process: %v\n%s", err, out)
	}
	ps := cmd.ProcessState
	return coldPlan{rssMB: maxRSSMB(b, ps), seconds: time.Since(start).Seconds(),
		cpuSeconds: (ps.UserTime() + ps.SystemTime()).Seconds()}
}

// TestPlanProcess is benchPlan's fresh process: it plans the repository
// and state its environment names once. Without them it is skipped.
func TestPlanProcess(t *testing.T) {
	dir, dbPath := os.Getenv(envPlanDir), os.Getenv(envPlanState)
	if dir == "" || dbPath == "" {
		t.Skip("run by the plan benchmarks")
	}
	db, err := state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rep, err := reconcile.New(source.NewDir(dir, ""), db, nil, benchConfig(), nil).PlanOnly(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plan.HasChanges() {
		t.Fatalf("plan of unchanged resources has changes: %v", rep.Plan.Summary())
	}
	fmt.Printf("planned %d resources\n", len(rep.Plan.Resources))
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
	// Several transactions: one of 100,000 resources makes bbolt hold
	// every page it writes in memory until it commits.
	const batch = 5000
	for start := 0; start < len(p.Resources); start += batch {
		seedBatch(tb, db, p.Resources[start:min(start+batch, len(p.Resources))], outs)
	}
}

func seedBatch(tb testing.TB, db *state.DB, rs []*planner.Resource, outs planner.Outputs) {
	tb.Helper()
	err := db.Update(func(w *state.Writer) error {
		for _, r := range rs {
			body, err := planner.Resolve(r, planner.Values{Outputs: outs})
			if err != nil {
				return err
			}
			red, _ := planner.Redact(body.JSON, body.Secrets)
			res := record.Resource{
				Namespace: r.Namespace, Group: r.Group, Version: r.Version, Kind: r.Kind, Name: r.Name,
				ARMID: r.ARMID, APIVersion: r.APIVersion, Policy: string(r.Policy), Credential: r.Credential,
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
