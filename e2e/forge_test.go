package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/harness/forgetest"
)

// TestAutoplanWithGitea runs the whole pull-request path against a real
// Gitea built from source: gitaso serve --autoplan follows main; a pull
// request is opened and Gitea's webhook makes gitaso plan it and post one
// sticky comment and a commit status; a push to the pull request updates
// that comment in place; closing it marks the comment outdated. Nothing of
// the pull request reaches Azure or the applied state.
func TestAutoplanWithGitea(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Gitea, the emulator and gitaso serve")
	}
	g := forgetest.Start(t)
	repo := g.CreateRepo(t, "infra")
	g.Push(t, "infra", map[string]string{"ops/base.yaml": rgWithTag("base-rg", "1")}, "main", "base")

	dir := t.TempDir()
	bin := filepath.Join(dir, "gitaso")
	if out, err := exec.Command("go", "build", "-tags", "kustomize_disable_go_plugin_support", "-o", bin, "../cmd/gitaso").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	env := startEmulator(t, bin, filepath.Join(dir, "emulator"), "https://oidc.gitaso.local/cluster-01/")
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokenFile, hookFile := write("forge-token", g.Token), write("hook-secret", "hook-s3cret")
	port := freePort(t)
	api := "http://127.0.0.1:" + port
	serve := exec.Command(bin, "serve", "--repo", repo.CloneURL, "--branch", "main", "--path", "ops",
		"--cache-dir", filepath.Join(dir, "cache"), "--state", filepath.Join(dir, "state.db"),
		"--listen", "127.0.0.1:"+port, "--interval", "1s", "--webhook-secret-file", hookFile,
		"--autoplan", "--autoplan-forge", "gitea", "--autoplan-forge-url", g.URL, "--autoplan-forge-repo", repo.FullName,
		"--autoplan-token-file", tokenFile, "--autoplan-interval", "1h")
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

	waitUntil := func(what string, limit time.Duration, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for time.Since(start) < limit {
			if cond() {
				return time.Since(start)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s\n--- serve.log ---\n%s\n--- gitea ---\n%s", what, logTail(), g.LogTail(40))
		return 0
	}
	getJSON := func(url string, out any) bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && json.Unmarshal(b, out) == nil
	}
	waitUntil("main applied", 60*time.Second, func() bool {
		var rs struct{ Items []struct{ Name string } }
		return getJSON(api+"/api/v1/resources", &rs) && len(rs.Items) == 1
	})

	// Gitea calls gitaso's webhook for pull-request events.
	g.AddWebhook(t, "infra", api+"/api/v1/webhook", "hook-s3cret", "pull_request")

	type comment struct {
		ID   int64  `json:"id"`
		Body string `json:"body"`
	}
	comments := func(pr int) []comment {
		var cs []comment
		if err := g.Do(t.Context(), http.MethodGet, fmt.Sprintf("/repos/%s/issues/%d/comments", repo.FullName, pr), nil, &cs); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	status := func(sha string) (state, desc string) {
		var ss []struct {
			ID          int64  `json:"id"`
			State       string `json:"status"`
			Description string `json:"description"`
			Context     string `json:"context"`
		}
		if err := g.Do(t.Context(), http.MethodGet, fmt.Sprintf("/repos/%s/commits/%s/statuses", repo.FullName, sha), nil, &ss); err != nil {
			t.Fatal(err)
		}
		var newest int64 // the list's order is not the posting order when two land in one second
		for _, s := range ss {
			if s.Context == "gitaso/plan" && s.ID > newest {
				newest, state, desc = s.ID, s.State, s.Description
			}
		}
		return state, desc
	}

	// A pull request: planned, commented, its status set.
	head := g.Push(t, "infra", map[string]string{"ops/pr.yaml": rgWithTag("pr-rg", "a")}, "feature", "a new group")
	opened := time.Now()
	pr := g.OpenPR(t, "infra", "feature", "main", "a new group")
	waitUntil("the plan comment", 60*time.Second, func() bool {
		cs := comments(pr)
		return len(cs) == 1 && strings.Contains(cs[0].Body, "ops/ResourceGroup/pr-rg")
	})
	toComment := time.Since(opened)
	first := comments(pr)[0]
	waitUntil("the status", 30*time.Second, func() bool { s, _ := status(head); return s == "success" })
	if _, d := status(head); d != "1 to create" {
		t.Errorf("status description %q, want the summary line", d)
	}

	// A push to the pull request: the same comment, edited.
	pushed := time.Now()
	head2 := g.Push(t, "infra", map[string]string{"ops/pr2.yaml": rgWithTag("pr2-rg", "b")}, "feature", "another group")
	waitUntil("the updated comment", 60*time.Second, func() bool {
		cs := comments(pr)
		return len(cs) == 1 && strings.Contains(cs[0].Body, "ops/ResourceGroup/pr2-rg")
	})
	toUpdate := time.Since(pushed)
	if cs := comments(pr); cs[0].ID != first.ID {
		t.Errorf("a new comment %d instead of editing %d", cs[0].ID, first.ID)
	}
	waitUntil("the new head's status", 30*time.Second, func() bool { _, d := status(head2); return d == "2 to create" })

	// Closed: the comment says it is outdated.
	if err := g.Do(t.Context(), http.MethodPatch, fmt.Sprintf("/repos/%s/pulls/%d", repo.FullName, pr), map[string]any{"state": "closed"}, nil); err != nil {
		t.Fatal(err)
	}
	waitUntil("the outdated mark", 60*time.Second, func() bool {
		cs := comments(pr)
		return len(cs) == 1 && strings.Contains(strings.ToLower(cs[0].Body), "outdated")
	})

	// The pull request's groups were planned, never applied.
	var rs struct{ Items []struct{ Name string } }
	if !getJSON(api+"/api/v1/resources", &rs) || len(rs.Items) != 1 || rs.Items[0].Name != "base-rg" {
		t.Errorf("applied resources %+v, want base-rg only", rs)
	}
	t.Logf("pull request opened → plan comment: %s; push → updated comment: %s", toComment.Round(time.Millisecond), toUpdate.Round(time.Millisecond))
}
