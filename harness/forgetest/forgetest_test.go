package forgetest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

type delivery struct {
	event, signature string
	body             []byte
}

// TestGiteaWholePath drives a real Gitea through what gitaso does with a
// forge: push a branch, open a pull request, receive its webhook, comment and
// edit the comment, post a commit status, and read each back.
func TestGiteaWholePath(t *testing.T) {
	g := Start(t)

	const secret = "s3cret"
	deliveries := make(chan delivery, 64)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		deliveries <- delivery{event: r.Header.Get("X-Gitea-Event"), signature: r.Header.Get("X-Gitea-Signature"), body: b}
	}))
	defer hook.Close()

	repo := g.CreateRepo(t, "app")
	if repo.FullName != "gitaso/app" || repo.DefaultBranch != "main" {
		t.Fatalf("created repo %+v, want gitaso/app on main", repo)
	}
	g.Push(t, "app", map[string]string{"gitaso.yaml": "version: 1\n"}, "main", "add gitaso.yaml")
	g.AddWebhook(t, "app", hook.URL, secret)
	head := g.Push(t, "app", map[string]string{"infra/main.yaml": "kind: ResourceGroup\n"}, "feature", "add a resource group")

	var branch struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	g.API(t, http.MethodGet, "/repos/gitaso/app/branches/feature", nil, &branch)
	if branch.Commit.ID != head {
		t.Fatalf("branch feature at %s, pushed %s", branch.Commit.ID, head)
	}

	number := g.OpenPR(t, "app", "feature", "main", "Add a resource group")

	// The deliveries: the push of feature and the pull request's opening. (Gitea handles pushes
	// asynchronously, so the push of main, before the hook existed, may be delivered as well.)
	timeout := time.After(30 * time.Second)
	for pushed, opened := false, false; !pushed || !opened; {
		var d delivery
		select {
		case d = <-deliveries:
		case <-timeout:
			t.Fatalf("within 30s: push of feature delivered %v, pull_request delivered %v", pushed, opened)
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(d.body)
		if want := hex.EncodeToString(mac.Sum(nil)); d.signature != want {
			t.Errorf("%s delivery signed %q, want %q", d.event, d.signature, want)
		}
		var p struct {
			Ref         string `json:"ref"`
			After       string `json:"after"`
			Action      string `json:"action"`
			Number      int    `json:"number"`
			PullRequest struct {
				Head struct {
					Sha string `json:"sha"`
				} `json:"head"`
			} `json:"pull_request"`
		}
		if err := json.Unmarshal(d.body, &p); err != nil {
			t.Fatalf("%s delivery: %v\n%s", d.event, err, d.body)
		}
		switch d.event {
		case "push":
			if p.Ref == "refs/heads/feature" {
				if p.After != head {
					t.Fatalf("push delivery for feature: after %s, want %s", p.After, head)
				}
				pushed = true
			}
		case "pull_request":
			if p.Action != "opened" || p.Number != number || p.PullRequest.Head.Sha != head {
				t.Fatalf("pull_request delivery: action %q number %d head %s, want opened %d %s",
					p.Action, p.Number, p.PullRequest.Head.Sha, number, head)
			}
			opened = true
		default:
			t.Fatalf("unexpected %q delivery: %s", d.event, d.body)
		}
	}

	// A comment created, then updated in place.
	issue := "/repos/gitaso/app/issues/"
	var c struct {
		ID   int64  `json:"id"`
		Body string `json:"body"`
	}
	g.API(t, http.MethodPost, issue+strconv.Itoa(number)+"/comments", map[string]string{"body": "plan: 1 to add"}, &c)
	g.API(t, http.MethodPatch, issue+"comments/"+strconv.FormatInt(c.ID, 10), map[string]string{"body": "plan: 2 to add"}, nil)
	var comments []struct {
		ID   int64  `json:"id"`
		Body string `json:"body"`
	}
	g.API(t, http.MethodGet, issue+strconv.Itoa(number)+"/comments", nil, &comments)
	if len(comments) != 1 || comments[0].ID != c.ID || comments[0].Body != "plan: 2 to add" {
		t.Fatalf("comments %+v, want one (%d) reading %q", comments, c.ID, "plan: 2 to add")
	}

	// A commit status on the head, read back as the combined status.
	g.API(t, http.MethodPost, "/repos/gitaso/app/statuses/"+head, map[string]string{
		"state": "success", "context": "gitaso/plan", "description": "2 to add", "target_url": "http://127.0.0.1/plan",
	}, nil)
	var combined struct {
		State    string `json:"state"`
		SHA      string `json:"sha"`
		Statuses []struct {
			Context     string `json:"context"`
			Status      string `json:"status"`
			Description string `json:"description"`
		} `json:"statuses"`
	}
	g.API(t, http.MethodGet, "/repos/gitaso/app/commits/feature/status", nil, &combined)
	if combined.State != "success" || combined.SHA != head || len(combined.Statuses) != 1 ||
		combined.Statuses[0].Context != "gitaso/plan" || combined.Statuses[0].Status != "success" {
		t.Fatalf("combined status %+v, want success from gitaso/plan on %s", combined, head)
	}
}

func TestVersionLess(t *testing.T) {
	if !versionLess("/c/gitea-v1.9.0/gitea", "/c/gitea-v1.26.0/gitea") ||
		versionLess("/c/gitea-v1.27.3/gitea", "/c/gitea-v1.26.0/gitea") {
		t.Fatal("versionLess does not order gitea-v1.9.0 < gitea-v1.26.0 < gitea-v1.27.3")
	}
}
