package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Approvals on Azure DevOps: the comments of every pull request thread with
// their authors, a reply in the comment's thread (POST
// .../threads/{threadId}/comments with parentCommentId), the pull request a
// merge commit completed (searchCriteria.status=completed, matched on
// lastMergeCommit), and whether the author may contribute to the
// repository: the Git Repositories security namespace's GenericContribute
// bit (4) in the effective permissions of the author's identity descriptor
// on the repository's token repoV2/{projectId}/{repositoryId} (GET
// _apis/accesscontrollists/{namespace}?token=&descriptors=&includeExtendedInfo=true,
// the descriptor read from GET _apis/identities?identityIds=, on
// vssps.dev.azure.com for Azure DevOps Services).

const (
	// adoGitNamespace is the Git Repositories security namespace.
	adoGitNamespace = "2e9eb7ed-3c0a-47d4-87c1-0ffdd275fd87"
	// adoGenericContribute is its "Contribute" bit (push).
	adoGenericContribute = 4
)

type adoAuthor struct {
	ID         string `json:"id"`
	UniqueName string `json:"uniqueName"`
}

func (a *azureDevOps) Comments(ctx context.Context, pr int) ([]PRComment, error) {
	var resp struct {
		Value []struct {
			ID        int  `json:"id"`
			IsDeleted bool `json:"isDeleted"`
			Comments  []struct {
				adoComment
				Author adoAuthor `json:"author"`
			} `json:"comments"`
		} `json:"value"`
	}
	if _, err := a.c.do(ctx, http.MethodGet, q(a.threadsURL(pr)), nil, &resp); err != nil {
		return nil, err
	}
	var out []PRComment
	for _, t := range resp.Value {
		if t.IsDeleted {
			continue
		}
		for _, c := range t.Comments {
			if c.IsDeleted || c.CommentType == "system" {
				continue
			}
			out = append(out, PRComment{ID: strconv.Itoa(t.ID) + "/" + strconv.Itoa(c.ID), Author: c.Author.UniqueName, AuthorID: c.Author.ID,
				Body: c.Content, URL: a.webURL(pr) + "?discussionId=" + strconv.Itoa(t.ID), Thread: strconv.Itoa(t.ID)})
		}
	}
	return out, nil
}

func (a *azureDevOps) Reply(ctx context.Context, pr int, c PRComment, body string) error {
	_, cid, _ := strings.Cut(c.ID, "/")
	parent, _ := strconv.Atoi(cid)
	in := adoComment{ParentCommentID: parent, Content: body, CommentType: "text"}
	_, err := a.c.do(ctx, http.MethodPost, q(fmt.Sprintf("%s/%s/comments", a.threadsURL(pr), pathEscape(c.Thread))), in, nil)
	return err
}

// identityBase is where the identities API is: vssps.dev.azure.com/ORG for
// Azure DevOps Services, the collection itself for Server.
func (a *azureDevOps) identityBase() string {
	u, err := url.Parse(a.base)
	if err == nil && strings.EqualFold(u.Host, "dev.azure.com") {
		u.Host = "vssps.dev.azure.com"
		return u.String()
	}
	return a.base
}

func (a *azureDevOps) CanWrite(ctx context.Context, c PRComment) (bool, string, error) {
	if c.AuthorID == "" {
		return false, "none", nil
	}
	var ids struct {
		Value []struct {
			Descriptor string `json:"descriptor"`
		} `json:"value"`
	}
	if _, err := a.c.do(ctx, http.MethodGet, a.identityBase()+"/_apis/identities?identityIds="+url.QueryEscape(c.AuthorID)+"&api-version="+azureAPIVersion, nil, &ids); err != nil {
		return false, "", fmt.Errorf("read the identity of %s: %w", c.Author, err)
	}
	if len(ids.Value) == 0 || ids.Value[0].Descriptor == "" {
		return false, "none", nil
	}
	desc := ids.Value[0].Descriptor
	var repo struct {
		ID      string `json:"id"`
		Project struct {
			ID string `json:"id"`
		} `json:"project"`
	}
	if _, err := a.c.do(ctx, http.MethodGet, q(a.repoAPI()), nil, &repo); err != nil {
		return false, "", fmt.Errorf("read the repository: %w", err)
	}
	var acls struct {
		Value []struct {
			AcesDictionary map[string]struct {
				ExtendedInfo struct {
					EffectiveAllow int `json:"effectiveAllow"`
				} `json:"extendedInfo"`
			} `json:"acesDictionary"`
		} `json:"value"`
	}
	u := fmt.Sprintf("%s/_apis/accesscontrollists/%s?token=%s&descriptors=%s&includeExtendedInfo=true&api-version=%s", a.base, adoGitNamespace,
		url.QueryEscape("repoV2/"+repo.Project.ID+"/"+repo.ID), url.QueryEscape(desc), azureAPIVersion)
	if _, err := a.c.do(ctx, http.MethodGet, u, nil, &acls); err != nil {
		return false, "", fmt.Errorf("read the permissions of %s: %w", c.Author, err)
	}
	for _, acl := range acls.Value {
		if ace, ok := acl.AcesDictionary[desc]; ok && ace.ExtendedInfo.EffectiveAllow&adoGenericContribute != 0 {
			return true, "contribute", nil
		}
	}
	return false, "no contribute", nil
}

func (a *azureDevOps) PullRequestOf(ctx context.Context, sha string) (PullRequest, bool, error) {
	const top = 100
	skip := 0
	for page := 0; page < 10; page++ {
		var resp struct {
			Value []struct {
				PullRequestID   int    `json:"pullRequestId"`
				Status          string `json:"status"`
				SourceRefName   string `json:"sourceRefName"`
				TargetRefName   string `json:"targetRefName"`
				LastMergeCommit struct {
					CommitID string `json:"commitId"`
				} `json:"lastMergeCommit"`
			} `json:"value"`
		}
		u := fmt.Sprintf("%s/pullrequests?searchCriteria.status=completed&$top=%d&$skip=%d&api-version=%s", a.repoAPI(), top, skip, azureAPIVersion)
		if _, err := a.c.do(ctx, http.MethodGet, u, nil, &resp); err != nil {
			return PullRequest{}, false, fmt.Errorf("list completed pull requests: %w", err)
		}
		for _, p := range resp.Value {
			if strings.EqualFold(p.LastMergeCommit.CommitID, sha) {
				return PullRequest{Number: p.PullRequestID, HeadRef: strings.TrimPrefix(p.SourceRefName, "refs/heads/"),
					BaseRef: strings.TrimPrefix(p.TargetRefName, "refs/heads/"), URL: a.webURL(p.PullRequestID), State: p.Status}, true, nil
			}
		}
		if len(resp.Value) == 0 {
			break
		}
		skip += len(resp.Value)
	}
	return PullRequest{}, false, nil
}
