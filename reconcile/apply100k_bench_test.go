package reconcile_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/harness/benchdata"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
)

// BenchmarkApply100k20Subscriptions is issue 12's apply past one
// subscription: a first apply of 100,000 generated resources (5,000
// namespaces of 20, four levels deep) spread over 20 subscriptions, each
// namespace signing in to its own through its aso-credential, against the
// emulator with ARM's throttling. ARM's buckets are per subscription, so the
// floor is one subscription's: (5,000 − 200) / 10 s = 480 s. Target: within
// 1.1× of it. GITASO_BENCH_APPLY100K_N sets another count (a multiple of 400).
//
//	go test -tags kustomize_disable_go_plugin_support ./reconcile/ -run '^$' -bench BenchmarkApply100k20Subscriptions -benchtime 1x -timeout 60m
func BenchmarkApply100k20Subscriptions(b *testing.B) {
	const subscriptions, perNamespace = 20, 20
	n, err := benchdata.Count("GITASO_BENCH_APPLY100K_N", 100_000, 400)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		env := emutest.New(b, emutest.ClientOptions(func(o *azure.Options) { *o = azure.DefaultOptions() }))
		subs := make([]string, subscriptions)
		for i := range subs {
			subs[i] = fmt.Sprintf("5b4e6ad4-0000-4000-8000-%012d", 100+i)
			env.Emu.AddSubscription(subs[i], fmt.Sprintf("bench-%02d", i))
			if err := env.Emu.AssignRole(env.Principal.ObjectID, "Owner", "/subscriptions/"+subs[i]); err != nil {
				b.Fatal(err)
			}
		}
		dir := b.TempDir()
		repo := filepath.Join(dir, "repo")
		if err := benchdata.Generate(repo, n/perNamespace, perNamespace, benchSub); err != nil {
			b.Fatal(err)
		}
		if err := benchdata.SpreadOverSubscriptions(repo, benchSub, subs, env.Emu.TenantID(), env.Principal.ClientID, env.Principal.Secret); err != nil {
			b.Fatal(err)
		}
		rec, db := applyReconciler(b, env, repo, filepath.Join(dir, "state.db"))

		b.StartTimer()
		start := time.Now()
		rep, err := rec.Once(context.Background(), reconcile.Options{Trigger: "bench", Refresh: true, All: true})
		elapsed := time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if rep.Run.Outcome != record.OutcomeSucceeded {
			b.Errorf("outcome %s: %s", rep.Run.Outcome, rep.Run.Error)
		}
		perSub := n / subscriptions
		floor := max(time.Duration(float64(perSub-200)/10*float64(time.Second)), time.Second)
		st := env.Emu.Stats()
		b.ReportMetric(elapsed.Seconds(), "apply-s")
		b.ReportMetric(floor.Seconds(), "floor-s")
		b.ReportMetric(elapsed.Seconds()/floor.Seconds(), "x-floor")
		b.ReportMetric(float64(st.Throttled), "429s-from-ARM")
		b.ReportMetric(selfPeakRSSMB(), "peak-RSS-MB")
		_ = db.Close()
		b.StartTimer()
	}
}

// selfPeakRSSMB is this process's peak resident set (VmHWM), 0 where /proc
// does not tell.
func selfPeakRSSMB() float64 {
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
