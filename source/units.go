package source

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// UnitsRenderer is a Renderer that renders each Flux Kustomization and
// HelmRelease as a unit of its own (manifest.Unit), as Flux reconciles
// them: a unit that cannot be rendered (a build error, a missing
// spec.path, a chart not found, a registry that does not answer, a
// dependsOn on a failed unit, ...) is listed with its Reason, Message and
// Errors, and none of its objects are in the files; every other unit
// renders as before. Build prefers it to SourcesRenderer and Renderer and
// puts the units in Snapshot.Units.
//
// Errors that belong to no unit (the entry path's own kustomize builds,
// YAML, substitution) still refuse the revision: RenderUnits then returns
// them as Render does (a diag.List, or a *PartialRenderError with a
// non-nil *Rendered).
type UnitsRenderer interface {
	SourcesRenderer
	RenderUnits(ctx context.Context, files []File) (*Rendered, error)
}

// Rendered is what a UnitsRenderer returns.
type Rendered struct {
	Files []File
	// External are the sources outside the repository the files depend
	// on (see SourcesRenderer), sorted.
	External []manifest.External
	// Units are the Flux Kustomizations and HelmReleases found, rendered
	// or not, sorted by ID; none for a repository without Flux objects.
	// A failed unit's Errors name file and line as a refused revision's
	// do (Build runs LocateFields over them).
	Units []manifest.Unit
}

// FailedUnits returns the units of a Rendered that did not render.
func (r *Rendered) FailedUnits() []manifest.Unit {
	var out []manifest.Unit
	for _, u := range r.Units {
		if u.Failed() {
			out = append(out, u)
		}
	}
	return out
}

// UnitErrors returns the errors of the units that did not render, for a
// caller that reports them as input errors (gitaso validate) or refuses
// the revision for them (render.Renderer.Render): a unit without errors of
// its own (waiting on a dependency) is one error naming it and why.
func UnitErrors(units []manifest.Unit) diag.List {
	var out diag.List
	for _, u := range units {
		if !u.Failed() {
			continue
		}
		if len(u.Errors) > 0 {
			out = append(out, u.Errors...)
			continue
		}
		out = append(out, &diag.Error{File: u.File, Line: u.Line, Object: u.Namespace + "/" + u.Kind + "/" + u.Name,
			Msg: u.Reason + ": " + u.Message})
	}
	return out
}

// locateUnits gives the failed units' errors the treatment a refused
// revision's get (LocateFields: the line of the field named), sorted, and
// sorts the units by ID.
func locateUnits(units []manifest.Unit, texts manifest.Texts) []manifest.Unit {
	if len(units) == 0 {
		return nil
	}
	units = slices.Clone(units)
	for i := range units {
		if len(units[i].Errors) > 0 {
			errs := slices.Clone(units[i].Errors)
			LocateFields(errs, texts)
			units[i].Errors = errs.Sorted()
			units[i].Message = UnitMessage(units[i].Errors) // with the lines found
		}
	}
	slices.SortFunc(units, func(a, b manifest.Unit) int { return strings.Compare(a.ID(), b.ID()) })
	return units
}

// retryUnits reports whether a unit failed on something that may pass
// without a new commit (manifest.Unit.Retry): the commit is rendered again.
func retryUnits(units []manifest.Unit) bool {
	return slices.ContainsFunc(units, func(u manifest.Unit) bool { return u.Retry })
}

// failUnits fails the units errs names (an object's error found while
// parsing: BuildFailed, as the renderer's own), as the renderer would have:
// their objects leave the snapshot, the units they declared (Parent) are
// unknown (dropped from the list, with their objects), and the units whose
// dependsOn names one of them wait (DependencyNotReady), in turn.
func failUnits(snap *manifest.Snapshot, errs map[string]diag.List) {
	out := map[string]bool{} // units whose objects leave the snapshot
	dropped := map[string]bool{}
	for i := range snap.Units {
		u := &snap.Units[i]
		if es := errs[u.ID()]; len(es) > 0 {
			if !u.Failed() {
				u.Reason, u.Objects = manifest.ReasonBuildFailed, 0
			}
			u.Errors = append(u.Errors, es...)
			u.Message = UnitMessage(u.Errors)
			out[u.ID()] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for i := range snap.Units {
			u := &snap.Units[i]
			id := u.ID()
			if out[id] || dropped[id] {
				continue
			}
			if u.Parent != "" && (out[u.Parent] || dropped[u.Parent]) {
				dropped[id], changed = true, true
				continue
			}
			for _, d := range u.DependsOn {
				if out[d] || dropped[d] {
					u.Reason, u.Message, u.Errors, u.Retry, u.Objects = manifest.ReasonDependencyNotReady,
						fmt.Sprintf("dependency '%s' is not ready", strings.SplitN(d, "/", 2)[1]), nil, false, 0
					out[id], changed = true, true
					break
				}
			}
		}
	}
	snap.Units = slices.DeleteFunc(snap.Units, func(u manifest.Unit) bool { return dropped[u.ID()] })
	snap.Objects = slices.DeleteFunc(snap.Objects, func(o manifest.Object) bool {
		id := manifest.UnitOf(o)
		return out[id] || dropped[id]
	})
}

// UnitMessage says in one line why a unit failed: its first error, and how
// many more there are (manifest.Unit.Message).
func UnitMessage(errs diag.List) string {
	if len(errs) == 0 {
		return ""
	}
	sorted := errs.Sorted()
	msg := strings.Join(strings.Fields(sorted[0].Error()), " ")
	if len(sorted) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(sorted)-1)
	}
	return msg
}
