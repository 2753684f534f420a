package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Approvals on GitHub and Gitea: issue comments with their authors, the
// collaborator permission of the author (GitHub: GET
// /repos/{owner}/{repo}/collaborators/{username}/permission, "admin",
// "write" — maintainers too —, "read" or "none"; Gitea: the same path,
// "owner", "admin", "write", "read" or "none"), a reply as a new comment,
// and the pull request of a merge commit (GitHub: GET
// /repos/{owner}/{repo}/commits/{sha}/pulls; Gitea: GET
// /repos/{owner}/{repo}/commits/{sha}/pull).

type ghAuthoredComment struct {
	ID      int64  `json:"id"`
	Body    string `json:"body"`
	HTMLURL string `json:"html_url"`
	User    struct {
		Login string `json:"login"`
		ID    int64  `json:"id"`
	} `json:"user"`
}

func (g *gitHub) Comments(ctx context.Context, pr int) ([]PRComment, error) {
	var out []PRComment
	next := fmt.Sprintf("%s/issues/%d/comments?per_page=100", g.repoURL(), pr)
	if g.kind == "gitea" {
		next = fmt.Sprintf("%s/issues/%d/comments", g.repoURL(), pr)
	}
	for page := 0; next != "" && page < maxPages; page++ {
		var cs []ghAuthoredComment
		h, err := g.c.do(ctx, http.MethodGet, next, nil, &cs)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			out = append(out, PRComment{ID: strconv.FormatInt(c.ID, 10), Author: c.User.Login, AuthorID: strconv.FormatInt(c.User.ID, 10),
				Body: c.Body, URL: c.HTMLURL})
		}
		next = nextLink(h)
	}
	return out, nil
}

func (g *gitHub) CanWrite(ctx context.Context, c PRComment) (bool, string, error) {
	if c.Author == "" {
		return false, "none", nil
	}
	var p struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	_, err := g.c.do(ctx, http.MethodGet, g.repoURL()+"/collaborators/"+pathEscape(c.Author)+"/permission", nil, &p)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound {
		return false, "none", nil
	}
	if err != nil {
		return false, "", err
	}
	switch p.Permission {
	case "owner", "admin", "write":
		return true, p.Permission, nil
	}
	return false, p.Permission, nil
}

func (g *gitHub) Reply(ctx context.Context, pr int, _ PRComment, body string) error {
	_, err := g.create(ctx, pr, body)
	return err
}

func (g *gitHub) PullRequestOf(ctx context.Context, sha string) (PullRequest, bool, error) {
	conv := func(p ghPull) PullRequest {
		return PullRequest{Number: p.Number, HeadSHA: p.Head.SHA, HeadRef: p.Head.Ref, BaseRef: p.Base.Ref, URL: p.HTMLURL, State: p.State}
	}
	if g.kind == "gitea" {
		var p ghPull
		_, err := g.c.do(ctx, http.MethodGet, g.repoURL()+"/commits/"+pathEscape(sha)+"/pull", nil, &p)
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound {
			return PullRequest{}, false, nil
		}
		if err != nil {
			return PullRequest{}, false, err
		}
		return conv(p), p.Number > 0, nil
	}
	var ps []struct {
		ghPull
		MergeCommitSHA string `json:"merge_commit_sha"`
	}
	if _, err := g.c.do(ctx, http.MethodGet, g.repoURL()+"/commits/"+pathEscape(sha)+"/pulls", nil, &ps); err != nil {
		return PullRequest{}, false, err
	}
	for _, p := range ps {
		if p.MergeCommitSHA == sha {
			return conv(p.ghPull), true, nil
		}
	}
	if len(ps) > 0 {
		return conv(ps[0].ghPull), true, nil
	}
	return PullRequest{}, false, nil
}
