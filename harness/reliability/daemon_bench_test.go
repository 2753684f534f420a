package reliability

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitaso/gitaso/harness/benchdata"
)

// BenchmarkDaemon10k is issue 12's ten-thousand-resource daemon: a real `gitaso serve` process follows a
// repository of 10,000 resources (500 namespaces, each a resource group and 19 user-assigned identities) into an
// empty subscription of the emulator with ARM's throttling (200 writes at once, then 10/s) and no client-side
// shortcut. It reports:
//
//   - ready-s, floor-s, x-floor: time from the daemon's start to every resource Ready, against ARM's write floor
//     ((n-200)/10 s: every resource is one PUT);
//   - rss-run-MB: the daemon's peak resident set during that first run (VmHWM);
//   - rss-converged-MB: its resident set after two further runs that read Azure back (POST /api/v1/sync), idle;
//   - state-MB: the state file after those runs.
//
// It takes ARM's floor and then some (about 17 minutes at 10,000); GITASO_BENCH_DAEMON_N sets another count
// (a multiple of 20):
//
//	go test -tags kustomize_disable_go_plugin_support ./harness/reliability/ -run '^$' -bench BenchmarkDaemon10k -benchtime 1x -timeout 60m
func BenchmarkDaemon10k(b *testing.B) {
	n, err := benchdata.Count("GITASO_BENCH_DAEMON_N", 10000, 20)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		benchDaemon(b, n, 1, 2)
		b.StartTimer()
	}
}

// BenchmarkDaemon100k20Subscriptions is issue 12's hundred thousand resources past one subscription, measured as
// BenchmarkDaemon10k measures ten thousand, with the daemon in a process of its own: a real `gitaso serve` follows
// a repository of 100,000 resources (5,000 namespaces of 20, each namespace's aso-credential signing in to one of
// 20 subscriptions) into the emulator with ARM's throttling. ARM's buckets are per subscription, so the floor is
// one subscription's: (5,000 − 200) / 10 s = 480 s. It reports ready-s, floor-s and x-floor (target 1.1×), the
// daemon's peak resident set during the run (rss-run-MB, target 1 GB; the emulator holding 100,000 resources runs
// in the benchmark's process and is not counted) and its resident set 10 s after the run (rss-converged-MB; no
// read-back runs). GITASO_BENCH_DAEMON_N sets another count (a multiple of 400):
//
//	go test -tags kustomize_disable_go_plugin_support ./harness/reliability/ -run '^$' -bench BenchmarkDaemon100k20Subscriptions -benchtime 1x -timeout 60m
func BenchmarkDaemon100k20Subscriptions(b *testing.B) {
	n, err := benchdata.Count("GITASO_BENCH_DAEMON_N", 100_000, 400)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		benchDaemon(b, n, 20, 0)
		b.StartTimer()
	}
}

// benchDaemon applies n generated resources (namespaces of 20) spread over subs subscriptions into an empty
// emulator with a real `gitaso serve`, then asks for resyncs runs that read Azure back.
func benchDaemon(b *testing.B, n, subs, resyncs int) {
	dir := b.TempDir()
	env, err := NewEnv(EnvOptions{Dir: filepath.Join(dir, "env"), Gitaso: buildGitaso(b), ThrottleScale: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
	gen := filepath.Join(dir, "gen")
	if err := benchdata.Generate(gen, n/20, 20, env.Sub); err != nil {
		b.Fatal(err)
	}
	if subs > 1 {
		ids := make([]string, subs)
		for i := range ids {
			ids[i] = fmt.Sprintf("5b4e6ad4-0000-4000-8000-%012d", 200+i)
			env.Emu.AddSubscription(ids[i], fmt.Sprintf("bench-%02d", i))
			if err := env.Emu.AssignRole(env.Principal.ObjectID, "Owner", "/subscriptions/"+ids[i]); err != nil {
				b.Fatal(err)
			}
		}
		if err := benchdata.SpreadOverSubscriptions(gen, env.Sub, ids, env.Emu.TenantID(), env.Principal.ClientID, env.Principal.Secret); err != nil {
			b.Fatal(err)
		}
	}
	files := map[string]string{}
	if err := filepath.WalkDir(gen, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(gen, p)
		files[RepoPath+"/"+filepath.ToSlash(rel)] = string(data)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	repo, err := NewRepo(filepath.Join(dir, "git"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := repo.Commit(files, fmt.Sprintf("%d resources", n)); err != nil {
		b.Fatal(err)
	}
	statePath := filepath.Join(dir, "gitaso.db")
	start := time.Now()
	args := []string{"--state", statePath, "--parallelism", "32", "--log-level", "info"}
	if addr := os.Getenv("GITASO_BENCH_DAEMON_PPROF"); addr != "" {
		// Heap and CPU profiles of the daemon while it runs, e.g. 127.0.0.1:6060 (docs/scale.md).
		args = append(args, "--pprof-listen", addr)
	}
	r := env.startServe(b, dir, "daemon", repo.URL(), args...)
	pid := r.cmd.Process.Pid

	// Sample the resident set while the first run goes on.
	var mu sync.Mutex
	peak := 0.0
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if v := procStatusMB(pid, "VmRSS:"); v > 0 {
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	ready := func() (int, int) {
		code, _, body, err := httpGet(r.url + "/api/v1/summary")
		if err != nil || code != http.StatusOK {
			return 0, 0
		}
		var s struct {
			Total int            `json:"total"`
			Ready map[string]int `json:"ready"`
		}
		if json.Unmarshal(body, &s) != nil {
			return 0, 0
		}
		return s.Ready["True"], s.Total
	}
	floor := time.Duration(float64(n/subs-200) / 10 * float64(time.Second))
	// Polled once a second, as a status page would: the API's answers cost
	// the daemon memory and time too.
	poll(b, 3*floor+5*time.Minute, fmt.Sprintf("%d resources Ready", n), func() bool {
		select {
		case <-r.done:
			b.Fatalf("gitaso serve exited: %v", r.err)
		default:
		}
		rd, _ := ready()
		return rd == n
	})
	readyAfter := time.Since(start)
	poll(b, 5*time.Minute, "the first run to finish", func() bool { return converged(r.url, n, start) })
	runHWM := procStatusMB(pid, "VmHWM:")
	close(stop)
	<-sampled

	// Runs that read Azure back (what the daemon does every sync period), then idle.
	for i := range resyncs {
		since := time.Now()
		req, _ := http.NewRequest(http.MethodPost, r.url+"/api/v1/sync", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b.Fatalf("POST /api/v1/sync: %d", resp.StatusCode)
		}
		poll(b, 10*time.Minute, fmt.Sprintf("resync %d", i+1), func() bool { return converged(r.url, n, since) })
	}
	time.Sleep(10 * time.Second)
	convergedRSS := procStatusMB(pid, "VmRSS:")
	fi, err := os.Stat(statePath)
	if err != nil {
		b.Fatal(err)
	}
	st := env.Emu.Stats()
	b.ReportMetric(readyAfter.Seconds(), "ready-s")
	b.ReportMetric(floor.Seconds(), "floor-s")
	b.ReportMetric(readyAfter.Seconds()/floor.Seconds(), "x-floor")
	b.ReportMetric(max(peak, runHWM), "rss-run-MB")
	b.ReportMetric(convergedRSS, "rss-converged-MB")
	b.ReportMetric(float64(fi.Size())/(1<<20), "state-MB")
	b.ReportMetric(float64(st.Throttled), "429s-from-ARM")
	if err := r.stop(b); err != nil {
		b.Logf("gitaso serve stopped: %v", err)
	}
}

// poll checks cond once a second until it holds or the timeout passes.
func poll(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(time.Second)
	}
}

// procStatusMB reads a size field (VmRSS:, VmHWM:) of /proc/<pid>/status in MiB, or 0.
func procStatusMB(pid int, field string) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}
