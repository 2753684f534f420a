package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/kubetest"
)

// High availability end to end (docs/ha.md): real `gitaso serve --leader-elect` processes against a real
// kube-apiserver (the Lease) and the emulator (Azure), killed with SIGKILL.

// buildGitaso builds the gitaso binary under test.
func buildGitaso(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gitaso")
	// As make build does: what users run, and what the daemon benchmark measures.
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "kustomize_disable_go_plugin_support", "-ldflags", "-s -w", "-o", bin, "../../cmd/gitaso")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build gitaso: %v\n%s", err, out)
	}
	return bin
}

// replica is one `gitaso serve` process.
type replica struct {
	name, url, logFile string
	cmd                *exec.Cmd
	done               chan struct{}
	err                error // of Wait, once done is closed
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startServe starts `gitaso serve` on a free loopback port with its own Git cache and home under dir/name.
func (e *Env) startServe(t testing.TB, dir, name, repoURL string, args ...string) *replica {
	t.Helper()
	addr := freeAddr(t)
	home := filepath.Join(dir, name)
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, url: "http://" + addr, logFile: filepath.Join(home, "gitaso.log"), done: make(chan struct{})}
	args = append([]string{"serve", "--repo", repoURL, "--branch", "main", "--path", RepoPath,
		"--cache-dir", filepath.Join(home, "cache"), "--cloud-config", e.CloudFile, "--listen", addr,
		"--interval", "2s", "--sync-period", "0", "--log-level", "debug"}, args...)
	r.cmd = exec.Command(e.Gitaso, args...)
	r.cmd.Env = append(e.gitasoEnv(home), "POD_IP=")
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	f, err := os.Create(r.logFile)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout, r.cmd.Stderr = f, f
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { r.err = r.cmd.Wait(); _ = f.Close(); close(r.done) }()
	t.Cleanup(func() {
		r.kill()
		if t.Failed() {
			b, _ := os.ReadFile(r.logFile)
			t.Logf("--- %s (%s) log, last lines ---\n%s", r.name, r.url, tail(string(b), 60))
		}
	})
	return r
}

func (r *replica) kill() {
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.done
}

// stop sends SIGTERM and returns the exit error.
func (r *replica) stop(t testing.TB) error {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
		return r.err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop within 30 s of SIGTERM", r.name)
		return nil
	}
}

// holdsState reports whether the process has the state file open (Linux /proc).
func (r *replica) holdsState(t *testing.T, statePath string) bool {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", r.cmd.Process.Pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", r.cmd.Process.Pid, fd.Name())); err == nil && l == statePath {
			return true
		}
	}
	return false
}

func (r *replica) logContains(s string) bool {
	b, _ := os.ReadFile(r.logFile)
	return strings.Contains(string(b), s)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// httpGet fetches a path of a replica's API.
func httpGet(url string) (int, http.Header, []byte, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// converged reports whether a replica's API lists n resources, all Ready, and its newest run, started after
// since, finished successfully (a run records results as they come, before its exports are written).
func converged(url string, n int, since time.Time) bool {
	var list struct {
		Items []struct {
			Ready struct{ Status string } `json:"ready"`
		} `json:"items"`
	}
	var runs struct {
		Items []struct {
			StartedAt  time.Time `json:"startedAt"`
			FinishedAt time.Time `json:"finishedAt"`
			Outcome    string    `json:"outcome"`
		} `json:"items"`
	}
	for path, v := range map[string]any{"/api/v1/resources": &list, "/api/v1/runs?limit=1": &runs} {
		code, _, body, err := httpGet(url + path)
		if err != nil || code != http.StatusOK || json.Unmarshal(body, v) != nil {
			return false
		}
	}
	if len(list.Items) != n || len(runs.Items) == 0 {
		return false
	}
	for _, it := range list.Items {
		if it.Ready.Status != "True" {
			return false
		}
	}
	last := runs.Items[0]
	return last.StartedAt.After(since) && !last.FinishedAt.IsZero() && last.Outcome == "succeeded"
}

// waitFor polls cond every 50 ms until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// armWrites counts the PUTs (and PATCHes, DELETEs) ARM answered per lower-cased resource ID, operation polls and
// token requests left out.
func armWrites(log []emulator.LogEntry, method string) map[string]int {
	n := map[string]int{}
	for _, l := range log {
		if l.Method != method || l.Type == "identity" || l.Type == "admin" || l.Status >= 300 {
			continue
		}
		n[strings.ToLower(l.Path)]++
	}
	return n
}

func hasWrite(log []emulator.LogEntry, id string) bool {
	return armWrites(log, http.MethodPut)[strings.ToLower(id)] > 0
}

// TestHAFailover: two `gitaso serve --leader-elect` replicas share one state file and one repository. The
// leader is SIGKILLed while ARM still runs its Service Bus namespace's long-running PUT; the standby takes
// the Lease over within the lease duration, resumes that operation (polls it, does not PUT again), applies
// the rest, and every resource's PUT reached ARM exactly once. Before the kill the standby had not opened the
// state file and served GET /api/v1/resources by forwarding it to the leader. Then a graceful handover: SIGTERM
// to the new leader lets a fresh standby take over within a retry period, with nothing left to apply.
//
//	go test -race -tags kustomize_disable_go_plugin_support ./harness/reliability -run TestHA -v
func TestHAFailover(t *testing.T) {
	kube, env, cl, repo := startHA(t)
	// The namespace's PUT runs longer than a lease duration, so that the new leader finds it still running.
	lro := 20 * time.Second
	env.Emu.SetLatency("Microsoft.ServiceBus/namespaces", lro)
	env.Emu.SetLatency("Microsoft.ServiceBus/namespaces/queues", time.Second)
	ctx := context.Background()
	dir := env.Dir
	fleet := NewFleet("rel-ha", env.Sub)
	if _, err := repo.Commit(fleet.Files(), "fleet"); err != nil {
		t.Fatal(err)
	}
	kube.Namespace(t, fleet.Namespace) // where the identities' exports land
	decls := fleet.Decls()
	byKey := map[string]Decl{}
	for _, d := range decls {
		byKey[strings.TrimPrefix(d.Name, fleet.Prefix+"-")] = d
	}
	statePath := filepath.Join(dir, "shared", "gitaso.db")
	if err := os.MkdirAll(filepath.Dir(statePath), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--state", statePath, "--leader-elect", "--kubeconfig", kube.Kubeconfig, "--leader-election-namespace", "default"}
	d := cluster.DefaultLeaderOptions()
	leader := func() string {
		u, err := cl.LeaderURL(ctx, "default", "gitaso")
		if err != nil {
			return ""
		}
		return u
	}

	a := env.startServe(t, dir, "a", repo.URL(), args...)
	waitFor(t, 60*time.Second, "a to hold the lease", func() bool { return leader() == a.url })
	b := env.startServe(t, dir, "b", repo.URL(), args...)
	waitFor(t, 30*time.Second, "b to answer /readyz as a standby", func() bool {
		code, _, body, err := httpGet(b.url + "/readyz")
		return err == nil && code == http.StatusOK && string(body) == "standby, leader "+a.url+"\n"
	})

	// The leader is mid-LRO: everything that does not wait for the Service Bus namespace is applied, the
	// namespace's PUT was answered (and its operation recorded, within a flush interval).
	waitFor(t, 60*time.Second, "the leader to start the namespace's long-running PUT", func() bool {
		log := env.Emu.RequestLog()
		for _, k := range []string{"main", "id1", "ra-main", "aux", "id2", "ra-aux", "bus"} {
			if !hasWrite(log, byKey[k].ARMID) {
				return false
			}
		}
		return true
	})
	time.Sleep(time.Second)
	if hasWrite(env.Emu.RequestLog(), byKey["q1"].ARMID) {
		t.Fatal("a queue was written before the namespace's PUT ended: the kill would not be mid-operation")
	}
	// The standby forwards the read API to the leader, and has not opened the state.
	var proxied int
	waitFor(t, 10*time.Second, "the standby's forwarded GET /api/v1/resources", func() bool {
		code, h, body, err := httpGet(b.url + "/api/v1/resources")
		if err == nil && code == http.StatusOK && h.Get("X-Gitaso-Leader") == a.url && strings.Contains(string(body), `"items"`) {
			proxied++
		}
		return proxied > 0
	})
	if !a.holdsState(t, statePath) || b.holdsState(t, statePath) {
		t.Fatalf("state file open: leader %v, standby %v; want only the leader", a.holdsState(t, statePath), b.holdsState(t, statePath))
	}
	if code, _, body, _ := httpGet(b.url + "/metrics"); code != http.StatusOK || !strings.Contains(string(body), `gitaso_leader{lease="default/gitaso"} 0`) {
		t.Errorf("standby /metrics: %d %s", code, body)
	}

	killed := time.Now()
	a.kill()
	waitFor(t, d.LeaseDuration+2*d.RetryPeriod+10*time.Second, "b to take the lease over", func() bool { return leader() == b.url })
	takeover := time.Since(killed)
	waitFor(t, 2*time.Minute, "b to converge the fleet", func() bool { return converged(b.url, len(decls), killed) })
	convergedIn := time.Since(killed)
	// The run is recorded before its exports reach the cluster; "run finished" is logged after.
	waitFor(t, 30*time.Second, "b's run to end", func() bool { return b.logContains(`msg="run finished"`) })
	t.Logf("failover: kill -9 of the leader → standby holds the lease in %s (lease duration %s, retry period %s); → fleet of %d converged in %s (namespace LRO %s from its PUT)",
		takeover.Round(time.Millisecond), d.LeaseDuration, d.RetryPeriod, len(decls), convergedIn.Round(time.Millisecond), lro)
	if takeover > d.LeaseDuration+2*d.RetryPeriod+2*time.Second {
		t.Errorf("takeover took %s, more than the lease duration %s and two retry periods", takeover, d.LeaseDuration)
	}
	if !b.holdsState(t, statePath) {
		t.Error("the new leader does not hold the state file")
	}
	if code, _, body, _ := httpGet(b.url + "/metrics"); code != http.StatusOK || !strings.Contains(string(body), `gitaso_leader{lease="default/gitaso"} 1`) {
		t.Errorf("leader /metrics: %d %s", code, body)
	}
	if !b.logContains("resuming operation left in flight") {
		t.Error("the new leader did not resume the operation the old one left in flight")
	}

	// A graceful handover: a fresh standby (a restarted pod a); SIGTERM to b stops its loop, closes the state and
	// only then releases the Lease, so the standby takes over within a retry period and finds nothing to do.
	a2 := env.startServe(t, dir, "a2", repo.URL(), args...)
	waitFor(t, 30*time.Second, "a2 to stand by", func() bool {
		code, _, body, err := httpGet(a2.url + "/readyz")
		return err == nil && code == http.StatusOK && string(body) == "standby, leader "+b.url+"\n"
	})
	stopped := time.Now()
	if err := b.stop(t); err != nil {
		t.Errorf("b after SIGTERM: %v", err)
	}
	waitFor(t, d.LeaseDuration+10*time.Second, "a2 to take the lease over", func() bool { return leader() == a2.url })
	handover := time.Since(stopped)
	waitFor(t, time.Minute, "a2 to converge", func() bool { return converged(a2.url, len(decls), stopped) })
	t.Logf("handover: SIGTERM to the leader → standby holds the lease in %s", handover.Round(time.Millisecond))
	if handover > 2*d.RetryPeriod+2*time.Second {
		t.Errorf("handover after SIGTERM took %s, want about one retry period (%s)", handover, d.RetryPeriod)
	}
	waitFor(t, 30*time.Second, "a2's run to end", func() bool { return a2.logContains(`msg="run finished"`) })
	if err := a2.stop(t); err != nil {
		t.Errorf("a2 after SIGTERM: %v", err)
	}
	if leader() != "" {
		t.Errorf("a2 did not release the lease on SIGTERM: held by %q", leader())
	}
	requests := env.Emu.RequestLog()
	puts := armWrites(requests, http.MethodPut)
	for _, dc := range decls {
		if n := puts[strings.ToLower(dc.ARMID)]; n != 1 {
			t.Errorf("%s: %d PUTs reached ARM, want exactly 1", dc.ARMID, n)
		}
	}
	if dels := armWrites(requests, http.MethodDelete); len(dels) > 0 {
		t.Errorf("DELETEs: %v", dels)
	}
	v, err := Check(ctx, env, fleet.Prefix, statePath, Expectation{Declared: decls}, requests)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Converged() || len(v.Lost) > 0 {
		t.Errorf("not converged: %s", v.Findings())
	}
}

// TestHAShards: two shards (--shards 2 --shard 0 and 1), each with its own Lease and state file, apply one
// repository whose two namespaces fall in different shards; both converge and each state file holds only its
// shard's namespace.
func TestHAShards(t *testing.T) {
	kube, env, cl, repo := startHA(t)
	ctx := context.Background()
	dir := env.Dir
	// One fleet per shard: prefixes whose namespaces fall in shards 0 and 1.
	fleets := make([]Fleet, 2)
	found := 0
	for i := 0; found < 2 && i < 100; i++ {
		f := NewFleet(fmt.Sprintf("rel-s%d", i), env.Sub)
		if k := cluster.ShardOf(f.Namespace, 2); fleets[k].Prefix == "" {
			fleets[k] = f
			found++
		}
	}
	files := map[string]string{}
	for _, f := range fleets {
		maps.Copy(files, f.Files())
	}
	if _, err := repo.Commit(files, "two fleets"); err != nil {
		t.Fatal(err)
	}
	for _, f := range fleets {
		kube.Namespace(t, f.Namespace) // where the identities' exports land
	}
	replicas := make([]*replica, 2)
	states := make([]string, 2)
	start := time.Now()
	for k := range replicas {
		states[k] = filepath.Join(dir, fmt.Sprintf("shard-%d.db", k))
		replicas[k] = env.startServe(t, dir, fmt.Sprintf("shard-%d", k), repo.URL(), "--state", states[k],
			"--leader-elect", "--kubeconfig", kube.Kubeconfig, "--leader-election-namespace", "default",
			"--shards", "2", "--shard", fmt.Sprint(k))
	}
	for k, r := range replicas {
		waitFor(t, 60*time.Second, fmt.Sprintf("shard %d to hold its lease", k), func() bool {
			u, err := cl.LeaderURL(ctx, "default", fmt.Sprintf("gitaso-shard-%d", k))
			return err == nil && u == r.url
		})
	}
	for k, r := range replicas {
		n := len(fleets[k].Decls())
		waitFor(t, 2*time.Minute, fmt.Sprintf("shard %d to converge", k), func() bool { return converged(r.url, n, start) })
		waitFor(t, 30*time.Second, fmt.Sprintf("shard %d's run to end", k), func() bool { return r.logContains(`msg="run finished"`) })
	}
	for _, r := range replicas {
		if err := r.stop(t); err != nil {
			t.Errorf("%s after SIGTERM: %v", r.name, err)
		}
	}
	requests := env.Emu.RequestLog()
	for k, f := range fleets {
		st, err := ReadState(states[k])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range st.Resources {
			if r.Namespace != f.Namespace {
				t.Errorf("shard %d's state holds %s/%s, of namespace %s (shard %d)", k, r.Namespace, r.Name, r.Namespace, cluster.ShardOf(r.Namespace, 2))
			}
		}
		v, err := Check(ctx, env, f.Prefix, states[k], Expectation{Declared: f.Decls()}, requests)
		if err != nil {
			t.Fatal(err)
		}
		if !v.Converged() {
			t.Errorf("shard %d (namespace %s): %s", k, f.Namespace, v.Findings())
		}
	}
}

// TestHALeadershipLost: a leader whose Lease is taken from it (here rewritten to another holder, as a partition
// from the API server would let a standby do) exits non-zero within its renew deadline, releasing the state file.
func TestHALeadershipLost(t *testing.T) {
	kube, env, cl, repo := startHA(t)
	ctx := context.Background()
	fleet := NewFleet("rel-hl", env.Sub)
	kube.Namespace(t, fleet.Namespace)
	if _, err := repo.Commit(fleet.Files(), "fleet"); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(env.Dir, "gitaso.db")
	a := env.startServe(t, env.Dir, "a", repo.URL(), "--state", statePath, "--leader-elect", "--kubeconfig", kube.Kubeconfig,
		"--leader-election-namespace", "default", "--leader-election-id", "lost",
		"--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "500ms")
	waitFor(t, 60*time.Second, "a to lead", func() bool {
		u, err := cl.LeaderURL(ctx, "default", "lost")
		return err == nil && u == a.url && a.holdsState(t, statePath)
	})
	leases := kube.Clientset().CoordinationV1().Leases("default")
	intruder := "intruder_000000@http://127.0.0.1:1"
	waitFor(t, 10*time.Second, "the lease to be taken", func() bool {
		l, err := leases.Get(ctx, "lost", metav1.GetOptions{})
		if err != nil {
			return false
		}
		long := int32(3600)
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.AcquireTime, l.Spec.RenewTime = &intruder, &long, &now, &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err == nil
	})
	taken := time.Now()
	select {
	case <-a.done:
	case <-time.After(3*time.Second + 10*time.Second):
		t.Fatal("the leader did not exit after its lease was taken")
	}
	t.Logf("lease taken → leader exited in %s", time.Since(taken).Round(time.Millisecond))
	var ee *exec.ExitError
	if !errors.As(a.err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want exit status 1", a.err)
	}
	if !a.logContains("leadership lost") {
		t.Error("the leader did not log that it lost the lease")
	}
	if _, err := ReadState(statePath); err != nil {
		t.Errorf("state after the exit: %v", err)
	}
}

// startHA starts what the HA tests share: a kube-apiserver, gitaso built, the emulator and a Git repository.
func startHA(t *testing.T) (*kubetest.Env, *Env, *cluster.Cluster, *Repo) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds gitaso and runs a kube-apiserver")
	}
	kube := kubetest.Start(t)
	bin := buildGitaso(t)
	env, err := NewEnv(EnvOptions{Dir: t.TempDir(), Gitaso: bin, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close() })
	cl, err := cluster.FromConfig(kube.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := NewRepo(filepath.Join(env.Dir, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	return kube, env, cl, repo
}
