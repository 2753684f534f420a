package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/harness/forgetest"
)

// TestApproveFromPullRequestWithGitea runs an approval from a pull request
// end to end: gitaso serve --autoplan follows main with --max-deletions 1;
// a pull request that removes two resource groups is merged; gitaso holds
// the merge, finds its pull request and posts the held plan's digest there;
// a reader's "/gitaso approve <digest>" is refused, a writer's approves the
// plan, and gitaso deletes the two groups. The audit trail names both.
func TestApproveFromPullRequestWithGitea(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Gitea, the emulator and gitaso serve")
	}
	g := forgetest.Start(t)
	repo := g.CreateRepo(t, "infra")
	g.Push(t, "infra", map[string]string{"ops/keep.yaml": rgWithTag("keep-rg", "1"), "ops/a.yaml": rgWithTag("a-rg", "1"),
		"ops/b.yaml": rgWithTag("b-rg", "1")}, "main", "three groups")
	for _, u := range []struct{ name, perm string }{{"writer", "write"}, {"reader", "read"}} {
		g.API(t, http.MethodPost, "/admin/users", map[string]any{"username": u.name, "email": u.name + "@example.invalid",
			"password": "pw-" + u.name + "-0123456789", "must_change_password": false}, nil)
		g.API(t, http.MethodPut, "/repos/"+repo.FullName+"/collaborators/"+u.name, map[string]string{"permission": u.perm}, nil)
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "gitaso")
	if out, err := exec.Command("go", "build", "-tags", "kustomize_disable_go_plugin_support", "-o", bin, "../cmd/gitaso").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	env := startEmulator(t, bin, filepath.Join(dir, "emulator"), "https://oidc.gitaso.local/cluster-01/")
	tokenFile := filepath.Join(dir, "forge-token")
	if err := os.WriteFile(tokenFile, []byte(g.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	api := "http://127.0.0.1:" + port
	serve := exec.Command(bin, "serve", "--repo", repo.CloneURL, "--branch", "main", "--path", "ops",
		"--cache-dir", filepath.Join(dir, "cache"), "--state", filepath.Join(dir, "state.db"),
		"--listen", "127.0.0.1:"+port, "--interval", "1s", "--max-deletions", "1",
		"--autoplan", "--autoplan-forge", "gitea", "--autoplan-forge-url", g.URL, "--autoplan-forge-repo", repo.FullName,
		"--autoplan-token-file", tokenFile, "--autoplan-interval", "1s")
	serve.Env = os.Environ()
	for k, v := range env {
		serve.Env = append(serve.Env, k+"="+v)
	}
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	serve.Stdout, serve.Stderr = logFile, logFile
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Process.Kill(); _ = serve.Wait() })
	logTail := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	waitUntil := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		for start := time.Now(); time.Since(start) < limit; time.Sleep(100 * time.Millisecond) {
			if cond() {
				return
			}
		}
		t.Fatalf("timed out waiting for %s\n--- serve.log ---\n%s\n--- gitea ---\n%s", what, logTail(), g.LogTail(40))
	}
	getJSON := func(path string, out any) bool {
		resp, err := http.Get(api + path)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && json.Unmarshal(b, out) == nil
	}
	resources := func() int {
		var rs struct{ Items []struct{ Name string } }
		if !getJSON("/api/v1/resources", &rs) {
			return -1
		}
		return len(rs.Items)
	}
	waitUntil("main applied", 90*time.Second, func() bool { return resources() == 3 })

	// A pull request removes two groups and is merged: held.
	g.Push(t, "infra", map[string]string{"ops/a.yaml": "", "ops/b.yaml": ""}, "cleanup", "remove a and b")
	pr := g.OpenPR(t, "infra", "cleanup", "main", "remove a and b")
	g.API(t, http.MethodPost, fmt.Sprintf("/repos/%s/pulls/%d/merge", repo.FullName, pr), map[string]any{"Do": "merge"}, nil)
	type comment struct {
		Body string `json:"body"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	comments := func() []comment {
		var cs []comment
		if err := g.Do(t.Context(), http.MethodGet, fmt.Sprintf("/repos/%s/issues/%d/comments", repo.FullName, pr), nil, &cs); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	find := func(substr string) string {
		for _, c := range comments() {
			if strings.Contains(c.Body, substr) {
				return c.Body
			}
		}
		return ""
	}
	waitUntil("the held comment on the merged pull request", 90*time.Second, func() bool { return find("gitaso-held ") != "" })
	digest := regexp.MustCompile(`gitaso-held ([0-9a-f]{16})`).FindStringSubmatch(find("gitaso-held "))[1]

	post := func(user, body string) {
		b, _ := json.Marshal(map[string]string{"body": body})
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/v1/repos/%s/issues/%d/comments", g.URL, repo.FullName, pr), bytes.NewReader(b))
		req.Header.Set("Authorization", "token "+g.Token)
		req.Header.Set("Sudo", user)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("comment as %s: %d", user, resp.StatusCode)
		}
	}
	post("reader", "/gitaso approve "+digest)
	waitUntil("the answer to the reader", 60*time.Second, func() bool { return find("@reader: not approved") != "" })
	if n := resources(); n != 3 {
		t.Fatalf("%d resources after the reader's approval, want 3 (nothing deleted)", n)
	}
	post("writer", "/gitaso approve "+digest)
	waitUntil("the answer to the writer", 60*time.Second, func() bool { return find("Approved by @writer") != "" })
	waitUntil("the approved deletions", 90*time.Second, func() bool { return resources() == 1 })

	var audit struct {
		Items []struct{ Action, Outcome, Who, Plan, From string }
	}
	if !getJSON("/api/v1/audit", &audit) {
		t.Fatal("GET /api/v1/audit failed")
	}
	var got []string
	for _, e := range audit.Items {
		if e.Action == "approve" {
			got = append(got, e.Who+" "+e.Outcome+" "+e.Plan)
			if e.From == "" {
				t.Errorf("approval event without its origin: %+v", e)
			}
		}
	}
	want := []string{"forge gitea writer allowed " + digest, "forge gitea reader refused " + digest} // newest first
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("approvals in the audit trail:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(logTail(), g.Token) {
		t.Error("the forge token is in gitaso's log")
	}
}
