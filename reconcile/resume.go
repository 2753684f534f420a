package reconcile

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// Resuming operations: a run records each long-running PUT or DELETE as it
// starts (record.Operation with ARM's poll URL) and forgets it with its
// result. Operations still recorded when a run starts were left in flight by
// a process that stopped; they are polled to their end (azure.Client.Resume,
// what ASO does with its poller-resume-token annotation) before anything is
// planned, so that no second PUT or DELETE is sent while ARM still runs the
// first one (most resource providers answer it with 409 Conflict), and their
// outcome is recorded like any apply result.
//
// The operation does not record the body that was sent, so a resumed PUT
// counts as the application of the current manifest only when that is
// certain to be the same request: the body is fully known, has no secrets
// (never read back) and no exports (computed from an apply's response), and
// the resource ARM now holds has every field the manifest sets (the planner's
// drift check against the resumed resource says no-op). Otherwise the
// resource is recorded Ready and the plan PUTs the manifest again, once the
// first operation is over.

// resumed is one operation polled to its end.
type resumed struct {
	op         record.Operation
	apiVersion string
	final      json.RawMessage
	err        error
}

// resumeOperations resumes the recorded operations and records their
// outcome. It returns the prior state to plan with (read again when an
// operation was resumed). When ctx ends first, the operations stay recorded.
func (r *Reconciler) resumeOperations(ctx context.Context, g *planner.Graph, prior map[string]record.Resource, outputs planner.Outputs) (map[string]record.Resource, planner.Outputs, error) {
	ops, err := r.db.Operations()
	if err != nil || len(ops) == 0 {
		return prior, outputs, err
	}
	cf := &clientsFor{r: r, g: g}
	res := make([]resumed, len(ops))
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.cfg.Parallelism)
	for i, op := range ops {
		pr := prior[op.Key]
		apiVersion := pr.APIVersion
		if n := g.Node(op.Key); n != nil && strings.EqualFold(n.ARMID, op.ARMID) {
			apiVersion = n.Kind.APIVersion
		}
		res[i] = resumed{op: op, apiVersion: apiVersion}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cli, err := cf.client(pr.Credential)
			if err != nil {
				res[i].err = err
				return
			}
			r.log.InfoContext(ctx, "resuming operation left in flight", "resource", op.Key, "method", op.Method,
				"armId", op.ARMID, "startedAt", op.StartedAt, "credential", pr.Credential)
			res[i].final, res[i].err = cli.Resume(ctx, op.Method, op.ARMID, apiVersion, op.PollURL)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	now := time.Now().UTC()
	// The operations were gitaso's writes: their events in the Activity Log
	// (an operation's end comes after this start) are no other writer's.
	r.activity.mu.Lock()
	r.activity.init()
	for _, o := range res {
		r.activity.noteWrite(o.op.ARMID, o.op.StartedAt, now, false)
	}
	r.activity.mu.Unlock()
	if err := r.db.Update(func(w *state.Writer) error {
		for _, o := range res {
			if err := r.recordResumed(w, g, prior, outputs, o, now); err != nil {
				return err
			}
			if err := w.DeleteOperation(o.op.Key); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	return r.priorState()
}

// recordResumed records the outcome of one resumed operation.
func (r *Reconciler) recordResumed(w *state.Writer, g *planner.Graph, prior map[string]record.Resource, outputs planner.Outputs, o resumed, now time.Time) error {
	key, del := o.op.Key, strings.EqualFold(o.op.Method, "DELETE")
	s, ok, err := w.Resource(key)
	if err != nil {
		return err
	}
	if !ok {
		r.log.Warn("resumed operation of a resource not in state", "resource", key, "method", o.op.Method, "error", o.err)
		return nil
	}
	gen := max(s.Generation, s.Ready.ObservedGeneration)
	if o.err != nil {
		r.log.Warn("resumed operation failed", "resource", key, "method", o.op.Method, "error", o.err)
		setReady(&s, s.Ready, executor.FailedCondition(o.err), gen, now)
		return w.PutResource(s)
	}
	if del {
		r.log.Info("resumed operation finished", "resource", key, "method", o.op.Method)
		return forget(w, key, s)
	}
	cond := record.Condition{Type: record.ConditionReady, Status: record.StatusTrue, Reason: "Succeeded"}
	confirmed := false
	if h, body, ok := r.sameRequest(g, prior, outputs, o, cond); ok {
		confirmed = true
		s.ARMID, s.APIVersion, s.AppliedHash, s.AppliedBody, s.Revision = o.op.ARMID, o.apiVersion, h, body, g.Revision
		if h != s.DesiredHash {
			s.DesiredHash = h
			s.Generation++
		}
		gen = max(gen, s.Generation)
	}
	s.Generation = max(s.Generation, gen)
	setReady(&s, s.Ready, cond, gen, now)
	r.log.Info("resumed operation finished", "resource", key, "method", o.op.Method, "appliedCurrentManifest", confirmed)
	return w.PutResource(s)
}

// sameRequest reports whether the resumed PUT certainly applied what the
// current manifest asks for (see the comment at the top), with the hash and
// body to record as applied.
func (r *Reconciler) sameRequest(g *planner.Graph, prior map[string]record.Resource, outputs planner.Outputs, o resumed, ready record.Condition) (string, json.RawMessage, bool) {
	n := g.Node(o.op.Key)
	if n == nil || !strings.EqualFold(n.ARMID, o.op.ARMID) || len(n.Exports) > 0 || o.apiVersion != n.Kind.APIVersion || len(o.final) == 0 {
		return "", nil, false
	}
	body, err := g.Convert(n, outputs)
	if err != nil || len(body.Unknown) > 0 || len(body.Secrets) > 0 {
		return "", nil, false
	}
	h := planner.HashRequest(n.ARMID+"?api-version="+n.Kind.APIVersion, body.JSON)
	tentative := make(map[string]record.Resource, len(prior))
	for k, v := range prior {
		tentative[k] = v
	}
	t := tentative[o.op.Key]
	t.ARMID, t.APIVersion, t.AppliedHash, t.Ready = n.ARMID, n.Kind.APIVersion, h, ready
	tentative[o.op.Key] = t
	p, err := g.Plan(planner.Input{Prior: tentative, Outputs: outputs,
		Observed: planner.Observed{strings.ToLower(n.ARMID): o.final}})
	if err != nil {
		return "", nil, false
	}
	pr := p.Get(o.op.Key)
	if pr == nil || pr.Action != planner.NoOp {
		return "", nil, false
	}
	return h, json.RawMessage(body.JSON), true
}
