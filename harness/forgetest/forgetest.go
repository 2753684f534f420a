package forgetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Version is the Gitea version scripts/gitea-binary.sh builds by default.
const Version = "1.26.0"

// Gitea is a running Gitea server with one admin user and an access token
// for it. Stop is called when the test ends.
type Gitea struct {
	// URL is the server's root URL without the trailing slash, e.g.
	// http://127.0.0.1:41234. The REST API is under URL+"/api/v1".
	URL string
	// Token is an access token of User with every scope ("all"), for
	// "Authorization: token …" and as the password of git over HTTP.
	Token string
	// User and Password are the admin user's name and password.
	User     string
	Password string
	// Dir is the server's work directory (app.ini, SQLite database,
	// repositories, gitea.log).
	Dir string
	// Bin is the gitea binary.
	Bin string

	conf     string
	env      []string
	client   *http.Client
	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// Binary returns the gitea binary to run: $GITASO_GITEA_BIN, else the
// newest ~/.cache/gitaso/gitea-v*/gitea that scripts/gitea-binary.sh built;
// "" when there is none.
func Binary() string {
	if b := os.Getenv("GITASO_GITEA_BIN"); b != "" {
		if isExec(b) {
			return b
		}
		return ""
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	matches, _ := filepath.Glob(filepath.Join(d, "gitaso", "gitea-v*", "gitea"))
	sort.Slice(matches, func(i, j int) bool { return versionLess(matches[j], matches[i]) })
	for _, m := range matches {
		if isExec(m) {
			return m
		}
	}
	return ""
}

// versionLess orders …/gitea-v1.9.0/gitea before …/gitea-v1.26.0/gitea.
func versionLess(a, b string) bool {
	va := strings.Split(strings.TrimPrefix(filepath.Base(filepath.Dir(a)), "gitea-v"), ".")
	vb := strings.Split(strings.TrimPrefix(filepath.Base(filepath.Dir(b)), "gitea-v"), ".")
	for i := 0; i < len(va) && i < len(vb); i++ {
		na, ea := strconv.Atoi(va[i])
		nb, eb := strconv.Atoi(vb[i])
		if ea != nil || eb != nil {
			if va[i] != vb[i] {
				return va[i] < vb[i]
			}
			continue
		}
		if na != nb {
			return na < nb
		}
	}
	return len(va) < len(vb)
}

// StaticRoot returns the directory holding Gitea's options/, templates/ and
// public/ for a binary built without the bindata tag: $GITASO_GITEA_STATIC,
// else static/ beside the binary (where scripts/gitea-binary.sh copies them).
func StaticRoot(bin string) string {
	if s := os.Getenv("GITASO_GITEA_STATIC"); s != "" {
		return s
	}
	return filepath.Join(filepath.Dir(bin), "static")
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("GITASO_REQUIRE_FORGE") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Start starts a Gitea server for the test, in a temporary work directory,
// listening on 127.0.0.1 on a free port, and stops it when the test ends. It
// skips the test when the binary (or git) is absent, and fails instead under
// GITASO_REQUIRE_FORGE=1 (CI).
func Start(t testing.TB) *Gitea {
	t.Helper()
	bin := Binary()
	if bin == "" {
		skipOrFail(t, "gitea not built: run scripts/gitea-binary.sh (several minutes once) or set GITASO_GITEA_BIN")
	}
	if _, err := exec.LookPath("git"); err != nil {
		skipOrFail(t, "git not found: Gitea and the tests' pushes need it")
	}
	static := StaticRoot(bin)
	if _, err := os.Stat(filepath.Join(static, "options", "locale")); err != nil {
		skipOrFail(t, fmt.Sprintf("gitea's assets not found in %s (rerun scripts/gitea-binary.sh or set GITASO_GITEA_STATIC): %v", static, err))
	}
	began := time.Now()
	g, err := start(bin, static, t.TempDir())
	if g != nil {
		t.Cleanup(func() {
			g.Stop()
			if t.Failed() {
				t.Logf("gitea log (%s):\n%s", filepath.Join(g.Dir, "gitea.log"), g.LogTail(80))
			}
		})
	}
	if err != nil {
		t.Fatalf("starting gitea: %v", err)
	}
	t.Logf("gitea %s up at %s in %v", bin, g.URL, time.Since(began).Round(time.Millisecond))
	return g
}

func start(bin, static, dir string) (*Gitea, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	g := &Gitea{
		URL:      "http://127.0.0.1:" + strconv.Itoa(port),
		User:     "gitaso",
		Password: "gitaso-" + randHex(8),
		Dir:      dir,
		Bin:      bin,
		conf:     filepath.Join(dir, "custom", "conf", "app.ini"),
		client:   &http.Client{Timeout: 30 * time.Second},
	}
	if err := os.MkdirAll(filepath.Dir(g.conf), 0o755); err != nil {
		return nil, fmt.Errorf("work dir: %w", err)
	}
	if err := os.WriteFile(g.conf, []byte(appINI(dir, static, port)), 0o600); err != nil {
		return nil, fmt.Errorf("writing app.ini: %w", err)
	}
	g.env = append(os.Environ(),
		"GITEA_WORK_DIR="+dir,
		"GITEA_CUSTOM="+filepath.Join(dir, "custom"),
		"HOME="+filepath.Join(dir, "home"),
	)
	if _, err := g.run("migrate"); err != nil {
		return nil, err
	}
	if _, err := g.run("admin", "user", "create", "--admin", "--username", g.User, "--password", g.Password,
		"--email", g.User+"@example.invalid", "--must-change-password=false"); err != nil {
		return nil, err
	}
	out, err := g.run("admin", "user", "generate-access-token", "--username", g.User, "--token-name", "gitaso",
		"--scopes", "all", "--raw")
	if err != nil {
		return nil, err
	}
	if g.Token = regexp.MustCompile(`(?m)^[0-9a-f]{40}$`).FindString(out); g.Token == "" {
		return nil, fmt.Errorf("gitea admin user generate-access-token printed no token: %q", out)
	}

	logf, err := os.Create(filepath.Join(dir, "gitea.log"))
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	g.cmd = exec.Command(bin, "web", "--config", g.conf, "--work-path", dir)
	g.cmd.Dir, g.cmd.Env, g.cmd.Stdout, g.cmd.Stderr = dir, g.env, logf, logf
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := g.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("gitea web: %w", err)
	}
	g.done = make(chan struct{})
	go func() {
		g.waitErr = g.cmd.Wait()
		logf.Close()
		close(g.done)
	}()
	if err := g.waitHealthy(60 * time.Second); err != nil {
		return g, err
	}
	return g, nil
}

// run runs a gitea subcommand against the server's app.ini and returns its
// standard output.
func (g *Gitea) run(args ...string) (string, error) {
	args = append(args, "--config", g.conf, "--work-path", g.Dir)
	cmd := exec.Command(g.Bin, args...)
	cmd.Dir, cmd.Env = g.Dir, g.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("gitea %s: %w\n%s%s", strings.Join(args[:min(3, len(args))], " "), err,
			stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func (g *Gitea) waitHealthy(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-g.done:
			return fmt.Errorf("gitea web exited before it was healthy: %v\n%s", g.waitErr, g.LogTail(40))
		default:
		}
		resp, err := g.client.Get(g.URL + "/api/healthz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/api/healthz: %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gitea not healthy after %v: %w\n%s", limit, err, g.LogTail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s). It is safe to call
// more than once; Start registers it with t.Cleanup.
func (g *Gitea) Stop() {
	g.stopOnce.Do(func() {
		if g.cmd == nil || g.cmd.Process == nil {
			return
		}
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-g.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
			<-g.done
		}
	})
}

// LogTail returns the last n lines of the server's log.
func (g *Gitea) LogTail(n int) string {
	b, err := os.ReadFile(filepath.Join(g.Dir, "gitea.log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// APIError is a Gitea API response outside 2xx.
type APIError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), strings.TrimSpace(e.Body))
}

// Do calls the REST API as the admin user (token auth): path is relative to
// /api/v1 (e.g. "/repos/gitaso/app/pulls") unless it starts with /api/. A
// non-nil in is sent as JSON; a non-nil out is decoded from the response. A
// status outside 2xx is an *APIError.
func (g *Gitea) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encoding request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	u := g.URL + "/api/v1" + path
	if strings.HasPrefix(path, "/api/") {
		u = g.URL + path
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "token "+g.Token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading response: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &APIError{Method: method, Path: path, Status: resp.StatusCode, Body: string(b)}
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decoding response: %w", method, path, err)
		}
	}
	return nil
}

// API is Do that fails the test on an error.
func (g *Gitea) API(t testing.TB, method, path string, in, out any) {
	t.Helper()
	if err := g.Do(context.Background(), method, path, in, out); err != nil {
		t.Fatal(err)
	}
}

// Repo is a repository as the API returns it (the fields tests need).
type Repo struct {
	ID            int64  `json:"id"`
	Name          string `json:"name"`
	FullName      string `json:"full_name"`
	CloneURL      string `json:"clone_url"`
	HTMLURL       string `json:"html_url"`
	DefaultBranch string `json:"default_branch"`
}

// fullName qualifies a bare repository name with the admin user.
func (g *Gitea) fullName(repo string) string {
	if strings.Contains(repo, "/") {
		return repo
	}
	return g.User + "/" + repo
}

// CreateRepo creates a repository owned by the admin user, initialised with a
// README on its default branch main.
func (g *Gitea) CreateRepo(t testing.TB, name string) Repo {
	t.Helper()
	var r Repo
	g.API(t, http.MethodPost, "/user/repos", map[string]any{
		"name": name, "auto_init": true, "default_branch": "main", "readme": "Default", "private": false,
	}, &r)
	return r
}

// Push commits files (path → content, written over a clone of branch or, when
// branch does not exist yet, of the default branch) with message msg and
// pushes them to branch over HTTP with basic auth (user and token). repo is
// "name" (the admin user's) or "owner/name". It returns the new commit's SHA.
func (g *Gitea) Push(t testing.TB, repo string, files map[string]string, branch, msg string) string {
	t.Helper()
	sha, err := g.push(t.TempDir(), repo, files, branch, msg)
	if err != nil {
		t.Fatalf("push to %s %s: %v", g.fullName(repo), branch, err)
	}
	return sha
}

func (g *Gitea) push(dir, repo string, files map[string]string, branch, msg string) (string, error) {
	auth := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(g.User+":"+g.Token))
	git := func(args ...string) (string, error) {
		args = append([]string{"-c", "http.extraHeader=" + auth, "-c", "user.name=gitaso test",
			"-c", "user.email=gitaso@example.invalid", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %w\n%s", args[len(args)-1], err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := git("clone", "--quiet", g.URL+"/"+g.fullName(repo)+".git", "."); err != nil {
		return "", err
	}
	remote, err := git("ls-remote", "--heads", "origin", "refs/heads/"+branch)
	if err != nil {
		return "", err
	}
	if remote != "" {
		_, err = git("checkout", "--quiet", "-B", branch, "origin/"+branch)
	} else {
		_, err = git("checkout", "--quiet", "-B", branch)
	}
	if err != nil {
		return "", err
	}
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", fmt.Errorf("writing %s: %w", p, err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", fmt.Errorf("writing %s: %w", p, err)
		}
	}
	if _, err := git("add", "--all"); err != nil {
		return "", err
	}
	if _, err := git("commit", "--quiet", "--allow-empty", "-m", msg); err != nil {
		return "", err
	}
	if _, err := git("push", "--quiet", "origin", "HEAD:refs/heads/"+branch); err != nil {
		return "", err
	}
	return git("rev-parse", "HEAD")
}

// OpenPR opens a pull request from head into base and returns its number.
func (g *Gitea) OpenPR(t testing.TB, repo, head, base, title string) int {
	t.Helper()
	var pr struct {
		Number int `json:"number"`
	}
	g.API(t, http.MethodPost, "/repos/"+g.fullName(repo)+"/pulls",
		map[string]any{"head": head, "base": base, "title": title}, &pr)
	if pr.Number == 0 {
		t.Fatalf("opening a pull request %s → %s in %s: no number in the response", head, base, g.fullName(repo))
	}
	return pr.Number
}

// AddWebhook registers a Gitea-type webhook (JSON, signed with secret in
// X-Gitea-Signature) for events (default pull_request and push) on repo and
// returns its id. The server delivers to any host (ALLOWED_HOST_LIST=*), so
// an httptest.Server works.
func (g *Gitea) AddWebhook(t testing.TB, repo, url, secret string, events ...string) int64 {
	t.Helper()
	if len(events) == 0 {
		events = []string{"pull_request", "push"}
	}
	var hook struct {
		ID int64 `json:"id"`
	}
	g.API(t, http.MethodPost, "/repos/"+g.fullName(repo)+"/hooks", map[string]any{
		"type":   "gitea",
		"active": true,
		"events": events,
		"config": map[string]string{"url": url, "content_type": "json", "secret": secret},
	}, &hook)
	return hook.ID
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// appINI is the server's configuration: installed, SQLite in dir, HTTP only
// on 127.0.0.1:port, no SSH, mail, indexers, cron, actions or outgoing calls
// other than webhooks (to any host), in-memory queues, cache and sessions.
// (Gravatar is off by default in 1.26, so avatars make no outgoing calls.)
func appINI(dir, static string, port int) string {
	runUser := "gitaso"
	if u, err := user.Current(); err == nil {
		runUser = u.Username
	}
	root := ""
	if os.Getuid() == 0 {
		// Gitea refuses to run as root unless told to; CI containers run as root.
		root = "I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true\n"
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	return fmt.Sprintf(`APP_NAME = gitaso forgetest
RUN_MODE = prod
RUN_USER = %[1]s
WORK_PATH = %[2]s
%[3]s
[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[4]d
ROOT_URL = %[5]s
LOCAL_ROOT_URL = %[5]s
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
APP_DATA_PATH = %[2]s/data
STATIC_ROOT_PATH = %[6]s

[database]
DB_TYPE = sqlite3
PATH = %[2]s/data/gitea.db
SQLITE_JOURNAL_MODE = WAL
LOG_SQL = false

[repository]
ROOT = %[2]s/repos
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = %[7]s
INTERNAL_TOKEN = %[8]s

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false
ENABLE_NOTIFY_MAIL = false

[mailer]
ENABLED = false

[webhook]
ALLOWED_HOST_LIST = *
DELIVER_TIMEOUT = 10
SKIP_TLS_VERIFY = true

[queue]
TYPE = channel

[cache]
ADAPTER = memory

[session]
PROVIDER = memory

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false

[log]
MODE = console
LEVEL = Info
ROOT_PATH = %[2]s/log
`, runUser, dir, root, port, url, static, randHex(32), randHex(32))
}
