package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// PullRequest is an open pull request (GitHub, Gitea), merge request
// (GitLab) or pull request (Azure DevOps).
type PullRequest struct {
	Number                                int
	HeadSHA, HeadRef, BaseRef, URL, State string
}

// Status is a commit status or check. State is "pending", "success",
// "failure" or "error"; each forge maps it to its own words.
type Status struct {
	State                           string /* "pending","success","failure","error" */
	Context, Description, TargetURL string
}

// The status states, as Status.State spells them.
const (
	StatePending = "pending"
	StateSuccess = "success"
	StateFailure = "failure"
	StateError   = "error"
)

// Forge posts plans and statuses to one repository of a forge.
type Forge interface {
	// Name is the forge's kind: github, gitlab, azuredevops or gitea.
	Name() string
	// UpsertComment keeps one sticky comment (of len(parts) comments) on a
	// pull request: it finds its earlier comments by the hidden marker,
	// edits them in place, and adds or deletes parts as the count changes.
	// It returns the parts' web URLs, in order.
	UpsertComment(ctx context.Context, pr int, parts []string) (urls []string, err error)
	// SetStatus sets a commit status on sha.
	SetStatus(ctx context.Context, sha string, s Status) error
	// OpenPullRequests lists the repository's open pull requests.
	OpenPullRequests(ctx context.Context) ([]PullRequest, error)
	// MarkOutdated edits the sticky comment to say it is outdated (a closed
	// pull request, a plan superseded); nothing when there is none.
	MarkOutdated(ctx context.Context, pr int, reason string) error
}

// Options say which forge and repository to talk to.
type Options struct {
	// Kind is github, gitlab, azuredevops or gitea.
	Kind string
	// BaseURL is the forge's API or server URL; empty for the SaaS forges
	// (https://api.github.com, https://gitlab.com, https://dev.azure.com).
	// A server URL is completed: GitHub Enterprise Server's
	// https://HOST becomes https://HOST/api/v3, GitLab's https://HOST
	// https://HOST/api/v4, Gitea's https://HOST https://HOST/api/v1. For
	// Azure DevOps it is the organization or collection URL
	// (https://dev.azure.com/ORG, https://HOST/tfs/COLLECTION).
	BaseURL string
	// Repo is owner/name (GitHub, Gitea), the project's path or numeric ID
	// (GitLab), or project/repository under BaseURL (Azure DevOps; also
	// org/project/repository with the default https://dev.azure.com).
	Repo string
	// Token authenticates every request. It is never logged.
	Token string
	// HTTPClient sends the requests; nil: a client with a 30 s timeout.
	HTTPClient *http.Client
	// Marker tells gitaso's comments from every other comment (a hidden
	// HTML comment in each part); DefaultMarker when empty. Use one marker
	// per plan posted to the same pull request.
	Marker string
}

// LogValue keeps the token out of logs.
func (o Options) LogValue() slog.Value {
	tok := ""
	if o.Token != "" {
		tok = "(set)"
	}
	return slog.GroupValue(slog.String("kind", o.Kind), slog.String("baseURL", o.BaseURL),
		slog.String("repo", o.Repo), slog.String("token", tok), slog.String("marker", o.Marker))
}

// Kinds are the forges New knows.
var Kinds = []string{"github", "gitlab", "azuredevops", "gitea"}

// ErrUnknownKind is returned (wrapped) by New and Limit callers when the
// forge kind is not one of Kinds.
var ErrUnknownKind = errors.New("unknown forge kind")

// New returns the forge of o.Kind.
func New(o Options) (Forge, error) {
	if o.Marker == "" {
		o.Marker = DefaultMarker
	}
	if strings.ContainsAny(o.Marker, "\n<>") || strings.Contains(o.Marker, "--") {
		return nil, fmt.Errorf("forge marker %q: no newline, angle bracket or \"--\"", o.Marker)
	}
	if o.Repo == "" {
		return nil, fmt.Errorf("forge %s: no repository", o.Kind)
	}
	c := &client{token: o.Token, http: o.HTTPClient}
	if c.http == nil {
		c.http = &http.Client{Timeout: 30 * time.Second}
	}
	switch o.Kind {
	case "github":
		return newGitHub(o, c)
	case "gitlab":
		return newGitLab(o, c)
	case "azuredevops":
		return newAzureDevOps(o, c)
	case "gitea", "forgejo":
		return newGitea(o, c)
	}
	return nil, fmt.Errorf("%w %q: want one of %s", ErrUnknownKind, o.Kind, strings.Join(Kinds, ", "))
}

// APIError is returned (wrapped) when a forge answers a request with an
// error status. Retryable says whether sending it again may succeed (rate
// limits, server errors).
type APIError struct {
	Method, URL string
	StatusCode  int
	Body        string // the start of the answer
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.URL, e.StatusCode, http.StatusText(e.StatusCode), e.Body)
}

// Retryable reports whether the request may succeed when sent again.
func (e *APIError) Retryable() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// client sends JSON requests with one forge's authentication.
type client struct {
	http  *http.Client
	token string
	auth  func(h http.Header, token string)
}

// do sends a request with a JSON body (nil: none) and decodes a JSON answer
// into out (nil: ignored). It returns the answer's headers.
func (c *client) do(ctx context.Context, method, u string, body, out any) (http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode: %w", method, redactURL(u), err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, redactURL(u), err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "gitaso")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" && c.auth != nil {
		c.auth(req.Header, c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, redactURL(u), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", method, redactURL(u), err)
	}
	if resp.StatusCode >= 300 {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 512 {
			msg = msg[:512] + "..."
		}
		if c.token != "" {
			msg = strings.ReplaceAll(msg, c.token, "(token)")
		}
		return resp.Header, &APIError{Method: method, URL: redactURL(u), StatusCode: resp.StatusCode, Body: msg}
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.Header, fmt.Errorf("%s %s: decode answer: %w", method, redactURL(u), err)
		}
	}
	return resp.Header, nil
}

// redactURL drops a URL's query values and user information, which might
// hold credentials.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(bad URL)"
	}
	p.User = nil
	p.RawQuery = ""
	return p.String()
}

// nextLink returns the rel="next" URL of an RFC 8288 Link header (GitHub,
// GitLab and Gitea paginate with it), or "".
func nextLink(h http.Header) string {
	for _, v := range h.Values("Link") {
		for _, l := range strings.Split(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(l), ";")
			if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
				continue
			}
			return strings.Trim(strings.TrimSpace(target), "<>")
		}
	}
	return ""
}

// maxPages bounds a listing: 100 pages of 100 comments is far more than any
// pull request holds.
const maxPages = 100

// stored is one comment as a forge holds it.
type stored struct {
	id     string // the comment's ID (Azure DevOps: thread/comment)
	body   string
	url    string
	thread string // Azure DevOps: the comment's thread
}

// backend is what the sticky comment needs of a forge.
type backend interface {
	list(ctx context.Context, pr int) ([]stored, error)
	create(ctx context.Context, pr int, body string) (stored, error)
	update(ctx context.Context, pr int, c stored, body string) (stored, error)
	remove(ctx context.Context, pr int, c stored) error
}

// sticky implements UpsertComment and MarkOutdated on a backend.
type sticky struct {
	b      backend
	marker string
}

// ours returns the pull request's comments that carry the marker, ordered
// by their part number (then by ID, oldest first).
func (s sticky) ours(ctx context.Context, pr int) ([]stored, error) {
	all, err := s.b.list(ctx, pr)
	if err != nil {
		return nil, err
	}
	type numbered struct {
		stored
		part, order int
	}
	var mine []numbered
	for i, c := range all {
		if part, _, ok := parseMarker(c.body, s.marker); ok {
			mine = append(mine, numbered{c, part, i})
		}
	}
	slices.SortStableFunc(mine, func(a, b numbered) int {
		if a.part != b.part {
			return a.part - b.part
		}
		return a.order - b.order
	})
	out := make([]stored, len(mine))
	for i, m := range mine {
		out[i] = m.stored
	}
	return out, nil
}

func (s sticky) upsert(ctx context.Context, pr int, parts []string) ([]string, error) {
	if len(parts) == 0 {
		return nil, errors.New("no comment to post")
	}
	existing, err := s.ours(ctx, pr)
	if err != nil {
		return nil, fmt.Errorf("find the earlier plan comments: %w", err)
	}
	urls := make([]string, 0, len(parts))
	for i, p := range parts {
		body := withMarker(p, s.marker, i+1, len(parts))
		var c stored
		switch {
		case i < len(existing) && existing[i].body == body:
			c = existing[i] // unchanged: no request
		case i < len(existing):
			if c, err = s.b.update(ctx, pr, existing[i], body); err != nil {
				return urls, fmt.Errorf("edit part %d/%d of the plan comment: %w", i+1, len(parts), err)
			}
		default:
			if c, err = s.b.create(ctx, pr, body); err != nil {
				return urls, fmt.Errorf("add part %d/%d of the plan comment: %w", i+1, len(parts), err)
			}
		}
		urls = append(urls, c.url)
	}
	for i := len(parts); i < len(existing); i++ {
		if err := s.b.remove(ctx, pr, existing[i]); err != nil {
			return urls, fmt.Errorf("delete the extra part %d of the plan comment: %w", i+1, err)
		}
	}
	return urls, nil
}

func (s sticky) markOutdated(ctx context.Context, pr int, reason string) error {
	existing, err := s.ours(ctx, pr)
	if err != nil {
		return fmt.Errorf("find the plan comments: %w", err)
	}
	for i, c := range existing {
		body, changed := outdated(c.body, reason)
		if !changed {
			continue
		}
		if _, err := s.b.update(ctx, pr, c, body); err != nil {
			return fmt.Errorf("mark part %d of the plan comment outdated: %w", i+1, err)
		}
	}
	return nil
}

// truncate shortens s to at most n runes, ending with "…" when cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// pathEscape escapes one path segment.
func pathEscape(s string) string { return url.PathEscape(s) }
