package reliability

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeSurvivesHostileCharts: `gitaso serve --flux` under a memory
// guard (GOMEMLIMIT 512 MiB, its resident set read from /proc every 20 ms
// and required to stay under 768 MiB) is given the chart that repeats a
// string 2e9 times, then the chart whose nested loops write nothing: each
// commit is a refused run naming the HelmRelease and the limit, the daemon
// stays up, and the next good commit is applied. Before the bounds the
// first commit took the daemon past 2 GiB within 40 s (OOM-killed again
// after every restart) and the second stalled it for good.
func TestServeSurvivesHostileCharts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gitaso and runs gitaso serve")
	}
	const memLimit = 768 << 20
	bin := buildGitaso(t)
	env, err := NewEnv(EnvOptions{Dir: t.TempDir(), Gitaso: bin, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	repo, err := NewRepo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit(HostileChartFiles(RepoPath, RepoPath+"/charts/hostile", `k: {{ repeat 2000000000 "x" | quote }}`), "repeat"); err != nil {
		t.Fatal(err)
	}
	r := env.startServeEnv(t, t.TempDir(), "serve", repo.URL(), []string{"GOMEMLIMIT=512MiB"}, "--flux")
	var peak int64
	guard := func() {
		select {
		case <-r.done:
			b, _ := os.ReadFile(r.logFile)
			t.Fatalf("gitaso serve ended: %v\n%s", r.err, tail(string(b), 40))
		default:
		}
		rss, hwm := memOf(r.cmd.Process.Pid)
		if peak = max(peak, rss, hwm); peak > memLimit {
			t.Fatalf("gitaso serve reached %d MiB (guard %d MiB)", peak>>20, memLimit>>20)
		}
	}
	// refused waits for a refused run of the revision whose errors name
	// the release and the limit.
	refused := func(sha, limit string) {
		t.Helper()
		waitFor(t, 3*time.Minute, "a refused run of "+sha, func() bool {
			guard()
			run, ok := lastRun(r.url)
			return ok && strings.HasPrefix(run.Revision, sha) && run.Outcome == "refused"
		})
		b, _ := os.ReadFile(r.logFile)
		log := string(b)
		for _, w := range []string{"HelmRelease flux-system/hostile, chart hostile@0.1.0", "hostile/templates/cm.yaml:6:", "limit " + limit + "="} {
			if !strings.Contains(log, w) {
				t.Errorf("the log does not say %q", w)
			}
		}
	}
	first, _ := lastCommit(repo)
	refused(first, "file-size")

	sha, err := repo.Commit(HostileChartFiles(RepoPath, RepoPath+"/charts/hostile",
		`{{- range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}`), "loops")
	if err != nil {
		t.Fatal(err)
	}
	refused(sha, "helm-steps")

	good, err := repo.Commit(map[string]string{RepoPath + "/rg.yaml": validManifest}, "good")
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	waitFor(t, 3*time.Minute, "the good commit applied", func() bool {
		guard()
		run, ok := lastRun(r.url)
		return ok && strings.HasPrefix(run.Revision, good) && run.Outcome == "succeeded" && converged(r.url, 1, since.Add(-time.Minute))
	})
	t.Logf("peak RSS of gitaso serve: %d MiB", peak>>20)
}

type runItem struct {
	Revision string `json:"revision"`
	Outcome  string `json:"outcome"`
}

func lastRun(url string) (runItem, bool) {
	var runs struct {
		Items []runItem `json:"items"`
	}
	code, _, body, err := httpGet(url + "/api/v1/runs?limit=1")
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &runs) != nil || len(runs.Items) == 0 {
		return runItem{}, false
	}
	return runs.Items[0], true
}

func lastCommit(r *Repo) (string, error) {
	out, err := r.git(r.Work, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// startServeEnv is startServe with extra environment variables.
func (e *Env) startServeEnv(t testing.TB, dir, name, repoURL string, extraEnv []string, args ...string) *replica {
	t.Helper()
	addr := freeAddr(t)
	home := filepath.Join(dir, name)
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, url: "http://" + addr, logFile: filepath.Join(home, "gitaso.log"), done: make(chan struct{})}
	args = append([]string{"serve", "--repo", repoURL, "--branch", "main", "--path", RepoPath,
		"--cache-dir", filepath.Join(home, "cache"), "--state", filepath.Join(home, "state.db"),
		"--cloud-config", e.CloudFile, "--listen", addr, "--interval", "2s", "--sync-period", "0"}, args...)
	r.cmd = exec.Command(e.Gitaso, args...)
	r.cmd.Env = append(append(e.gitasoEnv(home), "POD_IP="), extraEnv...)
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

// TestServeSupersedesEndlessRender: with the render bounds turned off
// (helm-steps, helm-bytes and render-timeout none), a chart whose loops
// never end renders until a newer commit arrives: the loop, asking for the
// branch's head while the render runs, abandons it and applies the new
// commit. Before, the daemon rendered the first commit for good and the
// fix was never applied (issue 26: not picked up after 206 s).
func TestServeSupersedesEndlessRender(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gitaso and runs gitaso serve")
	}
	bin := buildGitaso(t)
	env, err := NewEnv(EnvOptions{Dir: t.TempDir(), Gitaso: bin, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	repo, err := NewRepo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	endless, err := repo.Commit(HostileChartFiles(RepoPath, RepoPath+"/charts/hostile",
		`{{- range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}`), "endless")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	r := env.startServeEnv(t, home, "serve", repo.URL(), nil, "--flux",
		"--source-limit", "helm-steps=none,helm-bytes=none,render-timeout=none")
	// The endless commit is fetched: its render runs from now on.
	waitFor(t, 2*time.Minute, "the endless commit fetched", func() bool {
		return cachedRef(filepath.Join(home, "serve", "cache")) == endless
	})
	good, err := repo.Commit(map[string]string{RepoPath + "/rg.yaml": validManifest}, "good")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the good commit applied", func() bool {
		run, ok := lastRun(r.url)
		return ok && strings.HasPrefix(run.Revision, good) && run.Outcome == "succeeded"
	})
	if !r.logContains("render abandoned: a newer commit arrived while it ran") {
		t.Error("the log does not say the render was abandoned")
	}
}

// cachedRef returns the commit of refs/remotes/origin/main in the git
// cache below dir ("" when none yet).
func cachedRef(dir string) string {
	var sha string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(filepath.ToSlash(p), "refs/remotes/origin/main") {
			b, _ := os.ReadFile(p)
			sha = strings.TrimSpace(string(b))
		}
		return nil
	})
	return sha
}
