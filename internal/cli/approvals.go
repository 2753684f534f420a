package cli

import (
	"context"
	"time"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/forge"
	"github.com/gitaso/gitaso/reconcile"
)

// startApprovals takes approvals from pull requests (issue 29): with
// --autoplan's forge, while the newest run is held, gitaso finds the pull
// request whose merge made the held revision, posts there what is held
// and the plan's digest (once per plan), and answers each "/gitaso approve
// <digest>" comment: a writer's approves the held plan (as
// reconcile.ApprovePlan, on behalf of the comment's author), any other is
// refused with the reason. It returns a function that looks at once (a
// webhook arrived), or nil without a forge.
func (s *settings) startApprovals(ctx context.Context, e *env, r *reconcile.Reconciler, audit *api.Auditor) func() {
	f := s.autoplan.forge
	if f == nil {
		return nil
	}
	ap, ok := f.(forge.Approver)
	if !ok {
		return nil
	}
	now := make(chan struct{}, 1)
	interval := s.autoplan.interval
	if interval <= 0 || interval > time.Minute {
		interval = time.Minute
	}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.approvalPass(ctx, e, ap, r, audit)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-now:
			}
		}
	}()
	return func() {
		select {
		case now <- struct{}{}:
		default:
		}
	}
}

// approvalPass handles the pull request of the newest run when it is held.
func (s *settings) approvalPass(ctx context.Context, e *env, ap forge.Approver, r *reconcile.Reconciler, audit *api.Auditor) {
	runs, _, err := e.db.RunPage(0, 1)
	if err != nil || len(runs) == 0 || runs[0].Held == nil {
		return
	}
	run := runs[0]
	pr, ok, err := ap.PullRequestOf(ctx, run.Revision)
	if err != nil {
		e.log.WarnContext(ctx, "approvals: finding the pull request of the held revision", "revision", run.Revision, "error", err)
		return
	}
	if !ok {
		return // a direct push: approve on the page or with the API
	}
	held := forge.Held{Revision: run.Revision, Plan: run.Held.PlanDigest(run.Revision), Deletions: len(run.Held.Keys),
		Namespaces: api.KeysNamespaces(run.Held.Keys)}
	if err := forge.PostHeld(ctx, ap, pr.Number, held, run.Held.Message); err != nil {
		e.log.WarnContext(ctx, "approvals: posting the held plan", "pullRequest", pr.Number, "error", err)
		return
	}
	res, err := forge.ProcessApprovals(ctx, ap, pr, forge.ApprovalOptions{
		Held:   held,
		Issuer: s.autoplan.url,
		Approve: func(ctx context.Context, by access.Identity, plan string) error {
			return r.ApprovePlan(access.WithIdentity(ctx, by), run.Revision, plan)
		},
		Audit: audit.Record,
	})
	if err != nil {
		e.log.WarnContext(ctx, "approvals: reading the pull request's comments", "pullRequest", pr.Number, "error", err)
	}
	if res.Approved+res.Refused > 0 {
		e.log.InfoContext(ctx, "approvals: pull request commands answered", "pullRequest", pr.Number, "approved", res.Approved, "refused", res.Refused)
	}
}
