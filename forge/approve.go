package forge

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/record"
)

// Approvals from a pull request (issue 29): a held revision (a mass
// deletion, a cascade over unmanaged resources) is approved by a comment
//
//	/gitaso approve <plan digest>
//
// on the pull request that caused it, written by a user whom the forge says
// may write to the repository. The digest (record.Hold.PlanDigest, shown in
// gitaso's comment) names the exact plan: a changed plan has another digest
// and needs a new approval. gitaso answers every command in the same
// thread, once: its answer carries a hidden marker naming the command's
// comment.

// ApproveCommand starts an approval comment.
const ApproveCommand = "/gitaso approve"

// PRComment is one comment of a pull request with its author.
type PRComment struct {
	ID string
	// Author is the author's login (GitHub, Gitea, GitLab username, Azure
	// DevOps uniqueName); AuthorID the forge's ID of the author (GitLab's
	// user ID, Azure DevOps' identity ID), when it has one.
	Author, AuthorID string
	Body, URL        string
	// Thread is the comment's thread (Azure DevOps), where a reply goes.
	Thread string
}

// Approver is what approvals from pull requests need of a forge; every
// forge of New implements it.
type Approver interface {
	Forge
	// Comments lists a pull request's comments, oldest first.
	Comments(ctx context.Context, pr int) ([]PRComment, error)
	// CanWrite reports whether the author of c may write to the
	// repository, as the forge says, and the permission it named.
	CanWrite(ctx context.Context, c PRComment) (ok bool, permission string, err error)
	// Reply answers c in its thread (GitHub, Gitea and GitLab: the pull
	// request's conversation; Azure DevOps: c's thread).
	Reply(ctx context.Context, pr int, c PRComment, body string) error
	// PullRequestOf returns the pull request whose merge made commit sha, or
	// ok false when none did (a direct push).
	PullRequestOf(ctx context.Context, sha string) (pr PullRequest, ok bool, err error)
}

var approveRE = regexp.MustCompile(`(?m)^\s*/gitaso\s+approve(?:\s+([0-9A-Za-z]*))?\s*$`)

// ParseApprove reports whether body is an approval command and the plan
// digest it names ("" when it names none).
func ParseApprove(body string) (plan string, ok bool) {
	m := approveRE.FindStringSubmatch(body)
	if m == nil {
		return "", false
	}
	return strings.ToLower(m[1]), true
}

// replyMarker marks gitaso's answer to the command of comment id.
func replyMarker(id string) string { return "<!-- gitaso-approval-reply " + id + " -->" }

// Held is the held plan a pull request's comments may approve.
type Held struct {
	Revision string
	// Plan is the held plan's digest (record.Hold.PlanDigest).
	Plan string
	// Deletions is how many deletions are held; Namespaces the namespaces
	// they are in.
	Deletions  int
	Namespaces []string
}

// ApprovalOptions say what ProcessApprovals approves and records.
type ApprovalOptions struct {
	Held Held
	// Approve approves the held plan of Held.Revision whose digest is plan,
	// on behalf of by (reconcile.ApprovePlan with by in ctx).
	Approve func(ctx context.Context, by access.Identity, plan string) error
	// Audit records each approval and refusal (nil: none).
	Audit func(ctx context.Context, e record.AuditEvent)
	// Issuer names the forge in the approvers' identities (its URL).
	Issuer string
}

// ApprovalResult counts what ProcessApprovals did.
type ApprovalResult struct {
	Approved, Refused int
}

// ErrNoApprover is returned by ProcessApprovals for a forge that does not
// implement Approver.
var ErrNoApprover = errors.New("the forge does not take approvals from pull requests")

// ProcessApprovals answers each approval command of pull request pr that
// gitaso has not answered yet: a writer's command naming the held plan
// approves it; any other is refused with a reply saying why (the author
// may not write, the command names no plan or another plan, nothing is
// held).
func ProcessApprovals(ctx context.Context, f Forge, pr PullRequest, o ApprovalOptions) (ApprovalResult, error) {
	var res ApprovalResult
	ap, ok := f.(Approver)
	if !ok {
		return res, fmt.Errorf("%w: %s", ErrNoApprover, f.Name())
	}
	cs, err := ap.Comments(ctx, pr.Number)
	if err != nil {
		return res, fmt.Errorf("read the comments of pull request %d: %w", pr.Number, err)
	}
	answered := map[string]bool{}
	for _, c := range cs {
		if i := strings.Index(c.Body, "<!-- gitaso-approval-reply "); i >= 0 {
			id, _, _ := strings.Cut(c.Body[i+len("<!-- gitaso-approval-reply "):], " ")
			answered[id] = true
		}
	}
	for _, c := range cs {
		if answered[c.ID] || strings.Contains(c.Body, "<!-- gitaso") {
			continue
		}
		plan, ok := ParseApprove(c.Body)
		if !ok {
			continue
		}
		approved, reply := handleApproval(ctx, ap, pr, c, plan, o)
		if approved {
			res.Approved++
		} else {
			res.Refused++
		}
		if err := ap.Reply(ctx, pr.Number, c, reply+"\n\n"+replyMarker(c.ID)); err != nil {
			return res, fmt.Errorf("answer the approval of %s on pull request %d: %w", c.Author, pr.Number, err)
		}
	}
	return res, nil
}

func handleApproval(ctx context.Context, ap Approver, pr PullRequest, c PRComment, plan string, o ApprovalOptions) (bool, string) {
	by := access.Identity{Kind: access.Forge, Subject: c.Author, Name: ap.Name() + " " + c.Author, Issuer: o.Issuer}
	ev := record.AuditEvent{Action: record.AuditApprove, Who: by.String(), Kind: string(by.Kind), Subject: by.Subject, Issuer: by.Issuer,
		From: firstNonEmpty(c.URL, pr.URL), Revision: o.Held.Revision, Plan: plan, Right: string(access.Approve), Namespaces: o.Held.Namespaces}
	refuse := func(why string) (bool, string) {
		ev.Outcome, ev.Detail = record.AuditRefused, why
		if o.Audit != nil {
			o.Audit(ctx, ev)
		}
		return false, "@" + c.Author + ": not approved: " + why
	}
	switch {
	case o.Held.Plan == "":
		return refuse("gitaso holds nothing for approval now")
	case plan == "":
		return refuse(fmt.Sprintf("name the plan you approve: `%s %s` (revision %s, %d deletions in %s)",
			ApproveCommand, o.Held.Plan, shortSHA(o.Held.Revision), o.Held.Deletions, strings.Join(o.Held.Namespaces, ", ")))
	case plan != o.Held.Plan:
		return refuse(fmt.Sprintf("plan %s is not the held plan: gitaso holds plan %s (revision %s, %d deletions in %s); a changed plan needs a new approval: `%s %s`",
			plan, o.Held.Plan, shortSHA(o.Held.Revision), o.Held.Deletions, strings.Join(o.Held.Namespaces, ", "), ApproveCommand, o.Held.Plan))
	}
	ok, perm, err := ap.CanWrite(ctx, c)
	if err != nil {
		return refuse(fmt.Sprintf("gitaso could not read %s's permission on the repository: %v", c.Author, err))
	}
	if !ok {
		return refuse(fmt.Sprintf("%s says %s's permission on the repository is %q; approving needs write", ap.Name(), c.Author, perm))
	}
	if err := o.Approve(ctx, by, plan); err != nil {
		ev.Outcome, ev.Detail = record.AuditFailed, err.Error()
		if o.Audit != nil {
			o.Audit(ctx, ev)
		}
		return false, "@" + c.Author + ": the approval failed: " + err.Error()
	}
	ev.Outcome, ev.Right = record.AuditAllowed, ""
	if o.Audit != nil {
		o.Audit(ctx, ev)
	}
	return true, fmt.Sprintf("Approved by @%s (%s permission): plan %s, revision %s, %d deletions in %s. gitaso applies it now.",
		c.Author, perm, plan, shortSHA(o.Held.Revision), o.Held.Deletions, strings.Join(o.Held.Namespaces, ", "))
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// HeldComment is the comment gitaso posts on the pull request that caused a
// held revision: what is held and how to approve it.
func HeldComment(h Held, message string) string {
	return fmt.Sprintf("<!-- gitaso-held %s -->\n**gitaso holds revision %s**: %s\n\nPlan `%s`: %d deletions in %s. "+
		"A user who may write to this repository approves it with a comment:\n\n    %s %s\n\nA changed plan has another digest and needs a new approval.",
		h.Plan, shortSHA(h.Revision), message, h.Plan, h.Deletions, strings.Join(h.Namespaces, ", "), ApproveCommand, h.Plan)
}

// PostHeld posts HeldComment on pr once per plan digest (nothing when a
// comment for that digest is there already).
func PostHeld(ctx context.Context, f Forge, pr int, h Held, message string) error {
	ap, ok := f.(Approver)
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoApprover, f.Name())
	}
	cs, err := ap.Comments(ctx, pr)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if strings.Contains(c.Body, "<!-- gitaso-held "+h.Plan+" -->") {
			return nil
		}
	}
	b, ok := f.(interface {
		create(ctx context.Context, pr int, body string) (stored, error)
	})
	if !ok {
		return fmt.Errorf("%s: cannot post a comment", f.Name())
	}
	_, err = b.create(ctx, pr, HeldComment(h, message))
	return err
}

var (
	_ Approver = (*gitHub)(nil)
	_ Approver = (*gitLab)(nil)
	_ Approver = (*azureDevOps)(nil)
)
