package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// ARM is what ASO's rules ask of an ARM client (aso.ARM); the executor
// hands them an *azure.Client.
type ARM = aso.ARM

// Clients returns the ARM client for a plan's credential name ("global" or
// "namespace/secret"). The executor gives each resource's calls their own
// options (azure.Client.With): the resource's share of the parallelism, and
// for its PUT or DELETE the hook that records a long-running operation.
type Clients interface {
	For(ctx context.Context, credential string) (*azure.Client, error)
}

// Options tune an Executor.
type Options struct {
	// Parallelism bounds concurrent ARM operations per subscription
	// (default 16): ARM throttles each subscription on its own. An
	// operation waiting between the polls of a long-running operation
	// gives its share back meanwhile (azure.Slot).
	Parallelism int
	// Logger receives progress; default slog.Default().
	Logger *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
	// OnResult, when set, is called with each resource's result as soon as
	// it is known (from the goroutine that produced it), so that the caller
	// can record progress before the whole plan has run.
	OnResult func(*ResourceResult)
	// OnOperation, when set, is called (from the goroutine applying the
	// resource) when a PUT or DELETE starts a long-running operation, with
	// done false and the operation's poll URL, before the executor waits for
	// it; and again with done true when the wait ends, successfully or not.
	// It is not called with done true when the wait ended because ctx was
	// cancelled: the operation still runs in Azure, and whoever recorded it
	// can resume it (azure.Client.Resume).
	OnOperation func(op record.Operation, done bool)
}

// DefaultOptions returns the defaults.
func DefaultOptions() Options { return Options{Parallelism: 16} }

// Executor applies plans.
type Executor struct {
	clients Clients
	opts    Options
}

// New returns an executor using clients for ARM.
func New(clients Clients, opts Options) *Executor {
	if opts.Parallelism <= 0 {
		opts.Parallelism = 16
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Executor{clients: clients, opts: opts}
}

// Outcome is what happened to one resource.
type Outcome string

// The outcomes.
const (
	Applied   Outcome = "applied"
	Unchanged Outcome = "unchanged"
	Observed  Outcome = "observed"
	// Adopted: an adoption without a write (planner.Resource.NoWrite):
	// Azure held what the manifest sets, read and recorded as applied.
	Adopted  Outcome = "adopted"
	Deleted  Outcome = "deleted"
	Detached Outcome = "detached"
	Failed   Outcome = "failed"
	Skipped  Outcome = "skipped" // a dependency failed
)

// ResourceResult is the result for one plan entry.
type ResourceResult struct {
	Key      string
	Resource *planner.Resource
	Outcome  Outcome
	Ready    record.Condition
	Hash     string          // hash of the body sent (applied)
	Body     json.RawMessage // the body sent, secrets redacted (applied)
	Response json.RawMessage // ARM's final resource (applied/observed)
	Outputs  map[string]map[string]string
	Secrets  map[string]map[string]string
	Err      error
	// SecretHashes are the hashes of the fields holding values substituted
	// from Secrets (planner.SecretHashes), to tell which one changed later.
	SecretHashes map[string]string
	// RetryAfter is ARM's Retry-After for a failure worth retrying (a
	// Warning), zero when ARM gave none or the failure is fatal (an Error:
	// no retry until the manifest changes).
	RetryAfter time.Duration
	Duration   time.Duration
	Requests   int
	StartedAt  time.Time
}

// Result is the outcome of one Apply.
type Result struct {
	Revision  string
	Resources []*ResourceResult // plan order
	Started   time.Time
	Finished  time.Time
}

// Counts tallies outcomes.
func (r *Result) Counts() map[string]int {
	m := map[string]int{}
	for _, rr := range r.Resources {
		m[string(rr.Outcome)]++
	}
	return m
}

// Retry reports whether a retry may succeed without a change of the manifests
// (some resource failed with Warning severity; resources skipped for a failed
// dependency follow that dependency), and the earliest Retry-After ARM asked
// for among them (zero when none did).
func (r *Result) Retry() (retryable bool, after time.Duration) {
	for _, rr := range r.Resources {
		if rr == nil || rr.Outcome != Failed || rr.Ready.Severity == record.SeverityError {
			continue
		}
		retryable = true
		if rr.RetryAfter > 0 && (after == 0 || rr.RetryAfter < after) {
			after = rr.RetryAfter
		}
	}
	return retryable, after
}

// Failed reports whether any resource failed or was skipped.
func (r *Result) Failed() bool {
	for _, rr := range r.Resources {
		if rr.Outcome == Failed || rr.Outcome == Skipped {
			return true
		}
	}
	return false
}

// Apply runs the plan: writes in dependency order with bounded parallelism
// (a failure skips only its descendants), then deletions in reverse
// dependency order. Everything it needs is in the plan, which may have been
// read back from JSON, and in v: the exported values known before the run
// (v.Outputs, not modified) and the Secrets the requests read (v.Secrets).
func (e *Executor) Apply(ctx context.Context, p *planner.Plan, v planner.Values) (*Result, error) {
	res := &Result{Revision: p.Revision, Started: e.opts.Now()}
	w := &walk{e: e, plan: p, secrets: v.Secrets, outputs: planner.Outputs{}, results: map[string]*ResourceResult{}}
	for k, val := range v.Outputs {
		w.outputs[k] = val
	}
	var writes, deletes []*planner.Resource
	for _, r := range p.Resources {
		if r.Action == planner.Delete || r.Action == planner.Detach {
			deletes = append(deletes, r)
		} else {
			writes = append(writes, r)
		}
	}
	w.run(ctx, writes)
	w.runDeletes(ctx, deletes)
	for _, r := range p.Resources {
		res.Resources = append(res.Resources, w.results[r.Key()])
	}
	res.Finished = e.opts.Now()
	return res, ctx.Err()
}

type walk struct {
	e       *Executor
	plan    *planner.Plan
	secrets planner.SecretSource
	mu      sync.RWMutex
	// outputs grow as producers are applied (export, under mu); a request
	// is resolved under the read lock instead of against a copy, which
	// cost O(outputs) per resource: 67 MB held by the applies in flight at
	// 100,000 resources.
	outputs planner.Outputs
	results map[string]*ResourceResult
}

func (w *walk) setResult(rr *ResourceResult) {
	w.mu.Lock()
	w.results[rr.Key] = rr
	w.mu.Unlock()
	if w.e.opts.OnResult != nil {
		w.e.opts.OnResult(rr)
	}
}

// run walks the write graph: a vertex starts when all its dependencies in the
// plan have finished; a failed or skipped dependency skips it.
func (w *walk) run(ctx context.Context, rs []*planner.Resource) {
	skip := func(r *planner.Resource) bool {
		if blocker := w.blocker(r); blocker != nil {
			w.setResult(blocker)
			return true
		}
		return false
	}
	walkDAG(rs, func(r *planner.Resource) []string { return r.DependsOn }, w.slots(), skip, func(r *planner.Resource, s *slot) {
		rr := w.apply(ctx, r, s)
		s.done()
		w.setResult(rr)
	})
}

// slots bounds concurrent operations per subscription: ARM throttles each
// subscription on its own, so one waiting for its bucket never holds up
// another's work (a plan across 20 subscriptions applies them in parallel).
func (w *walk) slots() func(*planner.Resource) chan struct{} {
	var mu sync.Mutex
	sems := map[string]chan struct{}{}
	return func(r *planner.Resource) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		key := strings.ToLower(r.Subscription)
		s := sems[key]
		if s == nil {
			s = make(chan struct{}, w.e.opts.Parallelism)
			sems[key] = s
		}
		return s
	}
}

// slot is one resource's share of its subscription's parallelism. Its
// long-running operations hand it back while they wait between polls
// (azure.Slot), so the bound is on operations talking to ARM, not on
// operations waiting for it.
type slot struct {
	mu       sync.Mutex
	ch       chan struct{}
	released bool
}

// takeSlot waits for a free slot of ch.
func takeSlot(ch chan struct{}) *slot {
	ch <- struct{}{}
	return &slot{ch: ch}
}

func (s *slot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.released {
		<-s.ch
		s.released = true
	}
}

func (s *slot) Acquire(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.released {
		return nil
	}
	select {
	case s.ch <- struct{}{}:
		s.released = false
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// done hands the slot back for good.
func (s *slot) done() { s.Release() }

// walkDAG calls do for every resource of rs, each on its own goroutine, as
// soon as the resources of rs that after(r) names have finished and a slot
// of slotOf(r) is free (no slot when slotOf is nil): roots in plan order,
// then in the order they became ready. skip (when not nil) is asked first,
// once the resource is ready and before it waits for a slot; true means it
// was dealt with and do is not called. do gets the slot and hands it back
// (slot.done); walkDAG hands it back after do returns in any case. A
// resource waiting for its slot is an entry in its subscription's queue,
// not a goroutine (3,500 goroutines waiting held 15 MB of stacks at 10,000
// resources). Should the edges hold a cycle (a plan edited by hand), the
// rest run in plan order rather than never.
func walkDAG(rs []*planner.Resource, after func(*planner.Resource) []string, slotOf func(*planner.Resource) chan struct{},
	skip func(*planner.Resource) bool, do func(*planner.Resource, *slot)) {
	inPlan := make(map[string]bool, len(rs))
	for _, r := range rs {
		inPlan[r.Key()] = true
	}
	pending := make(map[string]int, len(rs))
	next := map[string][]*planner.Resource{}
	for _, r := range rs {
		for _, k := range after(r) {
			if inPlan[k] && k != r.Key() {
				pending[r.Key()]++
				next[k] = append(next[k], r)
			}
		}
	}
	doneCh := make(chan string, len(rs))
	var wg sync.WaitGroup
	run := func(r *planner.Resource, s *slot) {
		defer wg.Done()
		do(r, s)
		if s != nil {
			s.done()
		}
		doneCh <- r.Key()
	}
	// start is where a ready resource goes: its slot's queue, or a
	// goroutine of its own.
	queues := map[chan struct{}]*slotQueue{}
	start := func(r *planner.Resource) {
		if slotOf == nil {
			if skip != nil && skip(r) {
				doneCh <- r.Key()
				return
			}
			wg.Add(1)
			go run(r, nil)
			return
		}
		ch := slotOf(r)
		q := queues[ch]
		if q == nil {
			q = &slotQueue{wake: make(chan struct{}, 1)}
			queues[ch] = q
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					r, ok := q.pop()
					if !ok {
						return
					}
					if skip != nil && skip(r) {
						doneCh <- r.Key()
						continue
					}
					s := takeSlot(ch)
					wg.Add(1)
					go run(r, s)
				}
			}()
		}
		q.push(r)
	}
	started := make(map[string]bool, len(rs))
	running := 0
	launch := func(r *planner.Resource) {
		started[r.Key()] = true
		running++
		start(r)
	}
	for _, r := range rs {
		if pending[r.Key()] == 0 {
			launch(r)
		}
	}
	for finished := 0; finished < len(rs); finished++ {
		if running == 0 {
			for _, r := range rs {
				if !started[r.Key()] {
					launch(r)
					break
				}
			}
		}
		k := <-doneCh
		running--
		for _, r := range next[k] {
			if pending[r.Key()]--; pending[r.Key()] == 0 && !started[r.Key()] {
				launch(r)
			}
		}
	}
	for _, q := range queues {
		q.close()
	}
	wg.Wait()
}

// slotQueue is the resources of one subscription that are ready and wait
// for a slot, first in first out; its dispatcher takes them one by one as
// slots come free.
type slotQueue struct {
	mu     sync.Mutex
	items  []*planner.Resource
	closed bool
	wake   chan struct{} // capacity 1: something was pushed or the queue closed
}

func (q *slotQueue) push(r *planner.Resource) {
	q.mu.Lock()
	q.items = append(q.items, r)
	q.mu.Unlock()
	q.signal()
}

func (q *slotQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *slotQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop waits for the next resource; false once the queue is closed and empty.
func (q *slotQueue) pop() (*planner.Resource, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			r := q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
			q.mu.Unlock()
			return r, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return nil, false
		}
		<-q.wake
	}
}

// blocker returns a skipped result when a dependency did not succeed.
func (w *walk) blocker(r *planner.Resource) *ResourceResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range r.DependsOn {
		dr, ok := w.results[d]
		if !ok || (dr.Outcome != Failed && dr.Outcome != Skipped) {
			continue
		}
		reason, what := "ReferenceNotFound", "referenced resource"
		if r.Owner == d {
			reason, what = "WaitingForOwner", "owner"
		} else if pending := r.PendingFrom(d); len(pending) > 0 {
			reason, what = "ConfigMapNotFound", "resource exporting a value it reads"
			for _, e := range pending {
				if e.Secret {
					reason = "SecretNotFound"
				}
			}
		}
		cond := record.Condition{
			Type: record.ConditionReady, Status: record.StatusFalse, Severity: record.SeverityWarning, Reason: reason,
			Message: fmt.Sprintf("%s %s is not ready: %s", what, dr.Resource.ID(), firstLine(dr.Ready.Message)),
		}
		return &ResourceResult{Key: r.Key(), Resource: r, Outcome: Skipped, Ready: cond, Err: errors.New(cond.Message)}
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// runDeletes deletes in reverse dependency order, as the plan orders them:
// a deletion starts when those in its DeleteAfter have finished, with
// bounded parallelism.
func (w *walk) runDeletes(ctx context.Context, rs []*planner.Resource) {
	walkDAG(rs, func(r *planner.Resource) []string { return r.DeleteAfter }, w.slots(), nil, func(r *planner.Resource, s *slot) {
		rr := w.delete(ctx, r, s)
		s.done()
		w.setResult(rr)
	})
}

// delete deletes r holding s, a share of the parallelism its client hands
// back while a long-running operation waits.
func (w *walk) delete(ctx context.Context, r *planner.Resource, s azure.Slot) *ResourceResult {
	rr := &ResourceResult{Key: r.Key(), Resource: r, StartedAt: w.e.opts.Now()}
	defer func() { rr.Duration = w.e.opts.Now().Sub(rr.StartedAt) }()
	if r.ManagedByASO {
		err := managedByASO(r)
		rr.Outcome, rr.Err, rr.Ready = Failed, err, failedCondition(err)
		return rr
	}
	if r.Action == planner.Detach || r.DeletedWith != "" {
		rr.Outcome = Detached
		if r.DeletedWith != "" {
			rr.Outcome = Deleted
			// The parent's DELETE removes it; fail if that failed.
			w.mu.Lock()
			pr := w.results[r.DeletedWith]
			w.mu.Unlock()
			if pr != nil && pr.Outcome == Failed {
				rr.Outcome, rr.Err = Failed, fmt.Errorf("parent %s was not deleted", r.DeletedWith)
				rr.Ready = failedCondition(rr.Err)
			}
		}
		return rr
	}
	cli, err := w.e.clients.For(ctx, r.Credential)
	if err != nil {
		rr.Outcome, rr.Err, rr.Ready = Failed, err, failedCondition(err)
		return rr
	}
	w.e.opts.Logger.InfoContext(ctx, "deleting", "resource", r.ID(), "armId", r.ARMID)
	rr.Requests++
	started, finish := w.track(ctx, r, "DELETE")
	err = w.deleteResource(ctx, cli.With(azure.CallOptions{Slot: s, OperationStarted: started}), r)
	finish()
	if err != nil {
		err = classify(r, err)
		rr.Outcome, rr.Err, rr.Ready = Failed, err, failedCondition(err)
		rr.RetryAfter = retryAfter(err)
		w.e.opts.Logger.WarnContext(ctx, "delete failed", "resource", r.ID(), "error", err)
		return rr
	}
	rr.Outcome = Deleted
	return rr
}

// apply sends one resource's PUT (or GET for observe) and computes its
// exports, holding s, a share of the parallelism its client hands back while
// a long-running operation waits.
func (w *walk) apply(ctx context.Context, r *planner.Resource, s azure.Slot) *ResourceResult {
	rr := &ResourceResult{Key: r.Key(), Resource: r, StartedAt: w.e.opts.Now()}
	defer func() { rr.Duration = w.e.opts.Now().Sub(rr.StartedAt) }()
	// secretValues are the values of this resource's body that came from
	// Secrets: ARM sometimes echoes an invalid value in its error message,
	// which must not reach a log, the state or the API.
	var secretValues []string
	fail := func(err error) *ResourceResult {
		err = scrub(classify(r, err), secretValues)
		rr.Outcome, rr.Err, rr.Ready = Failed, err, failedCondition(err)
		rr.Ready.Message = scrubString(rr.Ready.Message, secretValues)
		rr.RetryAfter = retryAfter(err)
		w.e.opts.Logger.WarnContext(ctx, "apply failed", "resource", r.ID(), "error", err.Error())
		return rr
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if r.ManagedByASO {
		return fail(managedByASO(r))
	}
	if r.Action == planner.NoOp {
		rr.Outcome = Unchanged
		rr.Ready = readyCondition()
		return rr
	}
	// The planner refuses such a manifest; a plan read back from a file is
	// held to ASO's rule again before any request.
	if m := aso.CheckSubscription(r.ARMID, r.Credential, r.Subscription); m != nil {
		return fail(&statusError{reason: aso.ReasonSubscriptionMismatch, severity: record.SeverityError, err: m,
			msg: fmt.Sprintf("the resource's ARM ID is in subscription %s but its credential %s is for subscription %s", m.Subscription, m.Credential, m.CredentialSubscription)})
	}
	base, err := w.e.clients.For(ctx, r.Credential)
	if err != nil {
		return fail(err)
	}
	cli := base.With(azure.CallOptions{Slot: s})
	if r.Action == planner.Observe {
		rr.Requests++
		body, err := cli.Get(ctx, r.ARMID, r.APIVersion)
		if err != nil {
			if isNotFound(err) {
				return fail(&statusError{reason: "AzureResourceNotFound", severity: record.SeverityWarning,
					msg: fmt.Sprintf("%s does not exist in Azure (reconcile-policy skip: gitaso only reads it)", r.ARMID), err: err})
			}
			return fail(err)
		}
		rr.Outcome, rr.Response, rr.Ready = Observed, body, readyCondition()
		w.export(ctx, cli, r, rr)
		return rr
	}

	w.mu.RLock()
	body, err := planner.Resolve(r, planner.Values{Outputs: w.outputs, Secrets: w.secrets})
	var reason string
	var missing []string
	if err == nil && len(body.Unknown) > 0 {
		reason, missing = r.Missing(w.outputs)
	}
	w.mu.RUnlock()
	if err != nil {
		return fail(err)
	}
	if len(body.Unknown) > 0 {
		msg := fmt.Sprintf("values at %s are not known: the resources exporting them did not produce them", strings.Join(body.Unknown, ", "))
		if len(missing) > 0 {
			msg += ": " + strings.Join(missing, "; ")
		}
		return fail(&statusError{reason: reason, severity: record.SeverityWarning, msg: msg})
	}
	secretValues = planner.ValuesAt(body.JSON, body.Secrets)
	if r.Action == planner.Adopt && r.NoWrite {
		done, err := w.adoptWithoutWrite(ctx, cli, r, rr, body)
		if err != nil {
			return fail(err)
		}
		if done {
			return rr
		}
	}
	sent := body.JSON
	if sent, err = w.beforePut(ctx, cli, r, rr, sent); err != nil {
		return fail(err)
	}
	red, err := r.Redact(sent, body.Secrets)
	if err != nil {
		return fail(err)
	}
	w.e.opts.Logger.InfoContext(ctx, "applying", "resource", r.ID(), "action", r.Action.String(), "armId", r.ARMID)
	rr.Requests++
	started, finish := w.track(ctx, r, "PUT")
	resp, err := base.With(azure.CallOptions{Slot: s, OperationStarted: started}).Put(ctx, r.ARMID, r.APIVersion, sent)
	finish()
	if err != nil {
		return fail(err)
	}
	rr.Outcome, rr.Response, rr.Ready = Applied, resp, readyCondition()
	// The hash covers the converted body, as the planner computes it.
	rr.Hash = planner.HashRequest(r.ARMID+"?api-version="+r.APIVersion, body.JSON)
	rr.Body = red
	rr.SecretHashes = planner.SecretHashes(body.JSON, r.Sensitive)
	if w.afterPut(ctx, cli, r, rr) {
		w.export(ctx, cli, r, rr)
	}
	return rr
}

// adoptWithoutWrite records r, an adoption without a write, from what Azure
// holds: it reads the object again and, when it still holds every field the
// body sets (planner.AdoptChanges) and is provisioned, records the body's
// hash as applied, Ready from the provisioningState and ASO's post-reconcile
// check, and the exports computed from the read, as the observe path does.
// It reports false, with no error, when the object is gone or differs now:
// the caller PUTs the manifest as any adoption.
func (w *walk) adoptWithoutWrite(ctx context.Context, cli ARM, r *planner.Resource, rr *ResourceResult, body *aso.Body) (bool, error) {
	rr.Requests++
	observed, err := cli.Get(ctx, r.ARMID, r.APIVersion)
	if isNotFound(err) {
		w.e.opts.Logger.InfoContext(ctx, "adopting with a PUT: gone from Azure since the plan", "resource", r.ID())
		return false, nil
	}
	if err != nil {
		return false, err
	}
	changes, err := planner.AdoptChanges(r, body, observed)
	if err != nil {
		return false, err
	}
	if len(changes) > 0 {
		w.e.opts.Logger.InfoContext(ctx, "adopting with a PUT: Azure differs from the manifest", "resource", r.ID(), "fields", len(changes))
		return false, nil
	}
	if st := planner.ProvisioningState(observed); st != "" && !strings.EqualFold(st, "Succeeded") {
		w.e.opts.Logger.InfoContext(ctx, "adopting with a PUT: not provisioned in Azure", "resource", r.ID(), "provisioningState", st)
		return false, nil
	}
	red, err := r.Redact(body.JSON, body.Secrets)
	if err != nil {
		return false, err
	}
	rr.Outcome, rr.Response, rr.Ready = Adopted, observed, readyCondition()
	rr.Hash = planner.HashRequest(r.ARMID+"?api-version="+r.APIVersion, body.JSON)
	rr.Body = red
	rr.SecretHashes = planner.SecretHashes(body.JSON, r.Sensitive)
	w.e.opts.Logger.InfoContext(ctx, "adopted without a write (state rebuilt)", "resource", r.ID(), "armId", r.ARMID)
	if w.afterPut(ctx, cli, r, rr) {
		w.export(ctx, cli, r, rr)
	}
	return true, nil
}

// track returns the azure.CallOptions.OperationStarted of r's write or
// delete, reporting a long-running operation it starts to OnOperation (nil
// when nobody listens), and the function to call when the call returned: it
// reports the operation done unless ctx ended first.
func (w *walk) track(ctx context.Context, r *planner.Resource, method string) (func(pollURL string), func()) {
	hook := w.e.opts.OnOperation
	if hook == nil {
		return nil, func() {}
	}
	var op *record.Operation
	started := func(pollURL string) {
		op = &record.Operation{Key: r.Key(), ARMID: r.ARMID, Method: method, StartedAt: w.e.opts.Now().UTC(), PollURL: pollURL}
		hook(*op, false)
	}
	return started, func() {
		if op != nil && ctx.Err() == nil {
			hook(*op, true)
		}
	}
}

// FailedCondition is the Ready condition recorded for a resource whose apply
// failed with err (ASO's reason and severity for it).
func FailedCondition(err error) record.Condition { return failedCondition(err) }

func readyCondition() record.Condition {
	return record.Condition{Type: record.ConditionReady, Status: record.StatusTrue, Reason: "Succeeded"}
}
