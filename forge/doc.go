// Package forge posts plans to pull requests: one sticky comment per pull
// request, updated in place, split at the forge's size limit with the
// summary first, and a commit status with the summary line ("3 to create,
// 1 to delete") or a refused revision's first error. It knows GitHub
// (github.com and Enterprise Server), GitLab (SaaS and self-managed), Azure
// DevOps (Services and Server) and Gitea/Forgejo, reads the forge, pull
// request and token from the CI environment (Detect) and lists open pull
// requests.
//
// It renders nothing itself: Comment cuts what planner.RenderMarkdown
// writes into parts, and StatusOf uses planner.SummaryLine. Secret values
// are redacted by the plan; the token is never logged (Options implements
// slog.LogValuer) and never appears in an error.
//
// Posting a plan:
//
//	o, pr, sha, err := forge.Detect(os.Getenv) // or forge.Options{Kind: "github", Repo: "o/r", Token: tok}
//	f, err := forge.New(o)
//	parts := forge.Comment(plan, nil, forge.Limit(f.Name()), o.Marker)
//	urls, err := f.UpsertComment(ctx, pr, parts)
//	err = f.SetStatus(ctx, sha, forge.StatusOf(plan, nil))
//
// The sticky comment is found again by a hidden HTML comment in each part,
// "<!-- gitaso-plan part 1/2 -->": a later post edits those comments,
// adds parts when the plan grew and deletes the extra ones when it shrank.
//
// Approvals from pull requests (approve.go): every forge is an Approver
// that lists a pull request's comments with their authors, asks whether an
// author may write to the repository, replies in the comment's thread and
// finds the pull request of a merge commit. ProcessApprovals answers each
// "/gitaso approve <plan digest>" once: a writer's approves the held plan
// it names, any other is refused with the reason (docs/security.md).
//
// Each forge's requests are checked in the tests against that forge's
// published REST description (testdata/*-rest.json names the sources);
// Gitea's approvals run against a real Gitea (harness/forgetest).
package forge
