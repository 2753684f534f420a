package executor

import (
	"context"
	"errors"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// target is what aso's hooks know of r: its ARM place, its manifest's spec
// and, for kinds that check their owner, the owner as the plan declares it.
func (w *walk) target(r *planner.Resource) aso.Target {
	t := aso.Target{
		Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, AzureName: r.AzureName,
		ARMID: r.ARMID, APIVersion: r.APIVersion,
	}
	t.Spec, _ = r.Object()["spec"].(map[string]any)
	if r.Owner != "" && aso.HooksFor(r.Group, r.Kind).PreReconcileOwner != nil {
		if o := w.plan.Get(r.Owner); o != nil {
			t.OwnerName, t.OwnerARMID, t.OwnerAPIVersion = o.Name, o.ARMID, o.APIVersion
		}
	}
	return t
}

// beforePut runs ASO's hooks that come before a PUT, in ASO's order: the
// pre-reconcile checks (a blocked or postponed resource fails with ASO's
// reason, a Warning, and is retried by the next run), then the payload
// modifiers. docs/hooks.md lists every hook of the catalog and what gitaso
// does for it.
func (w *walk) beforePut(ctx context.Context, cli ARM, r *planner.Resource, rr *ResourceResult, body []byte) ([]byte, error) {
	ctx = aso.WithLogger(ctx, w.e.opts.Logger)
	t := w.target(r)
	if aso.HasPreReconcile(r.Group, r.Kind) {
		c, err := aso.PreReconcile(ctx, cli, t)
		rr.Requests++
		if err != nil {
			return nil, err
		}
		if c.Action != aso.Proceed {
			w.e.opts.Logger.InfoContext(ctx, "not sending the PUT", "resource", r.ID(), "check", c.Action.String(), "message", c.Message)
			return nil, &statusError{reason: c.Reason(), severity: record.SeverityWarning, msg: c.Message}
		}
	}
	return aso.ModifyPayload(ctx, cli, t, body)
}

// afterPut runs ASO's hooks that follow a successful PUT: the post-reconcile
// check (a resource still waiting for something outside the PUT is not
// Ready: PostReconciliationFailure, a Warning) and the success handler. It
// reports whether the resource is Ready; rr keeps its hash and body, since
// the PUT itself succeeded.
func (w *walk) afterPut(ctx context.Context, cli ARM, r *planner.Resource, rr *ResourceResult) bool {
	ctx = aso.WithLogger(ctx, w.e.opts.Logger)
	t := w.target(r)
	post, err := aso.PostReconcile(ctx, cli, t, rr.Response)
	if post.Status != nil {
		rr.Response = post.Status
	}
	if err == nil && !post.Ready {
		err = &statusError{reason: aso.ReasonPostReconcileFailure, severity: record.SeverityWarning, msg: post.Message}
	}
	if err == nil {
		var s aso.Success
		if s, err = aso.Succeeded(t, rr.Response); err == nil && s.ChildResourceID != "" {
			w.e.opts.Logger.InfoContext(ctx, "children live under", "resource", r.ID(), "id", s.ChildResourceID)
		}
	}
	if err != nil {
		rr.Outcome, rr.Err, rr.Ready = Failed, err, failedCondition(err)
		w.e.opts.Logger.WarnContext(ctx, "not ready after the PUT", "resource", r.ID(), "reason", rr.Ready.Reason, "message", rr.Ready.Message)
		return false
	}
	return true
}

// deleteResource deletes r as ASO does (the kind's custom delete, or a plain
// DELETE).
func (w *walk) deleteResource(ctx context.Context, cli ARM, r *planner.Resource) error {
	return aso.Delete(aso.WithLogger(ctx, w.e.opts.Logger), cli, w.target(r))
}

// classify applies the kind's error classifier to an ARM error: the
// returned error is a copy whose Retryable says what ASO would do.
func classify(r *planner.Resource, err error) error {
	var ae *azure.ARMError
	if r == nil || !errors.As(err, &ae) {
		return err
	}
	c := aso.Classify(r.Group, r.Kind, aso.CloudError{Code: ae.Code, Message: ae.Message})
	if (c == aso.Retryable) == ae.Retryable {
		return err
	}
	cp := *ae
	cp.Retryable = c == aso.Retryable
	return &cp
}
