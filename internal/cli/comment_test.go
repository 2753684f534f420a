package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gitaso/gitaso/internal/fixtures"
)

// ciVars are cleared so the tests see no CI system but the one they set.
var ciVars = []string{"GITHUB_ACTIONS", "GITEA_ACTIONS", "FORGEJO_ACTIONS", "GITLAB_CI", "TF_BUILD", "GITASO_FORGE_TOKEN",
	"GITHUB_TOKEN", "GITHUB_EVENT_PATH", "GITHUB_REF", "GITHUB_SHA", "GITHUB_REPOSITORY", "GITHUB_API_URL", "GITHUB_SERVER_URL", "GITHUB_RUN_ID",
	"CI_JOB_URL", "SYSTEM_COLLECTIONURI"}

func clearCI(t *testing.T) {
	for _, v := range ciVars {
		t.Setenv(v, "")
	}
}

// planJSON writes the offline plan of the onboarding fixture as plan -o json writes it.
func planJSON(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "team-a.yaml"), []byte(fixtures.Onboarding), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "plan", "--offline", "--subscription", "22222222-2222-2222-2222-222222222222", "--dir", dir, "-o", "json")
	if exitCode(err) != 2 {
		t.Fatalf("plan: %v\n%s", err, stderr)
	}
	f := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(f, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// fakeGitHub is the least of GitHub the command needs: issue comments and
// statuses, with the token checked.
type fakeGitHub struct {
	mu       sync.Mutex
	comments map[int]string
	statuses []map[string]any
	requests []string
}

func (g *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests = append(g.requests, r.Method+" "+r.URL.Path)
	if r.Header.Get("Authorization") != "Bearer tok-123" {
		http.Error(w, "bad credentials", http.StatusUnauthorized)
		return
	}
	var body map[string]any
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
	}
	switch {
	case r.Method == "GET" && r.URL.Path == "/api/v3/repos/acme/infra/issues/3/comments":
		var out []map[string]any
		for id, b := range g.comments {
			out = append(out, map[string]any{"id": id, "body": b, "html_url": fmt.Sprintf("https://ghe.example/acme/infra/pull/3#issuecomment-%d", id)})
		}
		_ = json.NewEncoder(w).Encode(out)
	case r.Method == "POST" && r.URL.Path == "/api/v3/repos/acme/infra/issues/3/comments":
		id := 100 + len(g.comments)
		g.comments[id] = body["body"].(string)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "body": body["body"], "html_url": fmt.Sprintf("https://ghe.example/acme/infra/pull/3#issuecomment-%d", id)})
	case r.Method == "PATCH" && strings.HasPrefix(r.URL.Path, "/api/v3/repos/acme/infra/issues/comments/"):
		var id int
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/api/v3/repos/acme/infra/issues/comments/"), &id)
		g.comments[id] = body["body"].(string)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "body": body["body"], "html_url": fmt.Sprintf("https://ghe.example/acme/infra/pull/3#issuecomment-%d", id)})
	case r.Method == "POST" && r.URL.Path == "/api/v3/repos/acme/infra/statuses/abc123":
		g.statuses = append(g.statuses, body)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("{}"))
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

func TestCommentPostsAndUpdates(t *testing.T) {
	clearCI(t)
	g := &fakeGitHub{comments: map[int]string{}}
	srv := httptest.NewServer(g)
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := planJSON(t)
	args := []string{"comment", "--plan", plan, "--forge", "github", "--forge-url", srv.URL, "--forge-repo", "acme/infra",
		"--pr", "3", "--sha", "abc123", "--token-file", tok}
	out, stderr, err := run(t, args...)
	if err != nil {
		t.Fatalf("comment: %v\n%s", err, stderr)
	}
	if !strings.HasPrefix(out, "https://ghe.example/acme/infra/pull/3#issuecomment-100") {
		t.Errorf("printed %q, want the comment's URL", out)
	}
	if strings.Contains(stderr, "tok-123") {
		t.Errorf("the token is in the log:\n%s", stderr)
	}
	// Again: the same comment is kept (no second comment).
	if _, stderr, err := run(t, args...); err != nil {
		t.Fatalf("comment again: %v\n%s", err, stderr)
	}
	if len(g.comments) != 1 {
		t.Fatalf("%d comments after two posts, want 1", len(g.comments))
	}
	body := g.comments[100]
	for _, want := range []string{"<!-- gitaso-plan part 1/1 -->", "to create", "<details><summary>Full plan</summary>"} {
		if !strings.Contains(body, want) {
			t.Errorf("comment lacks %q", want)
		}
	}
	if len(g.statuses) != 2 || g.statuses[0]["state"] != "success" || g.statuses[0]["context"] != "gitaso/plan" ||
		!strings.HasSuffix(g.statuses[0]["description"].(string), "to create") {
		t.Errorf("statuses: %v", g.statuses)
	}

	// A refused revision: a failing status with its first error.
	refused := filepath.Join(t.TempDir(), "plan.err")
	if err := os.WriteFile(refused, []byte("time=2025-01-01T00:00:00Z level=INFO msg=fetching\nteam-a.yaml:7: ResourceGroup platform/rg: spec.location: required\ngitaso: 1 error; nothing was applied\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refusedArgs := []string{"comment", "--plan", filepath.Join(t.TempDir(), "absent.json"), "--refused", refused,
		"--forge", "github", "--forge-url", srv.URL, "--forge-repo", "acme/infra", "--pr", "3", "--sha", "abc123", "--token-file", tok}
	if _, stderr, err := run(t, refusedArgs...); err != nil {
		t.Fatalf("comment --refused: %v\n%s", err, stderr)
	}
	last := g.statuses[len(g.statuses)-1]
	if last["state"] != "failure" || !strings.Contains(last["description"].(string), "spec.location: required") {
		t.Errorf("refused status: %v", last)
	}
	if !strings.Contains(g.comments[100], "revision refused") || strings.Contains(g.comments[100], "level=INFO") {
		t.Errorf("refused comment:\n%s", g.comments[100])
	}
}

func TestCommentDryRunFromCI(t *testing.T) {
	clearCI(t)
	event := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(event, []byte(`{"pull_request":{"number":12,"head":{"sha":"feedface"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_REPOSITORY", "acme/infra")
	t.Setenv("GITHUB_EVENT_PATH", event)
	t.Setenv("GITHUB_TOKEN", "ghs_secret")
	out, stderr, err := run(t, "comment", "--plan", planJSON(t), "--dry-run")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"forge github, pull request 12: 1 part(s)", "----- part 1/1:", "status on feedface: gitaso/plan \"success\""} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out[:min(len(out), 600)])
		}
	}
	if strings.Contains(out+stderr, "ghs_secret") {
		t.Error("the token was printed")
	}
	if _, _, err := run(t, "comment", "--dry-run"); err == nil || !strings.Contains(err.Error(), "nothing to post") {
		t.Errorf("no --plan: %v", err)
	}
}
