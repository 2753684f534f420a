package render

import (
	"fmt"
	"time"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// defaultHelmTimeout is a HelmRelease's spec.timeout when it sets none
// (helm-controller's default).
const defaultHelmTimeout = 5 * time.Minute

// releaseDeps decides whether a HelmRelease may render: Flux checks
// spec.dependsOn before anything else, and a release whose dependency did
// not render, waits, does not exist at this revision (Flux waits for it
// forever) or is in a dependsOn cycle waits (DependencyNotReady).
type releaseDeps struct {
	byID     map[string]*helmRelease
	level    map[*helmRelease]int
	rendered map[*helmRelease]bool
}

func newReleaseDeps(rs []*helmRelease, levels [][]*helmRelease) *releaseDeps {
	d := &releaseDeps{byID: releasesByID(rs), level: map[*helmRelease]int{}, rendered: map[*helmRelease]bool{}}
	for i, l := range levels {
		for _, h := range l {
			d.level[h] = i
		}
	}
	return d
}

// blocked returns why h waits, "" when every release it depends on
// rendered. Releases of earlier levels are decided by then; a dependency
// in h's level or a later one is a cycle.
func (d *releaseDeps) blocked(h *helmRelease) string {
	for _, id := range h.dependsOn() {
		dep, ok := d.byID[id]
		switch {
		case !ok:
			return fmt.Sprintf("dependency '%s' is not ready: no HelmRelease %s rendered at this revision (it does not exist, or what declares it did not render; Flux waits for it)", id, id)
		case dep == h || d.level[dep] >= d.level[h]:
			return fmt.Sprintf("dependency '%s' is not ready: HelmReleases depend on one another in a cycle", id)
		case !d.rendered[dep]:
			return fmt.Sprintf("dependency '%s' is not ready", id)
		}
	}
	return ""
}

// releaseUnits returns the releases' unit records with their outcomes (a
// HelmRelease listed twice is one unit: the first).
func releaseUnits(rs []*helmRelease) []manifest.Unit {
	seen := map[string]bool{}
	var out []manifest.Unit
	for _, h := range rs {
		if seen[h.id] {
			continue
		}
		seen[h.id] = true
		u := h.unit()
		switch {
		case h.waiting != "":
			u.Reason, u.Message = manifest.ReasonDependencyNotReady, h.waiting
			u.Retry = h.lookupWait // rendered again once the object exists
		case len(h.errs) > 0:
			u.Reason, u.Retry = failReason(h.errs, ErrHelmSource, ErrHelmChart)
			u.Message, u.Errors = source.UnitMessage(h.errs), h.errs
		default:
			u.Objects = len(h.docs)
		}
		out = append(out, u)
	}
	return out
}

// unit returns the release's unit record (its outcome not set).
//
// Wait: helm-controller runs Helm with --wait unless
// spec.install.disableWait (first install) or spec.upgrade.disableWait
// (later upgrades) is set: Helm then waits for the release's resources to
// be ready before the release is Ready. gitaso renders every revision as
// an install and cannot tell the two actions apart, so a release that
// turns waiting off for either does not wait; otherwise Wait is true (the
// reconciler waits for its ASO objects' Ready). Timeout is spec.timeout,
// else Helm's 5m; RetryInterval is spec.interval (a HelmRelease has no
// retryInterval).
func (h *helmRelease) unit() manifest.Unit {
	s := &h.spec
	u := manifest.Unit{Kind: manifest.UnitHelmRelease, Namespace: h.obj.Namespace(), Name: h.obj.Name(),
		File: h.obj.File, Line: h.obj.Line, Suspended: h.suspended(), Wait: true, Ignored: h.ignored != "", Message: h.ignored}
	if (s.Install != nil && s.Install.DisableWait) || (s.Upgrade != nil && s.Upgrade.DisableWait) {
		u.Wait = false
	}
	if ns, name, ok := cutID(h.obj.Annotations()[AnnotationFluxKustomization]); ok {
		u.Parent = manifest.UnitID(manifest.UnitKustomization, ns, name)
	}
	for _, id := range h.dependsOn() {
		ns, name := splitID(id)
		u.DependsOn = append(u.DependsOn, manifest.UnitID(manifest.UnitHelmRelease, ns, name))
	}
	u.Interval, _ = parseDuration(s.Interval)
	u.Timeout, _ = parseDuration(s.Timeout)
	if u.Timeout == 0 {
		u.Timeout = defaultHelmTimeout
	}
	u.RetryInterval = u.Interval
	return u
}

// durations checks spec.interval and spec.timeout (Go durations).
func (h *helmRelease) durations() diag.List {
	var errs diag.List
	for _, d := range [][2]string{{"spec.interval", h.spec.Interval}, {"spec.timeout", h.spec.Timeout}} {
		if _, err := parseDuration(d[1]); err != nil {
			errs = append(errs, h.err(d[0], nil, "%q is not a duration (e.g. 10m, 1h30m)", d[1]))
		}
	}
	return errs
}

// cutID splits "namespace/name".
func cutID(id string) (ns, name string, ok bool) {
	ns, name = splitID(id)
	return ns, name, ns != "" && name != ""
}
