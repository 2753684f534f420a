package forge_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/forge"
)

// approveFake answers the approval calls of one forge as its published REST
// description says (testdata/KIND-approve-rest.json): every request is
// checked against the description (path, method, query, body,
// authentication) before it is answered. The pull request has comments by
// "writer" (may write) and "reader" (may not).
type approveFake struct {
	t      *testing.T
	kind   string
	desc   restDesc
	prefix string
	token  string
	srv    *httptest.Server

	mu       sync.Mutex
	comments []approveComment // of pull request 7, oldest first
	replies  []string
	calls    []string
}

type approveComment struct {
	id     int
	author string
	body   string
}

// fake users: login → (forge ID, may write)
var fakeUsers = map[string]struct {
	id    int
	write bool
}{"writer": {101, true}, "reader": {102, false}, "gitaso": {100, true}}

const (
	fakeMerge = "feedface0123456789feedface0123456789feed"
	fakePlan  = "0123456789abcdef"
)

func newApproveFake(t *testing.T, kind string) *approveFake {
	f := &approveFake{t: t, kind: kind, desc: loadDesc(t, kind+"-approve"), token: "s3cr3t-approve-" + kind}
	f.prefix = map[string]string{"github": "/api/v3", "gitlab": "/api/v4"}[kind]
	f.comments = []approveComment{
		{1, "reader", "/gitaso approve " + fakePlan},
		{2, "writer", "lgtm\n/gitaso approve " + fakePlan},
	}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *approveFake) options() forge.Options {
	o := forge.Options{Kind: f.kind, BaseURL: f.srv.URL, Token: f.token, HTTPClient: f.srv.Client(), Repo: "acme/infra"}
	switch f.kind {
	case "gitlab":
		o.Repo = "platform/infra"
	case "azuredevops":
		o.BaseURL, o.Repo = f.srv.URL+"/acme", "Platform/infra"
	}
	return o
}

func (f *approveFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), f.prefix)
	var op *restOp
	var params map[string]string
	for i := range f.desc.Operations {
		o := &f.desc.Operations[i]
		if p, m := match(o.Path, path); ok && m && o.Method == r.Method {
			op, params = o, p
			break
		}
	}
	if op == nil {
		f.t.Errorf("%s: %s %s is no operation of the description", f.kind, r.Method, r.URL.EscapedPath())
		http.Error(w, "no such operation", http.StatusNotFound)
		return
	}
	var errs []string
	auth := f.desc.Auth[0]
	want := f.token
	if auth.Basic {
		want = base64.StdEncoding.EncodeToString([]byte(":" + f.token))
	}
	if auth.Scheme != "" {
		want = auth.Scheme + " " + want
	}
	if r.Header.Get(auth.Header) != want {
		errs = append(errs, "no valid authentication")
	}
	q := r.URL.Query()
	for k, vs := range q {
		s, ok := op.Query[k]
		if !ok {
			errs = append(errs, fmt.Sprintf("unknown query parameter %q", k))
			continue
		}
		for _, v := range vs {
			errs = append(errs, s.queryValue(k, v)...)
		}
	}
	for _, k := range op.RequiredQuery {
		if !q.Has(k) {
			errs = append(errs, "query parameter "+k+" missing")
		}
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if op.Body != nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			errs = append(errs, "body: "+err.Error())
		} else {
			errs = append(errs, op.Body.validate(v, "body")...)
			body, _ = v.(map[string]any)
		}
	} else if len(bytes.TrimSpace(raw)) > 0 {
		errs = append(errs, "a body where the operation takes none")
	}
	if len(errs) > 0 {
		f.t.Errorf("%s %s (%s): %s", f.kind, op.ID, op.Source, strings.Join(errs, "; "))
		http.Error(w, strings.Join(errs, "; "), http.StatusUnprocessableEntity)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, op.ID)
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(op.Status)
		_ = json.NewEncoder(w).Encode(v)
	}
	userByID := func(id string) string {
		for name, u := range fakeUsers {
			if fmt.Sprint(u.id) == id {
				return name
			}
		}
		return ""
	}
	switch op.ID {
	case "issues/list-comments":
		var out []map[string]any
		for _, c := range f.comments {
			out = append(out, map[string]any{"id": c.id, "body": c.body, "html_url": fmt.Sprintf("https://github.example/acme/infra/pull/7#issuecomment-%d", c.id),
				"user": map[string]any{"login": c.author, "id": fakeUsers[c.author].id}})
		}
		reply(out)
	case "issues/create-comment", "create-merge-request-note":
		f.add(body["body"].(string))
		reply(map[string]any{"id": 900 + len(f.comments), "body": body["body"]})
	case "repos/get-collaborator-permission-level":
		u, ok := fakeUsers[params["username"]]
		if !ok {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		perm := map[bool]string{true: "write", false: "read"}[u.write]
		reply(map[string]any{"permission": perm, "role_name": perm, "user": map[string]any{"login": params["username"]}})
	case "repos/list-pull-requests-associated-with-commit":
		reply([]map[string]any{{"number": 7, "state": "closed", "merge_commit_sha": params["commit_sha"], "html_url": "https://github.example/acme/infra/pull/7",
			"head": map[string]any{"ref": "cleanup", "sha": "abc"}, "base": map[string]any{"ref": "main"}}})
	case "list-merge-request-notes":
		var out []map[string]any
		for _, c := range f.comments {
			out = append(out, map[string]any{"id": c.id, "body": c.body, "system": false,
				"author": map[string]any{"id": fakeUsers[c.author].id, "username": c.author}})
		}
		reply(out)
	case "get-single-mr":
		reply(map[string]any{"iid": 7, "web_url": "https://gitlab.example/platform/infra/-/merge_requests/7"})
	case "getApiV4ProjectsIdMembersAllUserId":
		name := userByID(params["user_id"])
		if name == "" {
			http.Error(w, `{"message":"404 Not found"}`, http.StatusNotFound)
			return
		}
		level := map[bool]int{true: 30, false: 20}[fakeUsers[name].write]
		reply(map[string]any{"id": fakeUsers[name].id, "username": name, "access_level": level, "state": "active"})
	case "getApiV4ProjectsIdRepositoryCommitsShaMergeRequests":
		reply([]map[string]any{{"iid": 7, "state": "merged", "merge_commit_sha": params["sha"], "source_branch": "cleanup", "target_branch": "main"}})
	case "Pull Request Threads - List":
		var threads []map[string]any
		for _, c := range f.comments {
			threads = append(threads, map[string]any{"id": c.id, "comments": []map[string]any{{"id": 1, "content": c.body, "commentType": "text",
				"author": map[string]any{"id": fmt.Sprintf("id-%d", fakeUsers[c.author].id), "uniqueName": c.author}}}})
		}
		reply(map[string]any{"value": threads, "count": len(threads)})
	case "Pull Request Thread Comments - Create":
		if body["parentCommentId"] == nil {
			f.t.Errorf("a reply without parentCommentId")
		}
		f.add(body["content"].(string))
		reply(map[string]any{"id": 2, "content": body["content"]})
	case "Identities - Read Identities":
		id := strings.TrimPrefix(q.Get("identityIds"), "id-")
		name := userByID(id)
		reply(map[string]any{"count": 1, "value": []map[string]any{{"id": q.Get("identityIds"), "descriptor": "Microsoft.TeamFoundation.Identity;S-1-" + name}}})
	case "Repositories - Get Repository":
		reply(map[string]any{"id": "repo-guid", "name": "infra", "project": map[string]any{"id": "project-guid"}})
	case "Access Control Lists - Query":
		desc := q.Get("descriptors")
		if params["securityNamespaceId"] != "2e9eb7ed-3c0a-47d4-87c1-0ffdd275fd87" || q.Get("token") != "repoV2/project-guid/repo-guid" || q.Get("includeExtendedInfo") != "true" {
			f.t.Errorf("ACL query for namespace %s token %s", params["securityNamespaceId"], q.Get("token"))
		}
		allow := 2 // read
		if fakeUsers[strings.TrimPrefix(desc, "Microsoft.TeamFoundation.Identity;S-1-")].write {
			allow |= 4 // contribute
		}
		reply(map[string]any{"count": 1, "value": []map[string]any{{"token": q.Get("token"),
			"acesDictionary": map[string]any{desc: map[string]any{"descriptor": desc, "allow": 0, "deny": 0, "extendedInfo": map[string]any{"effectiveAllow": allow}}}}}})
	case "Pull Requests - Get Pull Requests":
		reply(map[string]any{"count": 1, "value": []map[string]any{{"pullRequestId": 7, "status": "completed", "sourceRefName": "refs/heads/cleanup",
			"targetRefName": "refs/heads/main", "lastMergeCommit": map[string]any{"commitId": fakeMerge}}}})
	default:
		f.t.Errorf("%s: %s not answered by the fake", f.kind, op.ID)
	}
}

func (f *approveFake) add(body string) {
	f.replies = append(f.replies, body)
}

// TestApprovalsPerForge: on GitHub, GitLab and Azure DevOps (each checked
// against its published REST description), a writer's approval goes
// through and a reader's is refused, each answered; the pull request of the
// merge commit is found.
func TestApprovalsPerForge(t *testing.T) {
	for _, kind := range []string{"github", "gitlab", "azuredevops"} {
		t.Run(kind, func(t *testing.T) {
			f := newApproveFake(t, kind)
			fg, err := forge.New(f.options())
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			pr, ok, err := fg.(forge.Approver).PullRequestOf(ctx, fakeMerge)
			if err != nil || !ok || pr.Number != 7 {
				t.Fatalf("PullRequestOf = %+v, %v, %v", pr, ok, err)
			}
			var approved []string
			res, err := forge.ProcessApprovals(ctx, fg, pr, forge.ApprovalOptions{
				Held: forge.Held{Revision: fakeMerge, Plan: fakePlan, Deletions: 3, Namespaces: []string{"team-a"}},
				Approve: func(_ context.Context, by access.Identity, plan string) error {
					approved = append(approved, by.Subject+" "+plan)
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Approved != 1 || res.Refused != 1 || !slices.Equal(approved, []string{"writer " + fakePlan}) {
				t.Errorf("result %+v, approved %v; want the writer's approval only", res, approved)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.replies) != 2 || !strings.Contains(f.replies[0], "@reader: not approved") || !strings.Contains(f.replies[1], "Approved by @writer") {
				t.Errorf("replies:\n%s", strings.Join(f.replies, "\n---\n"))
			}
			for _, r := range f.replies {
				if strings.Contains(r, f.token) {
					t.Error("a reply holds the forge token")
				}
			}
		})
	}
}
