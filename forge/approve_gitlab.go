package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Approvals on GitLab: merge request notes with their authors, the
// author's access level on the project (GET
// /projects/:id/members/all/:user_id, members inherited from groups
// included: Developer (30) and above may push, so may approve), a reply
// as a new note, and the merge request of a commit (GET
// /projects/:id/repository/commits/:sha/merge_requests).

// gitLabDeveloper is GitLab's access level of a Developer, the first that
// may push.
const gitLabDeveloper = 30

var gitLabLevels = map[int]string{0: "none", 5: "minimal", 10: "guest", 15: "planner", 20: "reporter", 30: "developer", 40: "maintainer", 50: "owner"}

func (g *gitLab) Comments(ctx context.Context, iid int) ([]PRComment, error) {
	var out []PRComment
	next := g.mrURL(iid) + "/notes?sort=asc&order_by=created_at&per_page=100"
	for page := 0; next != "" && page < maxPages; page++ {
		var ns []struct {
			glNote
			Author struct {
				ID       int64  `json:"id"`
				Username string `json:"username"`
			} `json:"author"`
		}
		h, err := g.c.do(ctx, http.MethodGet, next, nil, &ns)
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			if n.System {
				continue
			}
			s := g.note(ctx, iid, n.glNote)
			out = append(out, PRComment{ID: s.id, Author: n.Author.Username, AuthorID: strconv.FormatInt(n.Author.ID, 10), Body: s.body, URL: s.url})
		}
		next = nextLink(h)
	}
	return out, nil
}

func (g *gitLab) CanWrite(ctx context.Context, c PRComment) (bool, string, error) {
	if c.AuthorID == "" || c.AuthorID == "0" {
		return false, "none", nil
	}
	var m struct {
		AccessLevel int    `json:"access_level"`
		State       string `json:"state"`
	}
	_, err := g.c.do(ctx, http.MethodGet, fmt.Sprintf("%s/projects/%s/members/all/%s", g.api, g.project, pathEscape(c.AuthorID)), nil, &m)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound {
		return false, "none", nil
	}
	if err != nil {
		return false, "", err
	}
	name := gitLabLevels[m.AccessLevel]
	if name == "" {
		name = strconv.Itoa(m.AccessLevel)
	}
	return m.AccessLevel >= gitLabDeveloper && (m.State == "" || m.State == "active"), name, nil
}

func (g *gitLab) Reply(ctx context.Context, iid int, _ PRComment, body string) error {
	_, err := g.create(ctx, iid, body)
	return err
}

func (g *gitLab) PullRequestOf(ctx context.Context, sha string) (PullRequest, bool, error) {
	var ms []struct {
		glMR
		MergeCommitSHA  string `json:"merge_commit_sha"`
		SquashCommitSHA string `json:"squash_commit_sha"`
	}
	if _, err := g.c.do(ctx, http.MethodGet, fmt.Sprintf("%s/projects/%s/repository/commits/%s/merge_requests", g.api, g.project, pathEscape(sha)), nil, &ms); err != nil {
		return PullRequest{}, false, err
	}
	conv := func(m glMR) PullRequest {
		return PullRequest{Number: m.IID, HeadSHA: m.SHA, HeadRef: m.SourceBranch, BaseRef: m.TargetBranch, URL: m.WebURL, State: m.State}
	}
	for _, m := range ms {
		if m.MergeCommitSHA == sha || m.SquashCommitSHA == sha {
			return conv(m.glMR), true, nil
		}
	}
	if len(ms) > 0 {
		return conv(ms[0].glMR), true, nil
	}
	return PullRequest{}, false, nil
}
