package forge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/forge"
	"github.com/gitaso/gitaso/harness/forgetest"
	"github.com/gitaso/gitaso/record"
)

// commentAs posts a comment on pull request pr as user (Gitea's Sudo header
// lets the admin token act for another user).
func commentAs(t *testing.T, g *forgetest.Gitea, repo string, pr int, user, body string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"body": body})
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/v1/repos/%s/issues/%d/comments", g.URL, repo, pr), bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
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

// TestGiteaApprovals runs approvals from a pull request against a real
// Gitea: a collaborator with write approves the held plan by its digest; a
// reader's approval, a command naming no plan and one naming another plan
// are refused; each is answered once in the pull request, and the audit
// trail gets each. The pull request of the merge commit is found, and the
// held comment is posted once per plan.
func TestGiteaApprovals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Gitea")
	}
	g := forgetest.Start(t)
	repo := g.CreateRepo(t, "infra")
	g.Push(t, "infra", map[string]string{"ops/rg.yaml": "# removed resources\n"}, "cleanup", "delete the team resources")
	pr := g.OpenPR(t, "infra", "cleanup", "main", "cleanup")
	for _, u := range []struct{ name, perm string }{{"writer", "write"}, {"reader", "read"}} {
		g.API(t, http.MethodPost, "/admin/users", map[string]any{"username": u.name, "email": u.name + "@example.invalid",
			"password": "pw-" + u.name + "-0123456789", "must_change_password": false}, nil)
		g.API(t, http.MethodPut, "/repos/"+repo.FullName+"/collaborators/"+u.name, map[string]string{"permission": u.perm}, nil)
	}
	const plan = "0123456789abcdef"
	held := forge.Held{Revision: "c0ffee0123456789c0ffee0123456789c0ffee01", Plan: plan, Deletions: 2, Namespaces: []string{"team-a", "team-b"}}
	commentAs(t, g, repo.FullName, pr, "reader", "/gitaso approve "+plan)
	commentAs(t, g, repo.FullName, pr, "writer", "/gitaso approve")
	commentAs(t, g, repo.FullName, pr, "writer", "/gitaso approve ffffffffffffffff")
	commentAs(t, g, repo.FullName, pr, "writer", "Looks right to me.\n/gitaso approve "+plan+"\n")
	commentAs(t, g, repo.FullName, pr, "reader", "just a comment")

	f, err := forge.New(forge.Options{Kind: "gitea", BaseURL: g.URL, Repo: repo.FullName, Token: g.Token})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var approvedBy []string
	var audit []record.AuditEvent
	opts := forge.ApprovalOptions{Held: held, Issuer: g.URL,
		Approve: func(_ context.Context, by access.Identity, p string) error {
			mu.Lock()
			defer mu.Unlock()
			approvedBy = append(approvedBy, by.String()+" "+p)
			return nil
		},
		Audit: func(_ context.Context, e record.AuditEvent) { mu.Lock(); audit = append(audit, e); mu.Unlock() },
	}
	ctx := context.Background()
	pull := forge.PullRequest{Number: pr, URL: repo.HTMLURL + fmt.Sprintf("/pulls/%d", pr)}
	res, err := forge.ProcessApprovals(ctx, f, pull, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Approved != 1 || res.Refused != 3 {
		t.Errorf("ProcessApprovals = %+v, want 1 approved, 3 refused", res)
	}
	if want := []string{"forge gitea writer " + plan}; !slices.Equal(approvedBy, want) {
		t.Errorf("approved by %v, want %v", approvedBy, want)
	}
	var outcomes []string
	for _, e := range audit {
		outcomes = append(outcomes, e.Subject+" "+e.Outcome)
		if e.Revision != held.Revision || e.From == "" {
			t.Errorf("audit event without revision or origin: %+v", e)
		}
		if strings.Contains(fmt.Sprint(e), g.Token) {
			t.Error("the forge token is in the audit event")
		}
	}
	if want := []string{"reader refused", "writer refused", "writer refused", "writer allowed"}; !slices.Equal(outcomes, want) {
		t.Errorf("audit outcomes %v, want %v", outcomes, want)
	}
	// The answers are in the pull request, one per command.
	ap := f.(forge.Approver)
	cs, err := ap.Comments(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	var replies []string
	for _, c := range cs {
		if strings.Contains(c.Body, "gitaso-approval-reply") {
			replies = append(replies, c.Body)
		}
	}
	wantIn := []string{
		`@reader: not approved: gitea says reader's permission on the repository is "read"; approving needs write`,
		"@writer: not approved: name the plan you approve: `/gitaso approve " + plan + "`",
		"@writer: not approved: plan ffffffffffffffff is not the held plan",
		"Approved by @writer (write permission): plan " + plan,
	}
	if len(replies) != len(wantIn) {
		t.Fatalf("%d replies, want %d:\n%s", len(replies), len(wantIn), strings.Join(replies, "\n---\n"))
	}
	for i, w := range wantIn {
		if !strings.Contains(replies[i], w) {
			t.Errorf("reply %d = %q, want it to say %q", i, replies[i], w)
		}
	}
	// Answered once: a second pass does nothing.
	if res, err := forge.ProcessApprovals(ctx, f, pull, opts); err != nil || res.Approved+res.Refused != 0 {
		t.Errorf("second pass: %+v, %v; want nothing done", res, err)
	}
	// The held comment is posted once per plan.
	for range 2 {
		if err := forge.PostHeld(ctx, f, pr, held, "it deletes 2 resources"); err != nil {
			t.Fatal(err)
		}
	}
	cs, _ = ap.Comments(ctx, pr)
	n := 0
	for _, c := range cs {
		if strings.Contains(c.Body, "gitaso-held "+plan) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d held comments for one plan, want 1", n)
	}
	// Merged, the pull request is found from its merge commit.
	g.API(t, http.MethodPost, fmt.Sprintf("/repos/%s/pulls/%d/merge", repo.FullName, pr), map[string]any{"Do": "merge"}, nil)
	var merged struct {
		MergeCommitSHA string `json:"merge_commit_sha"`
	}
	g.API(t, http.MethodGet, fmt.Sprintf("/repos/%s/pulls/%d", repo.FullName, pr), nil, &merged)
	got, ok, err := ap.PullRequestOf(ctx, merged.MergeCommitSHA)
	if err != nil || !ok || got.Number != pr {
		t.Errorf("PullRequestOf(merge commit %s) = %+v, %v, %v; want pull request %d", merged.MergeCommitSHA, got, ok, err, pr)
	}
}
