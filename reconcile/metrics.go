package reconcile

import (
	"time"

	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// Metrics receives what runs do, for /metrics (package metrics implements
// it). Its methods must be safe for concurrent use and must not block.
type Metrics interface {
	// Planned is called for every plan made, with its number of resources
	// per action ("create" → 3; no-ops left out).
	Planned(trigger string, dryRun bool, actions map[string]int)
	// Reconciled is called as the executor finishes each resource, with
	// its kind, the executor's outcome, whether a failure is terminal (no
	// retry until the manifest changes) and how long the resource took.
	Reconciled(kind, outcome string, terminal bool, d time.Duration)
}

// OtherWriterMetrics is implemented by a Metrics that also exports how many
// managed resources another writer wrote with gitaso's own principal
// (activity.go; record.Resource.OtherWriter). Package metrics implements it.
type OtherWriterMetrics interface {
	OtherWriters(resources int)
}

// observeOtherWriters reports the resources of prior marked written by
// another writer to the configured Metrics.
func (r *Reconciler) observeOtherWriters(prior map[string]record.Resource) {
	m, ok := r.cfg.Metrics.(OtherWriterMetrics)
	if !ok {
		return
	}
	n := 0
	for _, res := range prior {
		if res.OtherWriter != nil {
			n++
		}
	}
	m.OtherWriters(n)
}

// observePlan reports a plan to the configured Metrics.
func (r *Reconciler) observePlan(opts Options, p *planner.Plan) {
	if r.cfg.Metrics == nil || p == nil {
		return
	}
	actions := map[string]int{}
	for a, n := range p.Summary() {
		if a != planner.NoOp {
			actions[a.String()] = n
		}
	}
	r.cfg.Metrics.Planned(opts.Trigger, opts.DryRun, actions)
}

// observeResult returns onResult that also reports each result to the
// configured Metrics.
func (r *Reconciler) observeResult(onResult func(*executor.ResourceResult)) func(*executor.ResourceResult) {
	m := r.cfg.Metrics
	if m == nil {
		return onResult
	}
	return func(rr *executor.ResourceResult) {
		onResult(rr)
		if rr == nil || rr.Resource == nil {
			return
		}
		m.Reconciled(rr.Resource.Kind, string(rr.Outcome), rr.Ready.Severity == record.SeverityError, rr.Duration)
	}
}
