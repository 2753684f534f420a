package render

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/charts"
)

// Units: each Flux Kustomization and HelmRelease renders and fails alone,
// as Flux reconciles each on its own (source.UnitsRenderer).
//
//   - A Kustomization that cannot be built (spec.path missing, a kustomize
//     error, a patch matching nothing, an unset variable under strict
//     substitution, a file SOPS cannot open, an invalid spec, a cycle) is a
//     unit with Reason BuildFailed (ArtifactFailed when its sourceRef
//     cannot be read) and its errors; none of its objects are in the
//     output, and its child Kustomizations are unknown at this revision:
//     not listed (the reconciler keeps them as last applied).
//   - dependsOn is checked before the build's result, as Flux does: a unit
//     whose dependsOn names a unit that failed, waits, is unknown (its
//     parent did not render) or does not exist at all is
//     DependencyNotReady, its objects left out. Flux waits forever for a
//     dependency that does not exist (it retries every retryInterval), so
//     gitaso does not render past it either: the unit waits until the
//     dependency appears or the dependsOn is removed. A dependsOn cycle
//     waits the same way.
//   - Errors of no unit (the entry path's own files) refuse the revision as
//     before, and so does a limit (source.ErrLimit) or the render deadline,
//     whichever unit reached it: limits bound the whole revision.

// kunit is the walk's record of one Kustomization found.
type kunit struct {
	k      *fluxKustomization
	parent *kunit // the Kustomization whose output declared it; nil at the entry
	entry  bool   // Flux's own Kustomization of the entry path: rendered as the entry
	docs   []fluxDoc
	errs   diag.List
	// objects is the entry's object count for the entry unit.
	objects int
}

func (w *fluxWalk) addUnit(ku *kunit) {
	w.kunits[ku.k.id] = ku
	w.order = append(w.order, ku)
}

// unitErrors returns every error of the Kustomizations visited.
func (w *fluxWalk) unitErrors() diag.List {
	var out diag.List
	for _, ku := range w.order {
		out = append(out, ku.errs...)
	}
	return out
}

// revisionErrors returns the units' errors when one of them is a limit:
// limits bound the revision, not a unit.
func (w *fluxWalk) revisionErrors() diag.List {
	all := w.unitErrors()
	for _, e := range all {
		if errors.Is(e, source.ErrLimit) {
			return all
		}
	}
	return nil
}

// settle decides each Kustomization's outcome, Flux's way (dependsOn
// first, then the build), and returns the units to list (a Kustomization
// whose parent did not render is unknown: left out) and which rendered.
func (w *fluxWalk) settle() ([]manifest.Unit, map[string]bool) {
	const (
		unknown = iota
		deciding
		yes
		no
	)
	state := map[*kunit]int{}
	waiting := map[*kunit]string{} // the message of a unit that waits
	var visible func(ku *kunit) bool
	var ready func(ku *kunit) bool
	visible = func(ku *kunit) bool { return ku.parent == nil || visible(ku.parent) && ready(ku.parent) }
	ready = func(ku *kunit) bool {
		switch state[ku] {
		case deciding:
			return false // a dependsOn cycle: Flux waits forever
		case yes:
			return true
		case no:
			return false
		}
		state[ku] = deciding
		ok := visible(ku)
		if ok {
			for _, id := range kustomizationDeps(ku.k) {
				dep := w.kunits[id]
				switch {
				case dep == nil:
					waiting[ku] = fmt.Sprintf("dependency '%s' is not ready: no Kustomization %s rendered at this revision (it does not exist, or what declares it did not render; Flux waits for it)", id, id)
				case dep == ku || !ready(dep):
					waiting[ku] = fmt.Sprintf("dependency '%s' is not ready", id)
				default:
					continue
				}
				ok = false
				break
			}
		}
		if ok && len(ku.errs) > 0 {
			ok = false
		}
		if ok {
			state[ku] = yes
		} else {
			state[ku] = no
		}
		return ok
	}
	rendered := map[string]bool{}
	var units []manifest.Unit
	for _, ku := range w.order {
		if !visible(ku) {
			continue // its parent did not render: its spec at this revision is unknown
		}
		u := ku.k.unit()
		if ku.parent != nil {
			u.Parent = manifest.UnitID(manifest.UnitKustomization, ku.parent.k.obj.Namespace(), ku.parent.k.obj.Name())
		}
		switch {
		case ready(ku):
			rendered[ku.k.id] = true
			u.Objects = len(ku.docs)
			if ku.entry {
				u.Objects = ku.objects
			}
		case waiting[ku] != "":
			u.Reason, u.Message = manifest.ReasonDependencyNotReady, waiting[ku]
		default:
			for _, e := range ku.errs {
				if data, ok := w.byPath[e.File]; ok && e.Line > 0 && strings.HasPrefix(e.Field, "spec") {
					e.Line = fieldLine(data, e.Line, e.Field)
				}
			}
			u.Reason, u.Retry = failReason(ku.errs, ErrFluxSource)
			if pathNotFound(ku.errs) {
				u.Reason = manifest.ReasonArtifactFailed // as kustomize-controller says "kustomization path not found"
			}
			u.Message, u.Errors = source.UnitMessage(ku.errs), ku.errs
		}
		units = append(units, u)
	}
	return units, rendered
}

// kustomizationDeps returns the IDs ("namespace/name") a Kustomization's
// spec.dependsOn names (its namespace by default).
func kustomizationDeps(k *fluxKustomization) []string {
	var out []string
	for _, d := range k.spec.DependsOn {
		ns := d.Namespace
		if ns == "" {
			ns = k.obj.Namespace()
		}
		out = append(out, ns+"/"+d.Name)
	}
	return out
}

// unit returns the Kustomization's unit record (its outcome not set).
func (k *fluxKustomization) unit() manifest.Unit {
	s := &k.spec
	u := manifest.Unit{Kind: manifest.UnitKustomization, Namespace: k.obj.Namespace(), Name: k.obj.Name(),
		File: k.obj.File, Line: k.obj.Line, Suspended: s.Suspend || reconcileDisabled(k.obj), Wait: s.Wait,
		HealthChecks: s.HealthChecks, Interval: k.interval, Timeout: k.timeout, RetryInterval: k.retryInterval}
	for _, id := range kustomizationDeps(k) {
		ns, name := splitID(id)
		u.DependsOn = append(u.DependsOn, manifest.UnitID(manifest.UnitKustomization, ns, name))
	}
	// Flux: timeout defaults to the interval, retryInterval to the interval.
	if u.Timeout == 0 {
		u.Timeout = u.Interval
	}
	if u.RetryInterval == 0 {
		u.RetryInterval = u.Interval
	}
	return u
}

// durations reads spec.interval, timeout and retryInterval (Go durations,
// as Flux's metav1.Duration).
func (k *fluxKustomization) durations() diag.List {
	var errs diag.List
	for _, d := range []struct {
		field string
		text  string
		into  *time.Duration
	}{{"spec.interval", k.spec.Interval, &k.interval}, {"spec.timeout", k.spec.Timeout, &k.timeout}, {"spec.retryInterval", k.spec.RetryInterval, &k.retryInterval}} {
		v, err := parseDuration(d.text)
		if err != nil {
			errs = append(errs, k.err(d.field, nil, "%q is not a duration (e.g. 10m, 1h30m)", d.text))
			continue
		}
		*d.into = v
	}
	return errs
}

// parseDuration reads a Flux duration; "" is 0.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = fmt.Errorf("negative")
	}
	return d, err
}

// failReason is Flux's Ready reason for a unit that failed with errs:
// ArtifactFailed when one of them is its source's (artifact wraps it),
// Retry when that source did not answer; else BuildFailed.
func failReason(errs diag.List, artifact ...error) (reason string, retry bool) {
	reason = manifest.ReasonBuildFailed
	for _, e := range errs {
		for _, a := range artifact {
			if errors.Is(e, a) {
				reason = manifest.ReasonArtifactFailed
			}
		}
		if errors.Is(e, source.ErrUnavailable) {
			reason, retry = manifest.ReasonArtifactFailed, true
		}
	}
	return reason, retry
}

// sourceCause is the cause of a Kustomization's error about a GitRepository
// gitaso could not read: ErrFluxSource, and source.ErrUnavailable too when
// the server did not answer (the unit is rendered again without a new
// commit).
func sourceCause(err error) error {
	if errors.Is(err, source.ErrTimeout) ||
		charts.Unavailable(err) && !errors.Is(err, source.ErrAuth) && !errors.Is(err, source.ErrRepoNotFound) && !errors.Is(err, source.ErrBranchNotFound) {
		return unavailable{ErrFluxSource}
	}
	return ErrFluxSource
}

// failedCount counts the units that did not render.
func failedCount(units []manifest.Unit) int {
	n := 0
	for _, u := range units {
		if u.Failed() {
			n++
		}
	}
	return n
}

// pathNotFound reports whether a Kustomization failed because its spec.path
// is not in its source.
func pathNotFound(errs diag.List) bool {
	for _, e := range errs {
		if e.Field == "spec.path" && strings.Contains(e.Msg, msgNoPath) {
			return true
		}
	}
	return false
}
