package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// Units: a Flux Kustomization or HelmRelease renders, applies and fails
// alone, as in Flux. The renderer lists a revision's units
// (Snapshot.Units), those that did not render without their objects. Here:
//
//   - a unit that did not render (BuildFailed, ArtifactFailed, ...), a unit
//     declared by one (ParentNotReady: its spec at this revision is
//     unknown), a unit whose objects the graph refuses (ReconciliationFailed:
//     an owner or reference not found, a field error) and a unit whose
//     spec.dependsOn names one of those (DependencyNotReady) are held: their
//     objects as last applied (state.UnitObjects) take the place of their
//     rendered ones, so they are planned as they were (drift corrected as
//     ASO would), references of other units to them resolve, and nothing of
//     theirs is deleted for being absent (planner.Input.HeldUnits holds
//     when nothing was stored). A held unit never applied before has
//     nothing to keep;
//   - a graph error of an object of no unit (the entry path, a repository
//     without Flux objects) or of a kept object still refuses the revision;
//   - every other unit is planned and applied; the objects of a unit wait
//     for those of the units it depends on (planner.Options.UnitDependsOn)
//     and are skipped when one of them fails;
//   - after the apply each unit's record says Ready (Flux's reasons), its
//     last applied revision, errors and objects; a unit whose objects were
//     all applied (or failed in Azure: ASO would retry them) has its
//     objects stored as last applied; the run is partial when a unit fails.
//
// A unit's Ready: True (ReconciliationSucceeded) once its objects applied;
// with spec.wait or healthChecks only once those ASO objects are Ready in
// Azure, Unknown (Progressing) until then and False (HealthCheckFailed)
// after spec.timeout.

// heldUnit is why a unit is held at this revision.
type heldUnit struct {
	reason, message string
	errs            diag.List
	retry           bool
	retryIn         time.Duration
}

// unitSet is what one run knows of the revision's units.
type unitSet struct {
	rev      string
	units    map[string]manifest.Unit // this revision's units, by ID
	prior    map[string]record.Unit   // the state's units, by ID
	held     map[string]*heldUnit
	gone     []string                     // units of the state no longer in Git
	rendered []manifest.Object            // the snapshot's objects as rendered
	kept     map[string][]manifest.Object // held units' objects as last applied
	keptN    map[string]int               // objects kept per held unit
}

// empty reports whether there is nothing about units to do.
func (us *unitSet) empty() bool { return us == nil || len(us.units) == 0 && len(us.prior) == 0 }

// newUnitSet reads the state's units and holds the revision's failed units
// and those they declare; nil when neither the revision nor the state has
// units.
func (r *Reconciler) newUnitSet(snap *manifest.Snapshot) (*unitSet, error) {
	var prior []record.Unit
	if r.db != nil {
		var err error
		if prior, err = r.db.Units(); err != nil {
			return nil, err
		}
	}
	if len(snap.Units) == 0 && len(prior) == 0 {
		return nil, nil
	}
	us := &unitSet{rev: snap.Revision, units: map[string]manifest.Unit{}, prior: map[string]record.Unit{},
		held: map[string]*heldUnit{}, rendered: snap.Objects, kept: map[string][]manifest.Object{}, keptN: map[string]int{}}
	for _, u := range prior {
		us.prior[u.ID()] = u
	}
	for _, u := range snap.Units {
		us.units[u.ID()] = u
		if u.Failed() {
			us.held[u.ID()] = &heldUnit{reason: u.Reason, message: u.Message, errs: u.Errors, retry: u.Retry, retryIn: retryIn(u)}
		}
	}
	// Units of the state this revision does not list: declared by a held
	// unit (or one of its descendants), they are held too; else gone.
	for id, pu := range us.prior {
		if _, ok := us.units[id]; ok {
			continue
		}
		if anc := us.heldAncestor(pu); anc != "" {
			us.held[id] = &heldUnit{reason: manifest.ReasonParentNotReady,
				message: "declared by " + anc + ", which did not render: kept as last applied"}
			continue
		}
		us.gone = append(us.gone, id)
	}
	sort.Strings(us.gone)
	us.propagate()
	return us, nil
}

// retryIn is when a unit whose failure may pass is tried again.
func retryIn(u manifest.Unit) time.Duration {
	switch {
	case u.RetryInterval > 0:
		return u.RetryInterval
	case u.Interval > 0:
		return u.Interval
	}
	return time.Minute
}

// heldAncestor returns the held unit among the parents of a unit of the
// state, "" when none is.
func (us *unitSet) heldAncestor(u record.Unit) string {
	seen := map[string]bool{}
	for p := u.Parent; p != "" && !seen[p]; {
		seen[p] = true
		if us.held[p] != nil {
			return p
		}
		if cu, ok := us.units[p]; ok {
			if cu.Failed() {
				return p
			}
			p = cu.Parent
			continue
		}
		pu, ok := us.prior[p]
		if !ok {
			return ""
		}
		p = pu.Parent
	}
	return ""
}

// propagate holds, until nothing changes, the units whose dependsOn names a
// held unit.
func (us *unitSet) propagate() {
	for changed := true; changed; {
		changed = false
		for _, id := range sortedKeys(us.units) {
			u := us.units[id]
			if us.held[id] != nil {
				continue
			}
			for _, d := range u.DependsOn {
				if h := us.held[d]; h != nil {
					us.held[id] = &heldUnit{reason: manifest.ReasonDependencyNotReady,
						message: fmt.Sprintf("dependency %s is not ready (%s)", d, h.reason)}
					changed = true
					break
				}
			}
		}
	}
}

// heldIDs returns the held units' IDs as a set.
func (us *unitSet) heldIDs() map[string]bool {
	if us == nil {
		return nil
	}
	m := make(map[string]bool, len(us.held))
	for id := range us.held {
		m[id] = true
	}
	return m
}

// dependsOn returns the units' spec.dependsOn for the graph.
func (us *unitSet) dependsOn() map[string][]string {
	if us == nil {
		return nil
	}
	m := map[string][]string{}
	for id, u := range us.units {
		if len(u.DependsOn) > 0 {
			m[id] = u.DependsOn
		}
	}
	return m
}

// keptObject is how a unit's objects are stored as last applied (sealed:
// they may hold values substituted from Secrets).
type keptObject struct {
	File    string         `json:"file,omitempty"`
	Line    int            `json:"line,omitempty"`
	Index   int            `json:"index,omitempty"`
	Content map[string]any `json:"content"`
	Secrets []keptSecret   `json:"secrets,omitempty"`
}

type keptSecret struct {
	Value string `json:"value"`
	From  string `json:"from"`
}

func encodeKept(objs []manifest.Object) ([]byte, error) {
	out := make([]keptObject, len(objs))
	for i, o := range objs {
		k := keptObject{File: o.File, Line: o.Line, Index: o.Index, Content: o.Content}
		for _, s := range o.Secrets {
			k.Secrets = append(k.Secrets, keptSecret{Value: s.Value(), From: s.From})
		}
		out[i] = k
	}
	return json.Marshal(out)
}

func decodeKept(b []byte) ([]manifest.Object, error) {
	var in []keptObject
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	out := make([]manifest.Object, len(in))
	for i, k := range in {
		o := manifest.Object{File: k.File, Line: k.Line, Index: k.Index, Content: k.Content}
		for _, s := range k.Secrets {
			o.Secrets = append(o.Secrets, manifest.NewSecretValue(s.Value, s.From))
		}
		out[i] = o
	}
	return out, nil
}

// loadKept reads the held units' objects as last applied.
func (r *Reconciler) loadKept(us *unitSet) error {
	if r.db == nil {
		return nil
	}
	for _, id := range sortedKeys(us.held) {
		if _, done := us.kept[id]; done {
			continue
		}
		b, ok, err := r.db.UnitObjects(id)
		if err != nil {
			return fmt.Errorf("read the last applied objects of %s: %w", id, err)
		}
		if !ok {
			us.kept[id] = nil
			continue
		}
		objs, err := decodeKept(b)
		if err != nil {
			return fmt.Errorf("read the last applied objects of %s: %w", id, err)
		}
		for i := range objs {
			ann, _ := objs[i].Metadata()["annotations"].(map[string]any)
			if ann == nil {
				ann = map[string]any{}
				objs[i].Metadata()["annotations"] = ann
			}
			ann[manifest.AnnotationKept] = id
		}
		us.kept[id] = objs
	}
	return nil
}

// objects returns the snapshot's objects for this run: the rendered ones of
// units not held, then the held units' kept ones whose key no rendered
// object has.
func (us *unitSet) objects() []manifest.Object {
	out := make([]manifest.Object, 0, len(us.rendered))
	have := map[string]bool{}
	for _, o := range us.rendered {
		if u := manifest.UnitOf(o); u != "" && us.held[u] != nil {
			continue
		}
		out = append(out, o)
		have[objectKey(o)] = true
	}
	for _, id := range sortedKeys(us.kept) {
		n := 0
		if us.held[id] == nil {
			continue
		}
		for _, o := range us.kept[id] {
			if have[objectKey(o)] {
				continue // rendered by a unit that did render (moved to it)
			}
			have[objectKey(o)] = true
			out = append(out, o)
			n++
		}
		us.keptN[id] = n
	}
	return out
}

func objectKey(o manifest.Object) string {
	return o.Namespace() + "/" + o.APIVersion() + "/" + o.Kind() + "/" + o.Name()
}

// attribute maps graph errors to the units of their objects. ok is false
// when an error belongs to no unit, or to a held unit's kept object: the
// revision is refused then.
func (us *unitSet) attribute(errs diag.List, objs []manifest.Object) (map[string]diag.List, bool) {
	byID := map[string]string{}
	byFile := map[string]string{}
	kept := map[string]bool{}
	for _, o := range objs {
		u := manifest.UnitOf(o)
		byID[o.ID()] = u
		if o.Annotations()[manifest.AnnotationKept] != "" {
			kept[o.ID()] = true
		}
		if prev, ok := byFile[o.File]; !ok {
			byFile[o.File] = u
		} else if prev != u {
			byFile[o.File] = ""
		}
	}
	out := map[string]diag.List{}
	for _, e := range errs {
		u, ok := byID[e.Object]
		if e.Object == "" || !ok {
			u = byFile[e.File]
		}
		if u == "" || kept[e.Object] || us.held[u] != nil {
			return nil, false
		}
		out[u] = append(out[u], e)
	}
	return out, true
}

// buildUnits builds the graph of a snapshot with units: the held units'
// kept objects in place of theirs, and a unit whose objects the graph
// refuses held in turn, until the graph builds or an error belongs to no
// unit.
func (r *Reconciler) buildUnits(ctx context.Context, snap *manifest.Snapshot, us *unitSet, opts planner.Options) (*planner.Graph, error) {
	opts.UnitDependsOn = us.dependsOn()
	for {
		if err := r.loadKept(us); err != nil {
			return nil, err
		}
		snap.Objects = us.objects()
		g, err := planner.Build(snap, opts)
		l := diag.AsList(err)
		if err == nil || len(l) == 0 {
			return g, err
		}
		source.LocateFields(l, snap.Texts)
		byUnit, ok := us.attribute(l, snap.Objects)
		if !ok {
			return nil, err
		}
		for _, id := range sortedKeys(byUnit) {
			es := byUnit[id]
			us.held[id] = &heldUnit{reason: manifest.ReasonFailed, errs: es,
				message: fmt.Sprintf("%d of its objects cannot be planned: %s", len(es), firstLine(es[0].Error()))}
			r.log.WarnContext(ctx, "unit held: its objects cannot be planned; the other units go on", "unit", id, "errors", len(es))
		}
		us.propagate()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// planUnits returns the units as a plan shows them: held ones False with
// their reason, the others as the state has them (Unknown, Progressing,
// when new).
func (us *unitSet) planUnits(now time.Time) []record.Unit {
	if us.empty() {
		return nil
	}
	var out []record.Unit
	for _, id := range sortedKeys(us.units) {
		out = append(out, us.unitRecord(id, now))
	}
	for _, id := range sortedKeys(us.held) {
		if _, ok := us.units[id]; !ok {
			out = append(out, us.unitRecord(id, now))
		}
	}
	return out
}

// unitRecord starts a unit's record at this run from the state's.
func (us *unitSet) unitRecord(id string, now time.Time) record.Unit {
	rec, had := us.prior[id]
	if u, ok := us.units[id]; ok {
		rec.Kind, rec.Namespace, rec.Name, rec.File, rec.Line = u.Kind, u.Namespace, u.Name, u.File, u.Line
		rec.Parent, rec.DependsOn, rec.Suspended, rec.Wait, rec.Ignored = u.Parent, u.DependsOn, u.Suspended, u.Wait, u.Ignored
	}
	rec.LastAttemptedRevision = us.rev
	rec.UpdatedAt = now
	if h := us.held[id]; h != nil {
		msg := h.message
		if n := us.keptN[id]; n > 0 {
			msg += fmt.Sprintf("; %d objects kept as last applied", n)
		} else if rec.LastAppliedRevision == "" {
			msg += "; never applied: nothing to keep"
		}
		setUnitReady(&rec, record.StatusFalse, h.reason, msg, now)
		rec.Errors = nil
		for _, e := range h.errs {
			rec.Errors = append(rec.Errors, e.Error())
		}
		if h.retry {
			rec.NextRetryAt = now.Add(h.retryIn)
		}
		return rec
	}
	rec.Errors, rec.NextRetryAt = nil, time.Time{}
	if !had {
		setUnitReady(&rec, record.StatusUnknown, manifest.ReasonProgressing, "reconciliation in progress", now)
	}
	return rec
}

// setUnitReady sets a unit's Ready condition; its transition time moves
// only when the status does.
func setUnitReady(u *record.Unit, status, reason, msg string, now time.Time) {
	if u.Ready.Status != status || u.Ready.LastTransitionTime.IsZero() {
		u.Ready.LastTransitionTime = now
	}
	u.Ready.Type, u.Ready.Status, u.Ready.Reason, u.Ready.Message = record.ConditionReady, status, reason, msg
	u.Ready.Severity = ""
	if status == record.StatusFalse {
		u.Ready.Severity = record.SeverityError
	}
}

// unitsAfter computes every unit's record after an apply from the results
// of its objects, and the objects to store as last applied.
func (us *unitSet) unitsAfter(p *planner.Plan, res *executor.Result, resources func(string) (record.Resource, bool), now time.Time) ([]record.Unit, map[string][]manifest.Object) {
	type tally struct {
		failed, skipped, total int
		firstErr               string
		keys                   []string
	}
	t := map[string]*tally{}
	byKey := map[string]*executor.ResourceResult{}
	if res != nil {
		for _, rr := range res.Resources {
			if rr != nil {
				byKey[rr.Key] = rr
			}
		}
	}
	for _, pr := range p.Resources {
		u := pr.Origin.Unit()
		if u == "" || pr.Action == planner.Delete || pr.Action == planner.Detach {
			continue
		}
		tt := t[u]
		if tt == nil {
			tt = &tally{}
			t[u] = tt
		}
		tt.total++
		tt.keys = append(tt.keys, pr.Key())
		if rr := byKey[pr.Key()]; rr != nil {
			switch rr.Outcome {
			case executor.Failed:
				tt.failed++
				if tt.firstErr == "" && rr.Err != nil {
					tt.firstErr = pr.ID() + ": " + firstLine(rr.Err.Error())
				}
			case executor.Skipped:
				tt.skipped++
				if tt.firstErr == "" && rr.Err != nil {
					tt.firstErr = pr.ID() + ": " + firstLine(rr.Err.Error())
				}
			}
		}
	}
	store := map[string][]manifest.Object{}
	for _, o := range us.rendered {
		if u := manifest.UnitOf(o); u != "" && us.held[u] == nil {
			if _, ok := us.units[u]; ok {
				store[u] = append(store[u], o)
			}
		}
	}
	var out []record.Unit
	for _, rec := range us.planUnits(now) {
		id := rec.ID()
		if us.held[id] != nil {
			out = append(out, rec)
			continue
		}
		u := us.units[id]
		tt := t[id]
		if tt == nil {
			tt = &tally{}
		}
		rec.Objects = tt.keys
		switch {
		case u.Ignored:
			setUnitReady(&rec, record.StatusTrue, manifest.ReasonSucceeded, "ignored: "+u.Message, now)
		case u.Suspended:
			setUnitReady(&rec, record.StatusUnknown, manifest.ReasonSuspended, "suspended: its objects are left as they are (reconcile-policy skip)", now)
		case tt.failed > 0:
			setUnitReady(&rec, record.StatusFalse, manifest.ReasonFailed,
				fmt.Sprintf("%d of %d objects failed: %s", tt.failed, tt.total, tt.firstErr), now)
		case tt.skipped > 0:
			setUnitReady(&rec, record.StatusFalse, manifest.ReasonDependencyNotReady,
				fmt.Sprintf("%d of %d objects wait for a dependency that failed: %s", tt.skipped, tt.total, tt.firstErr), now)
			delete(store, id) // nothing of it was applied at this revision
		default:
			if rec.LastAppliedRevision != us.rev || rec.AppliedAt.IsZero() {
				rec.LastAppliedRevision, rec.AppliedAt = us.rev, now
			}
			us.health(&rec, u, resources, now)
		}
		out = append(out, rec)
	}
	return out, store
}

// health sets the Ready condition of a unit whose objects all applied: True,
// or with wait / healthChecks according to those objects' Ready in Azure.
func (us *unitSet) health(rec *record.Unit, u manifest.Unit, resources func(string) (record.Resource, bool), now time.Time) {
	var check []string
	if u.Wait {
		check = rec.Objects
	}
	for _, hc := range u.HealthChecks {
		group, _, _ := strings.Cut(hc.APIVersion, "/")
		ns := hc.Namespace
		if ns == "" {
			ns = u.Namespace
		}
		check = append(check, record.ResourceKey(ns, group, hc.Kind, hc.Name))
	}
	if len(check) == 0 {
		setUnitReady(rec, record.StatusTrue, manifest.ReasonSucceeded, "applied revision "+planner.ShortRevision(us.rev), now)
		return
	}
	var notReady []string
	failed := ""
	for _, k := range check {
		r, ok := resources(k)
		switch {
		case !ok:
			notReady = append(notReady, k+" (not found)")
		case r.Ready.Status == record.StatusTrue:
		case r.Ready.Status == record.StatusFalse && r.Ready.Severity == record.SeverityError:
			failed = k + ": " + firstLine(r.Ready.Message)
		default:
			notReady = append(notReady, k)
		}
	}
	timeout := u.Timeout
	if timeout <= 0 {
		timeout = u.Interval
	}
	switch {
	case failed != "":
		setUnitReady(rec, record.StatusFalse, manifest.ReasonHealthCheckFailed, "health check failed: "+failed, now)
	case len(notReady) == 0:
		setUnitReady(rec, record.StatusTrue, manifest.ReasonSucceeded, "applied revision "+planner.ShortRevision(us.rev)+"; health checks passed", now)
	case timeout > 0 && now.Sub(rec.AppliedAt) > timeout:
		setUnitReady(rec, record.StatusFalse, manifest.ReasonHealthCheckFailed, fmt.Sprintf("timeout waiting for: %s", strings.Join(notReady, ", ")), now)
	default:
		setUnitReady(rec, record.StatusUnknown, manifest.ReasonProgressing, "waiting for: "+strings.Join(notReady, ", "), now)
	}
}

// recordUnits writes the units' records, the objects of the units applied
// as last applied, and forgets the units gone from Git.
func recordUnits(w *state.Writer, recs []record.Unit, store map[string][]manifest.Object, gone []string) error {
	for _, u := range recs {
		if err := w.PutUnit(u); err != nil {
			return err
		}
	}
	for _, id := range sortedKeys(store) {
		b, err := encodeKept(store[id])
		if err != nil {
			return fmt.Errorf("encode the objects of unit %s: %w", id, err)
		}
		if err := w.PutUnitObjects(id, b); err != nil {
			return err
		}
	}
	for _, id := range gone {
		if err := w.DeleteUnit(id); err != nil {
			return err
		}
	}
	return nil
}

// failedUnits names the failing units of records, for a run's error.
func failedUnits(recs []record.Unit) []string {
	var out []string
	for _, u := range recs {
		if u.Failing() { // a suspended unit is Unknown, not failing
			out = append(out, u.ID()+" ("+u.Ready.Reason+")")
		}
	}
	return out
}

// unitRetryIn returns when the soonest unit whose failure may pass is
// tried again, 0 when none is.
func (us *unitSet) unitRetryIn() time.Duration {
	if us == nil {
		return 0
	}
	var d time.Duration
	for _, h := range us.held {
		if h.retry && (d == 0 || h.retryIn < d) {
			d = h.retryIn
		}
	}
	return d
}

// unitsWriter returns what records the units after an apply, in the run's
// transaction (w nil without a state): the plan's units become their
// records after the apply, and a run whose units fail is partial.
func (r *Reconciler) unitsWriter(p *planner.Plan, rep *Report) func(*state.Writer) error {
	us := rep.units
	if us.empty() {
		return nil
	}
	return func(w *state.Writer) error {
		now := time.Now().UTC()
		get := func(k string) (record.Resource, bool) {
			if w == nil {
				return record.Resource{}, false
			}
			res, ok, err := w.Resource(k)
			return res, ok && err == nil
		}
		recs, store := us.unitsAfter(p, rep.Result, get, now)
		p.Units = recs
		if failed := failedUnits(recs); len(failed) > 0 {
			if rep.Run.Outcome == record.OutcomeSucceeded {
				rep.Run.Outcome = record.OutcomePartial
			}
			msg := fmt.Sprintf("%d of %d units failed, the others applied: %s", len(failed), len(recs), strings.Join(failed, ", "))
			if rep.Run.Error != "" {
				msg = rep.Run.Error + "; " + msg
			}
			rep.Run.Error = msg
		}
		if w == nil {
			return nil
		}
		return recordUnits(w, recs, store, us.gone)
	}
}

// unitRetryIn is the soonest retry of a unit whose failure may pass, over
// the run's phases; 0 when none waits.
func (rep *Report) unitRetryIn() time.Duration {
	var d time.Duration
	for ph := rep; ph != nil; ph = ph.Then {
		if x := ph.units.unitRetryIn(); x > 0 && (d == 0 || x < d) {
			d = x
		}
	}
	return d
}

// failedRecords are the held units' records at this run (a held revision
// records only those).
func (us *unitSet) failedRecords(now time.Time) []record.Unit {
	if us.empty() {
		return nil
	}
	var out []record.Unit
	for _, id := range sortedKeys(us.held) {
		out = append(out, us.unitRecord(id, now))
	}
	return out
}

// snapshotUnits returns the revision's units with those held here (their
// objects refused by the graph, a dependency not ready) failed as well,
// so that a caller of Build (gitaso validate) sees every unit's errors.
func (us *unitSet) snapshotUnits(units []manifest.Unit) []manifest.Unit {
	out := slices.Clone(units)
	for i := range out {
		if h := us.held[out[i].ID()]; h != nil && !out[i].Failed() {
			out[i].Reason, out[i].Message, out[i].Errors = h.reason, h.message, h.errs
		}
	}
	return out
}
