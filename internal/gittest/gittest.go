package gittest

import (
	"bytes"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one request the server answered.
type Request struct {
	Method        string
	Path          string // e.g. "/platform.git/info/refs"
	Query         string
	Status        int
	RequestBody   []byte // first 64 KiB of the request body
	ResponseBytes int64
}

// IsUploadPack reports whether the request transferred objects (a POST to
// git-upload-pack), as opposed to listing refs.
func (r Request) IsUploadPack() bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/git-upload-pack")
}

// Server serves bare repositories over HTTPS (or HTTP).
type Server struct {
	t        testing.TB
	git      string
	root     string
	home     string
	srv      *httptest.Server
	user     string
	password string
	plain    bool

	mu    sync.Mutex
	reqs  []Request
	fault Fault
	// released is closed when the test ends: requests held by FaultHang
	// return then, so that the server can close.
	released chan struct{}
}

// Fault is how the server misbehaves (SetFault).
type Fault int

const (
	// FaultNone serves normally.
	FaultNone Fault = iota
	// FaultRefuse answers every request 503 Service Unavailable, as a Git
	// host in an outage does.
	FaultRefuse
	// FaultHang accepts every request and never answers it: each is held
	// until its client gives up or the test ends (clearing the fault
	// serves the requests that come after).
	FaultHang
)

// SetFault makes the server misbehave from the next request on; FaultNone
// serves normally again.
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	s.fault = f
	s.mu.Unlock()
}

// Option configures a Server.
type Option func(*Server)

// WithBasicAuth requires HTTP basic auth with these credentials.
func WithBasicAuth(user, password string) Option {
	return func(s *Server) { s.user, s.password = user, password }
}

// WithPlainHTTP serves http:// instead of https://.
func WithPlainHTTP() Option { return func(s *Server) { s.plain = true } }

// NewServer starts a server that is closed when the test ends. It skips the
// test when git or git-http-backend is missing.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: skipping tests that need a real Git server")
	}
	out, err := exec.Command(gitBin, "--exec-path").Output()
	if err != nil {
		t.Skipf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend not found: %v", err)
	}
	s := &Server{t: t, git: gitBin, root: t.TempDir(), home: t.TempDir(), released: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	cgiHandler := &cgi.Handler{
		Path: backend,
		Root: "/",
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"HOME=" + s.home,
			"GIT_CONFIG_NOSYSTEM=1",
		},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			all, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(all))
			body = all
			if len(body) > 64<<10 {
				body = body[:64<<10]
			}
		}
		s.mu.Lock()
		fault := s.fault
		s.mu.Unlock()
		switch fault {
		case FaultHang:
			select {
			case <-r.Context().Done():
			case <-s.released:
			}
			return
		case FaultRefuse:
			http.Error(w, "service unavailable", http.StatusServiceUnavailable)
			return
		}
		cw := &countingWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			s.mu.Lock()
			s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
				Status: cw.status, RequestBody: body, ResponseBytes: cw.n})
			s.mu.Unlock()
		}()
		if s.user != "" || s.password != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != s.user || p != s.password {
				cw.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
				http.Error(cw, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		cgiHandler.ServeHTTP(cw, r)
	})
	if s.plain {
		s.srv = httptest.NewServer(h)
	} else {
		s.srv = httptest.NewTLSServer(h)
	}
	t.Cleanup(s.srv.Close)
	t.Cleanup(func() { close(s.released) }) // first: Close waits for held requests
	return s
}

// Silent is a TCP server that accepts connections and never answers: not
// a byte, not a close. It returns its address ("127.0.0.1:40123"), to be
// used as http://ADDR/x.git or git://ADDR/x.git; it stops when the test
// ends.
func Silent(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gittest: %v", err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (c *countingWriter) WriteHeader(code int) {
	c.status = code
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// URL is the server's base URL.
func (s *Server) URL() string { return s.srv.URL }

// CABundle is the PEM certificate that https clients must trust (nil for
// plain HTTP).
func (s *Server) CABundle() []byte {
	if s.plain {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
}

// Client is an http.Client that trusts the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Requests returns every request answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// ResetRequests forgets the request log.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	s.reqs = nil
	s.mu.Unlock()
}

// Repo is a bare repository on the server plus a work clone to commit from.
type Repo struct {
	s      *Server
	name   string
	bare   string
	work   string
	branch string
}

// CreateRepo creates an empty bare repository name.git with branch "main".
func (s *Server) CreateRepo(name string) *Repo {
	s.t.Helper()
	r := &Repo{s: s, name: name, bare: filepath.Join(s.root, name+".git"), work: filepath.Join(s.t.TempDir(), name), branch: "main"}
	s.run("", "init", "-q", "--bare", "-b", r.branch, r.bare)
	s.run("", "init", "-q", "-b", r.branch, r.work)
	s.run(r.work, "remote", "add", "origin", r.bare)
	return r
}

// URL is the repository's clone URL on the server.
func (r *Repo) URL() string { return r.s.URL() + "/" + r.name + ".git" }

// Dir is the bare repository's directory (for file:// or local-path clones).
func (r *Repo) Dir() string { return r.bare }

// Branch is the branch Commit pushes to.
func (r *Repo) Branch() string { return r.branch }

// Work is the work clone's directory, which Commit commits from (a
// directory source can read it).
func (r *Repo) Work() string { return r.work }

// Link makes the slash path link of the work clone a symlink to target,
// replacing what was there; the next Commit commits it.
func (r *Repo) Link(link, target string) {
	r.s.t.Helper()
	full := filepath.Join(r.work, filepath.FromSlash(link))
	if err := os.RemoveAll(full); err != nil {
		r.s.t.Fatalf("gittest: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.s.t.Fatalf("gittest: %v", err)
	}
	if err := os.Symlink(target, full); err != nil {
		r.s.t.Fatalf("gittest: %v", err)
	}
}

// Commit writes files (slash paths relative to the repository root), deletes
// the paths in deleted, commits everything with msg, pushes to the bare
// repository and returns the new commit's full SHA.
func (r *Repo) Commit(files map[string]string, deleted []string, msg string) string {
	r.s.t.Helper()
	for p, content := range files {
		full := filepath.Join(r.work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.s.t.Fatalf("gittest: %v", err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			r.s.t.Fatalf("gittest: %v", err)
		}
	}
	for _, p := range deleted {
		if err := os.RemoveAll(filepath.Join(r.work, filepath.FromSlash(p))); err != nil {
			r.s.t.Fatalf("gittest: %v", err)
		}
	}
	r.s.run(r.work, "add", "-A")
	r.s.run(r.work, "commit", "-q", "--allow-empty", "-m", msg)
	r.s.run(r.work, "push", "-q", "origin", "HEAD:refs/heads/"+r.branch)
	return strings.TrimSpace(r.s.run(r.work, "rev-parse", "HEAD"))
}

// run runs git in dir with a clean, isolated configuration.
func (s *Server) run(dir string, args ...string) string {
	s.t.Helper()
	cmd := exec.Command(s.git, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HOME="+s.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=gittest", "GIT_AUTHOR_EMAIL=gittest@example.invalid",
		"GIT_COMMITTER_NAME=gittest", "GIT_COMMITTER_EMAIL=gittest@example.invalid",
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("gittest: git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// StartDaemon serves the same repositories over git:// with `git daemon`
// (read-only) and returns the base URL, e.g. "git://127.0.0.1:40123". The
// daemon is stopped when the test ends.
func (s *Server) StartDaemon() string {
	s.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatalf("gittest: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(s.git, "daemon", "--reuseaddr", "--export-all", "--informative-errors",
		"--listen=127.0.0.1", "--port="+strconv.Itoa(port), "--base-path="+s.root, s.root)
	cmd.Env = append(os.Environ(), "HOME="+s.home, "GIT_CONFIG_NOSYSTEM=1")
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("gittest: git daemon: %v", err)
	}
	s.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "git://" + addr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("gittest: git daemon did not start on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// DaemonURL is the repository's git:// URL under a daemon base URL.
func (r *Repo) DaemonURL(base string) string { return base + "/" + r.name + ".git" }
