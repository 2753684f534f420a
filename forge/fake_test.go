package forge_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/gitaso/gitaso/forge"
)

// restDesc is a forge's published REST description as testdata/*-rest.json
// keeps it: the operations gitaso calls, with their sources.
type restDesc struct {
	Forge      string    `json:"forge"`
	Sources    []string  `json:"sources"`
	Notes      string    `json:"notes"`
	Auth       []authOpt `json:"auth"`
	Operations []restOp  `json:"operations"`
}

type authOpt struct {
	Header string `json:"header"`
	Scheme string `json:"scheme"`
	Basic  bool   `json:"basic"` // value is base64(":"+token)
}

type restOp struct {
	ID            string             `json:"id"`
	Method        string             `json:"method"`
	Path          string             `json:"path"`
	Query         map[string]*schema `json:"query"`
	RequiredQuery []string           `json:"requiredQuery"`
	Body          *schema            `json:"body"`
	Status        int                `json:"status"`
	Source        string             `json:"source"`
}

type schema struct {
	Type       string             `json:"type"`
	Required   []string           `json:"required"`
	Properties map[string]*schema `json:"properties"`
	Items      *schema            `json:"items"`
	Enum       []string           `json:"enum"`
	MaxLength  int                `json:"maxLength"`
}

func loadDesc(t testing.TB, kind string) restDesc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", kind+"-rest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d restDesc
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s-rest.json: %v", kind, err)
	}
	if len(d.Sources) == 0 {
		t.Fatalf("%s-rest.json names no source", kind)
	}
	for _, op := range d.Operations {
		if op.Source == "" || op.Status == 0 {
			t.Fatalf("%s-rest.json: operation %s has no source or status", kind, op.ID)
		}
	}
	return d
}

// validate checks v against s and returns what is wrong, one line each.
func (s *schema) validate(v any, at string) []string {
	if s == nil {
		return nil
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }
	switch s.Type {
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("want a string, got %T", v)
			return errs
		}
		if s.MaxLength > 0 && utf8.RuneCountInString(str) > s.MaxLength {
			bad("%d characters, more than the maximum %d", utf8.RuneCountInString(str), s.MaxLength)
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
			bad("%q is not one of %v", str, s.Enum)
		}
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			bad("want a %s, got %T", s.Type, v)
			return errs
		}
		if _, err := n.Int64(); s.Type == "integer" && err != nil {
			bad("want an integer, got %s", n)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("want a boolean, got %T", v)
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("want an array, got %T", v)
			return errs
		}
		for i, e := range a {
			errs = append(errs, s.Items.validate(e, fmt.Sprintf("%s[%d]", at, i))...)
		}
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("want an object, got %T", v)
			return errs
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				bad("required field %q missing", r)
			}
		}
		if s.Properties == nil {
			return errs
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, ok := s.Properties[k]
			if !ok {
				bad("unknown field %q", k)
				continue
			}
			errs = append(errs, p.validate(m[k], at+"."+k)...)
		}
	}
	return errs
}

// queryValue checks one query parameter's text.
func (s *schema) queryValue(name, v string) []string {
	switch s.Type {
	case "integer":
		if _, err := strconv.Atoi(v); err != nil {
			return []string{fmt.Sprintf("query %s=%q: want an integer", name, v)}
		}
	case "boolean":
		if v != "true" && v != "false" {
			return []string{fmt.Sprintf("query %s=%q: want a boolean", name, v)}
		}
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
		return []string{fmt.Sprintf("query %s=%q: not one of %v", name, v, s.Enum)}
	}
	return nil
}

// match returns the path parameters when path (escaped) fits the template.
func match(template, path string) (map[string]string, bool) {
	ts := strings.Split(strings.Trim(template, "/"), "/")
	ps := strings.Split(strings.Trim(path, "/"), "/")
	if len(ts) != len(ps) {
		return nil, false
	}
	params := map[string]string{}
	for i, t := range ts {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if ps[i] == "" {
				return nil, false
			}
			v, err := url.PathUnescape(ps[i])
			if err != nil {
				return nil, false
			}
			params[strings.Trim(t, "{}")] = v
			continue
		}
		if t != ps[i] {
			return nil, false
		}
	}
	return params, true
}

type fakeComment struct {
	ID      int
	Thread  int // Azure DevOps
	Body    string
	System  bool // GitLab system notes
	Deleted bool // Azure DevOps soft-deletes
	Author  string
}

type fakeStatus struct {
	SHA  string
	Body map[string]any
}

// fakeForge is one forge's REST API in memory. Every request is checked
// against the forge's description (method, path, authentication, query,
// body fields and their types, no unknown field); a request that does not
// fit fails the test and gets an error answer.
type fakeForge struct {
	t        testing.TB
	kind     string
	desc     restDesc
	prefix   string // the API's path under the server: /api/v3, /api/v4, /api/v1 or ""
	token    string
	pageSize int // the fake's page size, small to exercise pagination

	mu       sync.Mutex
	nextID   int
	comments map[int][]*fakeComment // by pull request, oldest first
	statuses []fakeStatus
	pulls    []forge.PullRequest
	calls    []string // operation IDs, in order

	srv *httptest.Server
}

func newFake(t testing.TB, kind string) *fakeForge {
	t.Helper()
	f := &fakeForge{t: t, kind: kind, desc: loadDesc(t, kind), token: "s3cr3t-" + kind + "-token", pageSize: 2,
		nextID: 1000, comments: map[int][]*fakeComment{}}
	switch kind {
	case "github":
		f.prefix = "/api/v3" // Enterprise Server's layout
	case "gitlab":
		f.prefix = "/api/v4"
	case "gitea":
		f.prefix = "/api/v1"
	}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

// options are the forge.Options that reach the fake.
func (f *fakeForge) options() forge.Options {
	o := forge.Options{Kind: f.kind, BaseURL: f.srv.URL, Token: f.token, HTTPClient: f.srv.Client()}
	switch f.kind {
	case "github", "gitea":
		o.Repo = "acme/infra"
	case "gitlab":
		o.Repo = "platform/infra" // a path, sent URL-encoded
	case "azuredevops":
		o.BaseURL = f.srv.URL + "/acme"
		o.Repo = "Platform/infra"
	}
	return o
}

func (f *fakeForge) forge(t testing.TB) forge.Forge {
	t.Helper()
	fg, err := forge.New(f.options())
	if err != nil {
		t.Fatal(err)
	}
	return fg
}

func (f *fakeForge) fail(w http.ResponseWriter, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	f.t.Errorf("%s fake: %s", f.kind, msg)
	http.Error(w, msg, code)
}

func (f *fakeForge) authorized(r *http.Request) bool {
	for _, a := range f.desc.Auth {
		want := f.token
		if a.Basic {
			want = base64.StdEncoding.EncodeToString([]byte(":" + f.token))
		}
		if a.Scheme != "" {
			want = a.Scheme + " " + want
		}
		if r.Header.Get(a.Header) == want {
			return true
		}
	}
	return false
}

func (f *fakeForge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), f.prefix)
	if !ok {
		f.fail(w, http.StatusNotFound, "%s %s: not under %s", r.Method, r.URL.EscapedPath(), f.prefix)
		return
	}
	var op *restOp
	var params map[string]string
	for i := range f.desc.Operations {
		o := &f.desc.Operations[i]
		if p, ok := match(o.Path, path); ok && o.Method == r.Method {
			op, params = o, p
			break
		}
	}
	if op == nil {
		f.fail(w, http.StatusNotFound, "%s %s: no such operation in the description", r.Method, path)
		return
	}
	if !f.authorized(r) {
		f.fail(w, http.StatusUnauthorized, "%s: no valid authentication header", op.ID)
		return
	}
	var errs []string
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
			errs = append(errs, fmt.Sprintf("query parameter %q missing", k))
		}
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	switch {
	case op.Body == nil && len(bytes.TrimSpace(raw)) > 0:
		errs = append(errs, "a body where the operation takes none")
	case op.Body != nil:
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			errs = append(errs, fmt.Sprintf("Content-Type %q, want application/json", ct))
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			errs = append(errs, "body: "+err.Error())
		} else {
			errs = append(errs, op.Body.validate(v, "body")...)
			body, _ = v.(map[string]any)
		}
	}
	if len(errs) > 0 {
		f.fail(w, http.StatusUnprocessableEntity, "%s (%s): %s", op.ID, op.Source, strings.Join(errs, "; "))
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, op.ID)
	handle := map[string]func(http.ResponseWriter, *http.Request, *restOp, map[string]string, map[string]any){
		"github": f.gitHub, "gitea": f.gitHub, "gitlab": f.gitLab, "azuredevops": f.azureDevOps,
	}[f.kind]
	handle(w, r, op, params, body)
}

func (f *fakeForge) reply(w http.ResponseWriter, op *restOp, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(op.Status)
	if v != nil && op.Status != http.StatusNoContent {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// page cuts items to the page the query asks for and sets a Link header to
// the next one (GitHub, GitLab and Gitea paginate so).
func page[T any](f *fakeForge, w http.ResponseWriter, r *http.Request, items []T) []T {
	n, _ := strconv.Atoi(r.URL.Query().Get("page"))
	n = max(n, 1)
	start := min((n-1)*f.pageSize, len(items))
	end := min(start+f.pageSize, len(items))
	if end < len(items) {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		qq := u.Query()
		qq.Set("page", strconv.Itoa(n+1))
		u.RawQuery = qq.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next", <%s>; rel="last"`, u.String(), u.String()))
	}
	return items[start:end]
}

func (f *fakeForge) pr(params map[string]string, name string) int {
	n, err := strconv.Atoi(params[name])
	if err != nil {
		f.t.Errorf("%s fake: %s=%q", f.kind, name, params[name])
	}
	return n
}

// find returns a comment by ID.
func (f *fakeForge) find(id string) *fakeComment {
	n, _ := strconv.Atoi(id)
	for _, cs := range f.comments {
		for _, c := range cs {
			if c.ID == n && !c.Deleted {
				return c
			}
		}
	}
	return nil
}

func (f *fakeForge) add(pr int, body, author string) *fakeComment {
	f.nextID++
	c := &fakeComment{ID: f.nextID, Body: body, Author: author}
	f.comments[pr] = append(f.comments[pr], c)
	return c
}

func (f *fakeForge) htmlURL(pr int, c *fakeComment) string {
	return fmt.Sprintf("%s/acme/infra/pull/%d#issuecomment-%d", f.srv.URL, pr, c.ID)
}

func (f *fakeForge) gitHub(w http.ResponseWriter, r *http.Request, op *restOp, params map[string]string, body map[string]any) {
	type comment struct {
		ID      int    `json:"id"`
		Body    string `json:"body"`
		HTMLURL string `json:"html_url"`
	}
	idx := "issue_number"
	if f.kind == "gitea" {
		idx = "index"
	}
	switch op.ID {
	case "issues/list-comments", "issueGetComments":
		pr := f.pr(params, idx)
		var out []comment
		for _, c := range f.comments[pr] {
			out = append(out, comment{c.ID, c.Body, f.htmlURL(pr, c)})
		}
		if f.kind == "github" {
			out = page(f, w, r, out)
		}
		f.reply(w, op, out)
	case "issues/create-comment", "issueCreateComment":
		pr := f.pr(params, idx)
		c := f.add(pr, body["body"].(string), "gitaso")
		f.reply(w, op, comment{c.ID, c.Body, f.htmlURL(pr, c)})
	case "issues/update-comment", "issueEditComment":
		c := f.find(firstSet(params["comment_id"], params["id"]))
		if c == nil {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		c.Body = body["body"].(string)
		f.reply(w, op, comment{c.ID, c.Body, fmt.Sprintf("%s/c/%d", f.srv.URL, c.ID)})
	case "issues/delete-comment", "issueDeleteComment":
		f.remove(firstSet(params["comment_id"], params["id"]))
		f.reply(w, op, nil)
	case "repos/create-commit-status", "repoCreateStatus":
		f.statuses = append(f.statuses, fakeStatus{params["sha"], body})
		f.reply(w, op, body)
	case "pulls/list", "repoListPullRequests":
		type ref struct {
			SHA string `json:"sha,omitempty"`
			Ref string `json:"ref"`
		}
		type pull struct {
			Number  int    `json:"number"`
			State   string `json:"state"`
			HTMLURL string `json:"html_url"`
			Head    ref    `json:"head"`
			Base    ref    `json:"base"`
		}
		var out []pull
		for _, p := range f.pulls {
			out = append(out, pull{p.Number, "open", fmt.Sprintf("%s/acme/infra/pull/%d", f.srv.URL, p.Number), ref{p.HeadSHA, p.HeadRef}, ref{"", p.BaseRef}})
		}
		f.reply(w, op, page(f, w, r, out))
	}
}

func (f *fakeForge) remove(id string) {
	n, _ := strconv.Atoi(id)
	for pr, cs := range f.comments {
		f.comments[pr] = slices.DeleteFunc(cs, func(c *fakeComment) bool { return c.ID == n })
	}
}

func (f *fakeForge) gitLab(w http.ResponseWriter, r *http.Request, op *restOp, params map[string]string, body map[string]any) {
	if params["id"] != "platform/infra" {
		f.fail(w, http.StatusNotFound, "project %q", params["id"])
		return
	}
	type note struct {
		ID     int    `json:"id"`
		Body   string `json:"body"`
		System bool   `json:"system"`
	}
	web := func(iid string) string { return f.srv.URL + "/platform/infra/-/merge_requests/" + iid }
	switch op.ID {
	case "list-merge-request-notes":
		var out []note
		for _, c := range f.comments[f.pr(params, "merge_request_iid")] {
			out = append(out, note{c.ID, c.Body, c.System})
		}
		f.reply(w, op, page(f, w, r, out))
	case "create-merge-request-note":
		c := f.add(f.pr(params, "merge_request_iid"), body["body"].(string), "gitaso")
		f.reply(w, op, note{c.ID, c.Body, false})
	case "modify-merge-request-note":
		c := f.find(params["note_id"])
		if c == nil {
			http.Error(w, `{"message":"404 Not found"}`, http.StatusNotFound)
			return
		}
		c.Body = body["body"].(string)
		f.reply(w, op, note{c.ID, c.Body, false})
	case "delete-merge-request-note":
		f.remove(params["note_id"])
		f.reply(w, op, nil)
	case "get-single-mr":
		f.reply(w, op, map[string]any{"iid": f.pr(params, "merge_request_iid"), "web_url": web(params["merge_request_iid"])})
	case "set-commit-status":
		f.statuses = append(f.statuses, fakeStatus{params["sha"], body})
		f.reply(w, op, body)
	case "list-project-merge-requests":
		var out []map[string]any
		for _, p := range f.pulls {
			out = append(out, map[string]any{"iid": p.Number, "sha": p.HeadSHA, "source_branch": p.HeadRef,
				"target_branch": p.BaseRef, "web_url": web(strconv.Itoa(p.Number)), "state": "opened"})
		}
		f.reply(w, op, page(f, w, r, out))
	}
}

func (f *fakeForge) azureDevOps(w http.ResponseWriter, r *http.Request, op *restOp, params map[string]string, body map[string]any) {
	if params["organization"] != "acme" || params["project"] != "Platform" || params["repositoryId"] != "infra" {
		f.fail(w, http.StatusNotFound, "organization/project/repository %s/%s/%s", params["organization"], params["project"], params["repositoryId"])
		return
	}
	type comment struct {
		ID          int    `json:"id"`
		Content     string `json:"content"`
		CommentType string `json:"commentType"`
		IsDeleted   bool   `json:"isDeleted,omitempty"`
	}
	type thread struct {
		ID       int       `json:"id"`
		Status   string    `json:"status"`
		Comments []comment `json:"comments"`
	}
	// Each part is a thread whose first comment has ID 1.
	threadOf := func(c *fakeComment) thread {
		return thread{ID: c.Thread, Status: "closed", Comments: []comment{{1, c.Body, "text", c.Deleted}}}
	}
	byThread := func(pr int, tid string) *fakeComment {
		n, _ := strconv.Atoi(tid)
		for _, c := range f.comments[pr] {
			if c.Thread == n {
				return c
			}
		}
		return nil
	}
	switch op.ID {
	case "Pull Request Threads - List":
		var out []thread
		for _, c := range f.comments[f.pr(params, "pullRequestId")] {
			out = append(out, threadOf(c))
		}
		f.reply(w, op, map[string]any{"value": out, "count": len(out)})
	case "Pull Request Threads - Create":
		cs, _ := body["comments"].([]any)
		if len(cs) != 1 {
			f.fail(w, http.StatusBadRequest, "thread with %d comments", len(cs))
			return
		}
		content, _ := cs[0].(map[string]any)["content"].(string)
		c := f.add(f.pr(params, "pullRequestId"), content, "gitaso")
		c.Thread = c.ID
		f.reply(w, op, threadOf(c))
	case "Pull Request Thread Comments - Update":
		c := byThread(f.pr(params, "pullRequestId"), params["threadId"])
		if c == nil || c.Deleted || params["commentId"] != "1" {
			http.Error(w, `{"message":"not found"}`, http.StatusNotFound)
			return
		}
		c.Body = body["content"].(string)
		f.reply(w, op, comment{1, c.Body, "text", false})
	case "Pull Request Thread Comments - Delete":
		if c := byThread(f.pr(params, "pullRequestId"), params["threadId"]); c != nil {
			c.Deleted = true // Azure DevOps keeps the thread with a deleted comment
		}
		f.reply(w, op, nil)
	case "Statuses - Create":
		f.statuses = append(f.statuses, fakeStatus{params["commitId"], body})
		f.reply(w, op, body)
	case "Pull Requests - Get Pull Requests":
		top, _ := strconv.Atoi(r.URL.Query().Get("$top"))
		skip, _ := strconv.Atoi(r.URL.Query().Get("$skip"))
		top = min(max(top, 1), f.pageSize) // the fake answers small pages
		var out []map[string]any
		for i, p := range f.pulls {
			if i >= skip && len(out) < top {
				out = append(out, map[string]any{"pullRequestId": p.Number, "status": "active",
					"sourceRefName": "refs/heads/" + p.HeadRef, "targetRefName": "refs/heads/" + p.BaseRef,
					"lastMergeSourceCommit": map[string]any{"commitId": p.HeadSHA}})
			}
		}
		f.reply(w, op, map[string]any{"value": out, "count": len(out)})
	}
}

// ours returns the live comments of a pull request that gitaso wrote.
func (f *fakeForge) ours(pr int) []*fakeComment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fakeComment
	for _, c := range f.comments[pr] {
		if c.Author == "gitaso" && !c.Deleted {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeForge) callCount(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == id {
			n++
		}
	}
	return n
}

func (f *fakeForge) opID(verb string) string {
	return map[string]map[string]string{
		"github":      {"create": "issues/create-comment", "update": "issues/update-comment", "delete": "issues/delete-comment"},
		"gitea":       {"create": "issueCreateComment", "update": "issueEditComment", "delete": "issueDeleteComment"},
		"gitlab":      {"create": "create-merge-request-note", "update": "modify-merge-request-note", "delete": "delete-merge-request-note"},
		"azuredevops": {"create": "Pull Request Threads - Create", "update": "Pull Request Thread Comments - Update", "delete": "Pull Request Thread Comments - Delete"},
	}[f.kind][verb]
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
