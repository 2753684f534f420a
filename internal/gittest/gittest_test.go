package gittest

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// clone runs the real git client against the server and returns its output
// and error.
func clone(t *testing.T, s *Server, rawURL, user, pass string) (string, string, error) {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, s.CABundle(), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		u.User = url.UserPassword(user, pass)
	}
	dst := filepath.Join(t.TempDir(), "clone")
	cmd := exec.Command("git", "clone", "-q", "--depth", "1", u.String(), dst)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_SSL_CAINFO="+ca, "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return dst, string(out), err
}

func TestServerServesCommits(t *testing.T) {
	s := NewServer(t, WithBasicAuth("alice", "s3cret"))
	r := s.CreateRepo("platform")
	first := r.Commit(map[string]string{"a/rg.yaml": "kind: ResourceGroup\n", "b.yaml": "x: 1\n"}, nil, "first")
	second := r.Commit(map[string]string{"c.yaml": "y: 2\n"}, []string{"b.yaml"}, "second")
	if len(first) != 40 || len(second) != 40 || first == second {
		t.Fatalf("commit SHAs: %q, %q", first, second)
	}

	dst, out, err := clone(t, s, r.URL(), "alice", "s3cret")
	if err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "-C", dst, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(head)); got != second {
		t.Errorf("cloned HEAD = %s, want %s", got, second)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "a", "rg.yaml")); err != nil || string(b) != "kind: ResourceGroup\n" {
		t.Errorf("a/rg.yaml = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "b.yaml")); !os.IsNotExist(err) {
		t.Errorf("b.yaml should be deleted in the second commit, stat: %v", err)
	}

	var uploads int
	for _, req := range s.Requests() {
		if req.IsUploadPack() {
			uploads++
			if req.Status != 200 || req.ResponseBytes == 0 {
				t.Errorf("upload-pack request: status %d, %d bytes", req.Status, req.ResponseBytes)
			}
		}
	}
	if uploads == 0 {
		t.Errorf("request log has no git-upload-pack POST: %+v", s.Requests())
	}
}

func TestServerRefusesWrongPassword(t *testing.T) {
	s := NewServer(t, WithBasicAuth("alice", "s3cret"))
	r := s.CreateRepo("platform")
	r.Commit(map[string]string{"a.yaml": "a: 1\n"}, nil, "first")
	_, out, err := clone(t, s, r.URL(), "alice", "wrong")
	if err == nil {
		t.Fatalf("clone with a wrong password succeeded:\n%s", out)
	}
	reqs := s.Requests()
	if len(reqs) == 0 || reqs[len(reqs)-1].Status != 401 {
		t.Errorf("last request should be a 401: %+v", reqs)
	}
}

func TestDaemon(t *testing.T) {
	s := NewServer(t)
	r := s.CreateRepo("platform")
	sha := r.Commit(map[string]string{"a.yaml": "a: 1\n"}, nil, "first")
	base := s.StartDaemon()
	out, err := exec.Command("git", "ls-remote", r.DaemonURL(base), "refs/heads/main").CombinedOutput()
	if err != nil {
		t.Fatalf("ls-remote: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), sha) {
		t.Errorf("ls-remote = %q, want %s", out, sha)
	}
}
