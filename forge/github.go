package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// gitHub talks to the GitHub REST API (github.com and Enterprise Server,
// https://docs.github.com/rest): issue comments for the sticky comment,
// commit statuses, pulls. Gitea's API is the same in these calls (gitea.go).
type gitHub struct {
	sticky
	c           *client
	api         string // https://api.github.com, https://HOST/api/v3, https://HOST/api/v1 (Gitea)
	owner, repo string
	kind        string
	perPage     string // "per_page" (GitHub) or "limit" (Gitea)
}

func newGitHub(o Options, c *client) (Forge, error) {
	api, err := gitHubAPI(o.BaseURL)
	if err != nil {
		return nil, err
	}
	c.auth = func(h http.Header, tok string) {
		h.Set("Authorization", "Bearer "+tok)
		h.Set("X-GitHub-Api-Version", "2022-11-28")
	}
	return newGitHubLike(o, c, api, "github", "per_page")
}

func newGitHubLike(o Options, c *client, api, kind, perPage string) (Forge, error) {
	owner, repo, ok := strings.Cut(o.Repo, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return nil, fmt.Errorf("%s repository %q: want OWNER/NAME", kind, o.Repo)
	}
	g := &gitHub{c: c, api: api, owner: owner, repo: repo, kind: kind, perPage: perPage}
	g.sticky = sticky{b: g, marker: o.Marker}
	return g, nil
}

// gitHubAPI completes a GitHub base URL: empty or github.com is
// api.github.com; an Enterprise Server host gets /api/v3.
func gitHubAPI(base string) (string, error) {
	if base == "" {
		return "https://api.github.com", nil
	}
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("github URL %q: want https://HOST", base)
	}
	switch {
	case u.Host == "github.com" || u.Host == "www.github.com":
		return "https://api.github.com", nil
	case u.Host == "api.github.com" || strings.HasSuffix(u.Path, "/api/v3"):
		return u.String(), nil
	case u.Path == "":
		return u.String() + "/api/v3", nil
	}
	return u.String(), nil
}

func (g *gitHub) Name() string { return g.kind }

func (g *gitHub) repoURL() string {
	return g.api + "/repos/" + pathEscape(g.owner) + "/" + pathEscape(g.repo)
}

type ghComment struct {
	ID      int64  `json:"id"`
	Body    string `json:"body"`
	HTMLURL string `json:"html_url"`
}

func (c ghComment) stored() stored {
	return stored{id: strconv.FormatInt(c.ID, 10), body: c.Body, url: c.HTMLURL}
}

func (g *gitHub) list(ctx context.Context, pr int) ([]stored, error) {
	var out []stored
	next := fmt.Sprintf("%s/issues/%d/comments?per_page=100", g.repoURL(), pr)
	if g.kind == "gitea" {
		// Gitea's issueGetComments takes no page parameters: it answers
		// every comment at once.
		next = fmt.Sprintf("%s/issues/%d/comments", g.repoURL(), pr)
	}
	for page := 0; next != "" && page < maxPages; page++ {
		var cs []ghComment
		h, err := g.c.do(ctx, http.MethodGet, next, nil, &cs)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			out = append(out, c.stored())
		}
		next = nextLink(h)
	}
	return out, nil
}

type bodyOnly struct {
	Body string `json:"body"`
}

func (g *gitHub) create(ctx context.Context, pr int, body string) (stored, error) {
	var c ghComment
	_, err := g.c.do(ctx, http.MethodPost, fmt.Sprintf("%s/issues/%d/comments", g.repoURL(), pr), bodyOnly{body}, &c)
	return c.stored(), err
}

func (g *gitHub) update(ctx context.Context, _ int, old stored, body string) (stored, error) {
	var c ghComment
	_, err := g.c.do(ctx, http.MethodPatch, g.repoURL()+"/issues/comments/"+old.id, bodyOnly{body}, &c)
	if c.HTMLURL == "" {
		c.HTMLURL = old.url
	}
	return c.stored(), err
}

func (g *gitHub) remove(ctx context.Context, _ int, c stored) error {
	_, err := g.c.do(ctx, http.MethodDelete, g.repoURL()+"/issues/comments/"+c.id, nil, nil)
	return err
}

func (g *gitHub) UpsertComment(ctx context.Context, pr int, parts []string) ([]string, error) {
	return g.upsert(ctx, pr, parts)
}

func (g *gitHub) MarkOutdated(ctx context.Context, pr int, reason string) error {
	return g.markOutdated(ctx, pr, reason)
}

type ghStatus struct {
	State       string `json:"state"`
	TargetURL   string `json:"target_url,omitempty"`
	Description string `json:"description,omitempty"`
	Context     string `json:"context,omitempty"`
}

func (g *gitHub) SetStatus(ctx context.Context, sha string, s Status) error {
	if sha == "" {
		return fmt.Errorf("%s status: no commit SHA", g.kind)
	}
	st := s.State
	switch st {
	case StatePending, StateSuccess, StateFailure, StateError:
	default:
		return fmt.Errorf("%s status: state %q: want pending, success, failure or error", g.kind, s.State)
	}
	if s.Context == "" {
		s.Context = DefaultContext
	}
	body := ghStatus{State: st, TargetURL: s.TargetURL, Description: truncate(s.Description, 140), Context: s.Context}
	_, err := g.c.do(ctx, http.MethodPost, g.repoURL()+"/statuses/"+pathEscape(sha), body, nil)
	return err
}

type ghPull struct {
	Number  int    `json:"number"`
	State   string `json:"state"`
	HTMLURL string `json:"html_url"`
	Head    struct {
		SHA string `json:"sha"`
		Ref string `json:"ref"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

func (g *gitHub) OpenPullRequests(ctx context.Context) ([]PullRequest, error) {
	var out []PullRequest
	next := fmt.Sprintf("%s/pulls?state=open&%s=100", g.repoURL(), g.perPage)
	for page := 0; next != "" && page < maxPages; page++ {
		var ps []ghPull
		h, err := g.c.do(ctx, http.MethodGet, next, nil, &ps)
		if err != nil {
			return nil, fmt.Errorf("list open pull requests: %w", err)
		}
		for _, p := range ps {
			out = append(out, PullRequest{Number: p.Number, HeadSHA: p.Head.SHA, HeadRef: p.Head.Ref,
				BaseRef: p.Base.Ref, URL: p.HTMLURL, State: p.State})
		}
		next = nextLink(h)
		if next == "" && g.kind == "gitea" && len(ps) == 100 {
			next = fmt.Sprintf("%s/pulls?state=open&%s=100&page=%d", g.repoURL(), g.perPage, page+2)
		}
	}
	return out, nil
}
