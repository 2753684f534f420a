package reliability

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
)

// Env is an in-process emulator (it outlives every gitaso process the harness kills), a principal with Owner on
// its subscription, the cloud configuration gitaso reads, and an ARM client for the harness's own reads.
type Env struct {
	Emu       *emulator.Emulator
	Dir       string // work directory: cloud.json, ca.pem, repositories, state files
	CloudFile string
	Sub       string
	Principal emulator.ServicePrincipal
	Client    *azure.Client
	// Gitaso is the path of the gitaso binary under test.
	Gitaso string
}

// EnvOptions configure NewEnv.
type EnvOptions struct {
	Dir    string // created when missing
	Gitaso string
	// LROLatency is how long the emulator's long-running operations take (Service Bus namespaces and queues).
	LROLatency time.Duration
	Seed       uint64 // the emulator's fault dice
	// ThrottleScale turns on ARM's throttling at this scale (1: ARM's own buckets); 0 leaves it off.
	ThrottleScale float64
}

// NewEnv starts the emulator and writes the files gitaso needs. Close stops it.
func NewEnv(opts EnvOptions) (*Env, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	throttle := emulator.WithoutThrottling()
	if opts.ThrottleScale > 0 {
		throttle = emulator.WithThrottleScale(opts.ThrottleScale)
	}
	emu, err := emulator.New(throttle, emulator.WithDefaultLatency(opts.LROLatency),
		emulator.WithRequestLogSize(200_000), emulator.WithSeed(opts.Seed))
	if err != nil {
		return nil, fmt.Errorf("reliability: start emulator: %w", err)
	}
	e := &Env{Emu: emu, Dir: opts.Dir, Sub: emu.SubscriptionID(), Gitaso: opts.Gitaso}
	fail := func(err error) (*Env, error) { _ = emu.Close(); return nil, fmt.Errorf("reliability: %w", err) }
	caFile := filepath.Join(opts.Dir, "ca.pem")
	if err := os.WriteFile(caFile, emu.CACertPEM(), 0o600); err != nil {
		return fail(err)
	}
	e.CloudFile = filepath.Join(opts.Dir, "cloud.json")
	if err := os.WriteFile(e.CloudFile, emu.CloudConfigJSON(caFile), 0o600); err != nil {
		return fail(err)
	}
	if e.Principal, err = emu.AddPrincipal(emulator.PrincipalSpec{
		ServicePrincipal: emulator.ServicePrincipal{DisplayName: "gitaso-reliability"},
		Roles:            []emulator.RoleGrant{{Role: "Owner", Scope: "/subscriptions/" + e.Sub}},
	}); err != nil {
		return fail(err)
	}
	cloud, err := azure.LoadCloud(e.CloudFile)
	if err != nil {
		return fail(err)
	}
	copts := azure.DefaultOptions()
	copts.PollInterval = 20 * time.Millisecond
	copts.Limits = azure.RateLimits{Disabled: true}
	cred, err := azure.CredentialFromSecret("harness/credential", map[string]string{
		"AZURE_SUBSCRIPTION_ID": e.Sub, "AZURE_TENANT_ID": emu.TenantID(),
		"AZURE_CLIENT_ID": e.Principal.ClientID, "AZURE_CLIENT_SECRET": e.Principal.Secret,
	})
	if err != nil {
		return fail(err)
	}
	if e.Client, err = azure.NewClients(cloud, copts).For(cred); err != nil {
		return fail(err)
	}
	return e, nil
}

// Close stops the emulator.
func (e *Env) Close() error { return e.Emu.Close() }

// gitasoEnv is the environment of a gitaso process: the caller's, without Azure, gitaso and proxy settings, plus
// the principal's credential.
func (e *Env) gitasoEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "AZURE_"), strings.HasPrefix(k, "GITASO_"), strings.HasPrefix(k, "SOPS_"),
			strings.EqualFold(k, "HTTP_PROXY"), strings.EqualFold(k, "HTTPS_PROXY"), strings.EqualFold(k, "ALL_PROXY"),
			k == "HOME", k == "GOMEMLIMIT", k == "GOGC", k == "DEFAULT_RECONCILE_POLICY", k == "AZURE_SYNC_PERIOD",
			k == "MAX_CONCURRENT_RECONCILES":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home,
		"AZURE_TENANT_ID="+e.Emu.TenantID(), "AZURE_SUBSCRIPTION_ID="+e.Sub,
		"AZURE_CLIENT_ID="+e.Principal.ClientID, "AZURE_CLIENT_SECRET="+e.Principal.Secret)
}

// Proc is one gitaso process.
type Proc struct {
	Exit     int // exit code; -1 when killed by a signal
	Killed   bool
	TimedOut bool
	Duration time.Duration
	Output   string // the last lines of stdout and stderr
}

// Held reports whether gitaso held the revision (exit code 3 of `gitaso apply`).
func (r Proc) Held() bool { return r.Exit == 3 }

// KillPoint says when to SIGKILL a gitaso process; the zero value never does.
type KillPoint struct {
	After time.Duration // this long after the start
	// Writes: as soon as the emulator has answered this many ARM writes (PUT, PATCH, DELETE) since its stats
	// were last reset (polled every millisecond).
	Writes int64
	// AfterARM: this long after the emulator answered the process's first ARM request (tokens excluded), so that
	// a slow start on a loaded machine does not eat the time the run has to work.
	AfterARM time.Duration
}

func (k KillPoint) String() string {
	switch {
	case k.Writes > 0:
		return fmt.Sprintf("after write %d", k.Writes)
	case k.After > 0:
		return "at " + k.After.Round(time.Millisecond).String()
	case k.AfterARM > 0:
		return k.AfterARM.Round(time.Millisecond).String() + " after the first ARM request"
	}
	return "never"
}

// armWrites counts the ARM writes the emulator answered since its stats were reset.
func (e *Env) armWrites() int64 {
	s := e.Emu.Stats()
	return s.ByMethod["PUT"] + s.ByMethod["PATCH"] + s.ByMethod["DELETE"]
}

// armRequests counts the ARM requests the emulator answered since its stats were reset (tokens and the admin API
// excluded).
func (e *Env) armRequests() int64 {
	s := e.Emu.Stats()
	return s.Requests - s.ByType["identity"] - s.ByType["admin"]
}

// gitasoApply runs `gitaso apply` against repo with the state file and cache under dir, sends SIGKILL (to the
// process group) at the kill point, and kills it at the timeout.
func (e *Env) gitasoApply(ctx context.Context, repoURL, dir string, kp KillPoint, timeout time.Duration, extra ...string) (Proc, error) {
	args := append([]string{"apply", "--repo", repoURL, "--branch", "main", "--path", RepoPath,
		"--cache-dir", filepath.Join(dir, "cache"), "--state", filepath.Join(dir, "gitaso.db"),
		"--cloud-config", e.CloudFile, "--log-level", "info"}, extra...)
	cmd := exec.Command(e.Gitaso, args...)
	cmd.Env = e.gitasoEnv(filepath.Join(dir, "home"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out tailBuffer
	out.max = 16 << 10
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Proc{}, fmt.Errorf("reliability: start %s: %w", e.Gitaso, err)
	}
	pid := cmd.Process.Pid
	kill := func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var killC, pollC <-chan time.Time
	if kp.After > 0 {
		t := time.NewTimer(kp.After)
		defer t.Stop()
		killC = t.C
	}
	if kp.Writes > 0 || kp.AfterARM > 0 {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		pollC = t.C
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var r Proc
	var werr error
wait:
	for {
		select {
		case werr = <-done:
			break wait
		case <-killC:
			r.Killed = true
			kill()
			killC = nil
		case <-pollC:
			if kp.AfterARM > 0 {
				if e.armRequests() > 0 {
					t := time.NewTimer(kp.AfterARM)
					defer t.Stop()
					killC, pollC = t.C, nil
				}
				continue
			}
			if e.armWrites() >= kp.Writes {
				r.Killed = true
				kill()
				pollC = nil
			}
		case <-deadline.C:
			r.TimedOut = true
			kill()
		case <-ctx.Done():
			kill()
			<-done
			return Proc{}, ctx.Err()
		}
	}
	// The process group may hold children (git) that outlive a killed gitaso.
	if r.Killed || r.TimedOut {
		kill()
	}
	r.Duration = time.Since(start)
	r.Output = out.String()
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee):
		r.Exit = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Exit = -1
		}
	default:
		return r, werr
	}
	if r.Killed && r.Exit != -1 {
		r.Killed = false // it finished before the signal
	}
	return r, nil
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if t.buf.Len() > 2*t.max {
		b := t.buf.Bytes()
		keep := append([]byte(nil), b[len(b)-t.max:]...)
		t.buf.Reset()
		t.buf.Write(keep)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	b := t.buf.Bytes()
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return string(b)
}

// Repo is a bare Git repository served as file:// and a work tree to commit from.
type Repo struct {
	Bare, Work string
	home       string
}

// NewRepo creates an empty repository with branch main under dir.
func NewRepo(dir string) (*Repo, error) {
	r := &Repo{Bare: filepath.Join(dir, "repo.git"), Work: filepath.Join(dir, "work"), home: filepath.Join(dir, "home")}
	if err := os.MkdirAll(r.home, 0o755); err != nil {
		return nil, err
	}
	if _, err := r.git("", "init", "-q", "--bare", "-b", "main", r.Bare); err != nil {
		return nil, err
	}
	if _, err := r.git("", "init", "-q", "-b", "main", r.Work); err != nil {
		return nil, err
	}
	if _, err := r.git(r.Work, "remote", "add", "origin", r.Bare); err != nil {
		return nil, err
	}
	return r, nil
}

// URL is the repository's clone URL.
func (r *Repo) URL() string { return "file://" + r.Bare }

// Commit replaces RepoPath with files (repository path → content), commits, pushes and returns the SHA.
func (r *Repo) Commit(files map[string]string, msg string) (string, error) {
	if err := os.RemoveAll(filepath.Join(r.Work, RepoPath)); err != nil {
		return "", err
	}
	for p, content := range files {
		full := filepath.Join(r.Work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "--allow-empty", "-m", msg}, {"push", "-q", "origin", "HEAD:refs/heads/main"}} {
		if _, err := r.git(r.Work, args...); err != nil {
			return "", err
		}
	}
	sha, err := r.git(r.Work, "rev-parse", "HEAD")
	return strings.TrimSpace(sha), err
}

func (r *Repo) git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+r.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=reliability", "GIT_AUTHOR_EMAIL=reliability@gitaso.invalid",
		"GIT_COMMITTER_NAME=reliability", "GIT_COMMITTER_EMAIL=reliability@gitaso.invalid")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("reliability: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
