package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// ASOReader reads the ASO objects of the cluster gitaso runs beside, in the
// scope the user chose (cluster.Cluster.ListASOObjects with namespaces and a
// label selector). Nil in Config: no cluster, or none to read.
type ASOReader func(ctx context.Context) ([]cluster.ASOObject, error)

// readASO reads the cluster's ASO objects as the planner takes them.
func (r *Reconciler) readASO(ctx context.Context) ([]planner.ASOObject, error) {
	objs, err := r.cfg.ASO(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the cluster's ASO objects: %w", err)
	}
	out := make([]planner.ASOObject, 0, len(objs))
	for _, o := range objs {
		po := planner.ASOObject{
			Namespace: o.Namespace, Group: o.Group, Version: o.Version, Kind: o.Kind, Name: o.Name,
			ARMID: o.ARMID, Policy: o.Policy, PolicySet: o.PolicySet, Generation: o.Generation(),
			Ready: record.Condition{Type: record.ConditionReady, Status: o.Ready.Status, Severity: o.Ready.Severity,
				Reason: o.Ready.Reason, Message: o.Ready.Message, ObservedGeneration: o.Ready.ObservedGeneration},
		}
		if o.Catalog != nil {
			po.Version, po.APIVersion = o.Catalog.Version, o.Catalog.APIVersion
		}
		if o.Ready.LastTransitionTime != "" {
			po.Ready.LastTransitionTime, _ = time.Parse(time.RFC3339, o.Ready.LastTransitionTime)
		}
		out = append(out, po)
	}
	return out, nil
}

// withASO gives the plan ASO's view. Beside ASO (Config.BesideASO) the plan
// becomes what ASO would do (planner.BesideASO); a cluster that cannot be
// read leaves it planned against Azure alone, saying why. Managing, the
// resources whose ARM ID an ASO object of the cluster manages are refused
// (planner.RefuseASOManaged); a cluster that cannot be read refuses
// nothing this run (logged).
func (r *Reconciler) withASO(ctx context.Context, p *planner.Plan) {
	if r.cfg.ASO == nil {
		if r.cfg.BesideASO {
			planner.BesideASO(p, nil, nil)
		}
		return
	}
	objs, err := r.readASO(ctx)
	if r.cfg.BesideASO {
		if err != nil {
			r.log.WarnContext(ctx, "planning beside ASO against Azure alone", "error", err)
		}
		planner.BesideASO(p, objs, err)
		return
	}
	if err != nil {
		r.log.WarnContext(ctx, "resources that ASO manages cannot be told this run: the cluster's ASO objects were not read", "error", err)
		return
	}
	if n := planner.RefuseASOManaged(p, objs); n > 0 {
		r.log.WarnContext(ctx, "refusing resources that ASO objects in the cluster manage", "resources", n)
	}
}

// besideOnce is a run beside ASO: a plan of the revision against live
// Azure (read-only clients) and the cluster's ASO objects, with no state of
// gitaso's, applied never. A run of the loop (not a dry run) records the
// plan and the run, so that the API and the page show them; nothing else
// is written.
func (r *Reconciler) besideOnce(ctx context.Context, opts Options) (*Report, error) {
	keep := !opts.DryRun
	opts.DryRun, opts.Refresh, opts.All = true, true, true
	rep, err := r.once(ctx, opts)
	if !keep || r.db == nil || rep == nil {
		return rep, err
	}
	rep.Run.FinishedAt = time.Now().UTC()
	if rep.Run.Outcome == "" {
		if err != nil {
			rep.Run.Outcome, rep.Run.Error = record.OutcomeFailed, err.Error()
		} else {
			rep.Run.Outcome = record.OutcomeSucceeded
		}
	}
	var planJSON []byte
	if rep.Plan != nil {
		rep.Run.Summary = summary(rep.Plan)
		rep.Run.Counts = map[string]int{}
		for a, n := range rep.Plan.Summary() {
			rep.Run.Counts[a.String()] = n
		}
		var eerr error
		if planJSON, eerr = encodePlan(rep.Plan); eerr != nil {
			return rep, eerr
		}
	}
	if werr := r.db.Update(func(w *state.Writer) error {
		if rep.Run.Revision != "" {
			if err := w.SetLatestRevision(rep.Run.Revision); err != nil {
				return err
			}
		}
		if planJSON != nil {
			if err := w.ClearPhasePlans(); err != nil {
				return err
			}
			if err := w.SetPlan(planJSON); err != nil {
				return err
			}
		}
		return w.PutRun(&rep.Run)
	}); werr != nil {
		return rep, fmt.Errorf("record the plan beside ASO: %w", werr)
	}
	if err == nil {
		r.lastErr.Store("")
	} else {
		r.lastErr.Store(err.Error())
	}
	r.ready.Store(true)
	if r.cfg.SyncPeriod > 0 {
		r.nextDue = time.Now().Add(r.cfg.SyncPeriod) // ASO's view and Azure move without a commit
	}
	return rep, err
}
