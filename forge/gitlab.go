package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// gitLab talks to the GitLab REST API v4 (gitlab.com and self-managed,
// https://docs.gitlab.com/api/): merge request notes for the sticky
// comment, commit statuses, merge requests.
type gitLab struct {
	sticky
	c       *client
	api     string // https://gitlab.com/api/v4
	project string // path-escaped ID or path

	mu     sync.Mutex
	webURL map[int]string // merge request IID → its page
}

func newGitLab(o Options, c *client) (Forge, error) {
	api := "https://gitlab.com/api/v4"
	if o.BaseURL != "" {
		u, err := url.Parse(strings.TrimRight(o.BaseURL, "/"))
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("gitlab URL %q: want https://HOST", o.BaseURL)
		}
		api = u.String()
		if !strings.HasSuffix(u.Path, "/api/v4") {
			api += "/api/v4"
		}
	}
	// Job tokens (CI_JOB_TOKEN, "glcbt-…") go in JOB-TOKEN, every other
	// token (personal, project, group access tokens) in PRIVATE-TOKEN.
	c.auth = func(h http.Header, tok string) {
		if strings.HasPrefix(tok, "glcbt-") {
			h.Set("JOB-TOKEN", tok)
			return
		}
		h.Set("PRIVATE-TOKEN", tok)
	}
	g := &gitLab{c: c, api: api, project: url.PathEscape(strings.Trim(o.Repo, "/")), webURL: map[int]string{}}
	g.sticky = sticky{b: g, marker: o.Marker}
	return g, nil
}

func (g *gitLab) Name() string { return "gitlab" }

func (g *gitLab) mrURL(iid int) string {
	return fmt.Sprintf("%s/projects/%s/merge_requests/%d", g.api, g.project, iid)
}

type glNote struct {
	ID     int64  `json:"id"`
	Body   string `json:"body"`
	System bool   `json:"system"`
}

type glMR struct {
	IID          int    `json:"iid"`
	SHA          string `json:"sha"`
	SourceBranch string `json:"source_branch"`
	TargetBranch string `json:"target_branch"`
	WebURL       string `json:"web_url"`
	State        string `json:"state"`
}

// page returns the merge request's web page, read once.
func (g *gitLab) page(ctx context.Context, iid int) string {
	g.mu.Lock()
	u, ok := g.webURL[iid]
	g.mu.Unlock()
	if ok {
		return u
	}
	var mr glMR
	if _, err := g.c.do(ctx, http.MethodGet, g.mrURL(iid), nil, &mr); err != nil {
		return "" // the URLs are a convenience; the notes still post
	}
	g.mu.Lock()
	g.webURL[iid] = mr.WebURL
	g.mu.Unlock()
	return mr.WebURL
}

func (g *gitLab) note(ctx context.Context, iid int, n glNote) stored {
	u := ""
	if p := g.page(ctx, iid); p != "" {
		u = p + "#note_" + strconv.FormatInt(n.ID, 10)
	}
	return stored{id: strconv.FormatInt(n.ID, 10), body: n.Body, url: u}
}

func (g *gitLab) list(ctx context.Context, iid int) ([]stored, error) {
	var out []stored
	next := g.mrURL(iid) + "/notes?sort=asc&order_by=created_at&per_page=100"
	for page := 0; next != "" && page < maxPages; page++ {
		var ns []glNote
		h, err := g.c.do(ctx, http.MethodGet, next, nil, &ns)
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			if !n.System {
				out = append(out, g.note(ctx, iid, n))
			}
		}
		next = nextLink(h)
	}
	return out, nil
}

func (g *gitLab) create(ctx context.Context, iid int, body string) (stored, error) {
	var n glNote
	if _, err := g.c.do(ctx, http.MethodPost, g.mrURL(iid)+"/notes", bodyOnly{body}, &n); err != nil {
		return stored{}, err
	}
	return g.note(ctx, iid, n), nil
}

func (g *gitLab) update(ctx context.Context, iid int, old stored, body string) (stored, error) {
	var n glNote
	if _, err := g.c.do(ctx, http.MethodPut, g.mrURL(iid)+"/notes/"+old.id, bodyOnly{body}, &n); err != nil {
		return stored{}, err
	}
	return g.note(ctx, iid, n), nil
}

func (g *gitLab) remove(ctx context.Context, iid int, c stored) error {
	_, err := g.c.do(ctx, http.MethodDelete, g.mrURL(iid)+"/notes/"+c.id, nil, nil)
	return err
}

func (g *gitLab) UpsertComment(ctx context.Context, pr int, parts []string) ([]string, error) {
	return g.upsert(ctx, pr, parts)
}

func (g *gitLab) MarkOutdated(ctx context.Context, pr int, reason string) error {
	return g.markOutdated(ctx, pr, reason)
}

type glStatus struct {
	State       string `json:"state"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	TargetURL   string `json:"target_url,omitempty"`
}

// gitLabStates maps Status states to GitLab's (pending, running, success,
// failed, canceled, skipped).
var gitLabStates = map[string]string{StatePending: "pending", StateSuccess: "success", StateFailure: "failed", StateError: "failed"}

func (g *gitLab) SetStatus(ctx context.Context, sha string, s Status) error {
	if sha == "" {
		return fmt.Errorf("gitlab status: no commit SHA")
	}
	st, ok := gitLabStates[s.State]
	if !ok {
		return fmt.Errorf("gitlab status: state %q: want pending, success, failure or error", s.State)
	}
	if s.Context == "" {
		s.Context = DefaultContext
	}
	body := glStatus{State: st, Name: s.Context, Description: truncate(s.Description, 140), TargetURL: s.TargetURL}
	_, err := g.c.do(ctx, http.MethodPost, fmt.Sprintf("%s/projects/%s/statuses/%s", g.api, g.project, pathEscape(sha)), body, nil)
	return err
}

func (g *gitLab) OpenPullRequests(ctx context.Context) ([]PullRequest, error) {
	var out []PullRequest
	next := fmt.Sprintf("%s/projects/%s/merge_requests?state=opened&per_page=100", g.api, g.project)
	for page := 0; next != "" && page < maxPages; page++ {
		var ms []glMR
		h, err := g.c.do(ctx, http.MethodGet, next, nil, &ms)
		if err != nil {
			return nil, fmt.Errorf("list open merge requests: %w", err)
		}
		for _, m := range ms {
			out = append(out, PullRequest{Number: m.IID, HeadSHA: m.SHA, HeadRef: m.SourceBranch,
				BaseRef: m.TargetBranch, URL: m.WebURL, State: m.State})
		}
		next = nextLink(h)
	}
	return out, nil
}
