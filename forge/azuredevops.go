package forge

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// azureAPIVersion is the REST version every request names.
const azureAPIVersion = "7.1"

// azureDevOps talks to Azure DevOps Services and Server (Azure Repos,
// https://learn.microsoft.com/rest/api/azure/devops/git): a pull request
// thread per part of the sticky comment, commit statuses, pull requests.
type azureDevOps struct {
	sticky
	c                   *client
	base                string // https://dev.azure.com/ORG or https://HOST/tfs/COLLECTION
	project, repository string
}

func newAzureDevOps(o Options, c *client) (Forge, error) {
	segs := strings.Split(strings.Trim(o.Repo, "/"), "/")
	base := strings.TrimRight(o.BaseURL, "/")
	switch {
	case len(segs) == 3 && base == "":
		base = "https://dev.azure.com/" + url.PathEscape(segs[0])
		segs = segs[1:]
	case len(segs) == 3 && strings.TrimRight(base, "/") == "https://dev.azure.com":
		base += "/" + url.PathEscape(segs[0])
		segs = segs[1:]
	case len(segs) == 2 && base != "":
	default:
		return nil, fmt.Errorf("azuredevops repository %q: want PROJECT/REPOSITORY with --forge-url https://dev.azure.com/ORG (or the collection URL), or ORG/PROJECT/REPOSITORY", o.Repo)
	}
	if u, err := url.Parse(base); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("azuredevops URL %q: want https://dev.azure.com/ORG or https://HOST/COLLECTION", base)
	}
	for _, s := range segs {
		if s == "" {
			return nil, fmt.Errorf("azuredevops repository %q: empty segment", o.Repo)
		}
	}
	// A pipeline's System.AccessToken is a JWT and goes as a bearer token;
	// a personal access token goes as Basic with an empty user name.
	c.auth = func(h http.Header, tok string) {
		if strings.HasPrefix(tok, "eyJ") && strings.Count(tok, ".") == 2 {
			h.Set("Authorization", "Bearer "+tok)
			return
		}
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(":"+tok)))
	}
	a := &azureDevOps{c: c, base: base, project: segs[0], repository: segs[1]}
	a.sticky = sticky{b: a, marker: o.Marker}
	return a, nil
}

func (a *azureDevOps) Name() string { return "azuredevops" }

func (a *azureDevOps) repoAPI() string {
	return a.base + "/" + pathEscape(a.project) + "/_apis/git/repositories/" + pathEscape(a.repository)
}

func (a *azureDevOps) threadsURL(pr int) string {
	return fmt.Sprintf("%s/pullRequests/%d/threads", a.repoAPI(), pr)
}

func (a *azureDevOps) webURL(pr int) string {
	return fmt.Sprintf("%s/%s/_git/%s/pullrequest/%d", a.base, pathEscape(a.project), pathEscape(a.repository), pr)
}

func q(u string) string { return u + "?api-version=" + azureAPIVersion }

type adoComment struct {
	ID              int    `json:"id,omitempty"`
	ParentCommentID int    `json:"parentCommentId,omitempty"`
	Content         string `json:"content"`
	CommentType     string `json:"commentType,omitempty"`
	IsDeleted       bool   `json:"isDeleted,omitempty"`
}

type adoThread struct {
	ID        int          `json:"id,omitempty"`
	Comments  []adoComment `json:"comments"`
	Status    string       `json:"status,omitempty"`
	IsDeleted bool         `json:"isDeleted,omitempty"`
}

func (a *azureDevOps) stored(pr int, t adoThread, c adoComment) stored {
	return stored{id: strconv.Itoa(c.ID), thread: strconv.Itoa(t.ID), body: c.Content,
		url: a.webURL(pr) + "?discussionId=" + strconv.Itoa(t.ID)}
}

// list returns the first comment of every thread that has one.
func (a *azureDevOps) list(ctx context.Context, pr int) ([]stored, error) {
	var resp struct {
		Value []adoThread `json:"value"`
	}
	if _, err := a.c.do(ctx, http.MethodGet, q(a.threadsURL(pr)), nil, &resp); err != nil {
		return nil, err
	}
	var out []stored
	for _, t := range resp.Value {
		if t.IsDeleted || len(t.Comments) == 0 || t.Comments[0].IsDeleted {
			continue
		}
		out = append(out, a.stored(pr, t, t.Comments[0]))
	}
	return out, nil
}

// create opens a thread holding the part. The thread is closed: a plan is
// information, and an active thread would block pull requests whose policy
// asks for every comment to be resolved.
func (a *azureDevOps) create(ctx context.Context, pr int, body string) (stored, error) {
	var t adoThread
	in := adoThread{Comments: []adoComment{{ParentCommentID: 0, Content: body, CommentType: "text"}}, Status: "closed"}
	if _, err := a.c.do(ctx, http.MethodPost, q(a.threadsURL(pr)), in, &t); err != nil {
		return stored{}, err
	}
	if len(t.Comments) == 0 {
		return stored{}, fmt.Errorf("azuredevops: the new thread %d holds no comment", t.ID)
	}
	return a.stored(pr, t, t.Comments[0]), nil
}

func (a *azureDevOps) commentURL(pr int, c stored) string {
	return fmt.Sprintf("%s/%s/comments/%s", a.threadsURL(pr), c.thread, c.id)
}

func (a *azureDevOps) update(ctx context.Context, pr int, old stored, body string) (stored, error) {
	var c adoComment
	if _, err := a.c.do(ctx, http.MethodPatch, q(a.commentURL(pr, old)), adoComment{Content: body}, &c); err != nil {
		return stored{}, err
	}
	old.body = body
	return old, nil
}

func (a *azureDevOps) remove(ctx context.Context, pr int, c stored) error {
	_, err := a.c.do(ctx, http.MethodDelete, q(a.commentURL(pr, c)), nil, nil)
	return err
}

func (a *azureDevOps) UpsertComment(ctx context.Context, pr int, parts []string) ([]string, error) {
	return a.upsert(ctx, pr, parts)
}

func (a *azureDevOps) MarkOutdated(ctx context.Context, pr int, reason string) error {
	return a.markOutdated(ctx, pr, reason)
}

type adoStatus struct {
	State       string        `json:"state"`
	Description string        `json:"description,omitempty"`
	TargetURL   string        `json:"targetUrl,omitempty"`
	Context     adoStatusName `json:"context"`
}

type adoStatusName struct {
	Name  string `json:"name"`
	Genre string `json:"genre,omitempty"`
}

// azureStates maps Status states to GitStatusState (notSet, pending,
// succeeded, failed, error, notApplicable).
var azureStates = map[string]string{StatePending: "pending", StateSuccess: "succeeded", StateFailure: "failed", StateError: "error"}

// SetStatus posts a commit status; a context "genre/name" ("gitaso/plan")
// is split into the status context's genre and name.
func (a *azureDevOps) SetStatus(ctx context.Context, sha string, s Status) error {
	if sha == "" {
		return fmt.Errorf("azuredevops status: no commit SHA")
	}
	st, ok := azureStates[s.State]
	if !ok {
		return fmt.Errorf("azuredevops status: state %q: want pending, success, failure or error", s.State)
	}
	if s.Context == "" {
		s.Context = DefaultContext
	}
	name := adoStatusName{Name: s.Context}
	if g, n, ok := strings.Cut(s.Context, "/"); ok && g != "" && n != "" {
		name = adoStatusName{Genre: g, Name: n}
	}
	body := adoStatus{State: st, Description: truncate(s.Description, 140), TargetURL: s.TargetURL, Context: name}
	_, err := a.c.do(ctx, http.MethodPost, q(a.repoAPI()+"/commits/"+pathEscape(sha)+"/statuses"), body, nil)
	return err
}

func (a *azureDevOps) OpenPullRequests(ctx context.Context) ([]PullRequest, error) {
	var out []PullRequest
	const top = 100
	skip := 0
	for page := 0; page < maxPages; page++ {
		var resp struct {
			Value []struct {
				PullRequestID         int    `json:"pullRequestId"`
				Status                string `json:"status"`
				SourceRefName         string `json:"sourceRefName"`
				TargetRefName         string `json:"targetRefName"`
				LastMergeSourceCommit struct {
					CommitID string `json:"commitId"`
				} `json:"lastMergeSourceCommit"`
			} `json:"value"`
		}
		u := fmt.Sprintf("%s/pullrequests?searchCriteria.status=active&$top=%d&$skip=%d&api-version=%s", a.repoAPI(), top, skip, azureAPIVersion)
		if _, err := a.c.do(ctx, http.MethodGet, u, nil, &resp); err != nil {
			return nil, fmt.Errorf("list open pull requests: %w", err)
		}
		for _, p := range resp.Value {
			out = append(out, PullRequest{Number: p.PullRequestID, HeadSHA: p.LastMergeSourceCommit.CommitID,
				HeadRef: strings.TrimPrefix(p.SourceRefName, "refs/heads/"), BaseRef: strings.TrimPrefix(p.TargetRefName, "refs/heads/"),
				URL: a.webURL(p.PullRequestID), State: p.Status})
		}
		// The server may answer fewer than $top: ask until a page is empty.
		if len(resp.Value) == 0 {
			break
		}
		skip += len(resp.Value)
	}
	return out, nil
}
