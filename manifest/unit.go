package manifest

import (
	"time"

	"github.com/gitaso/gitaso/internal/diag"
)

// Unit kinds: a Flux Kustomization or HelmRelease is a unit of its own, as
// in Flux: it renders, applies and fails alone.
const (
	UnitKustomization = "Kustomization"
	UnitHelmRelease   = "HelmRelease"
)

// Flux's Ready reasons, as kustomize-controller and helm-controller write
// them, used for units.
const (
	ReasonSucceeded          = "ReconciliationSucceeded"
	ReasonFailed             = "ReconciliationFailed"
	ReasonBuildFailed        = "BuildFailed"
	ReasonArtifactFailed     = "ArtifactFailed"
	ReasonDependencyNotReady = "DependencyNotReady"
	ReasonHealthCheckFailed  = "HealthCheckFailed"
	ReasonProgressing        = "Progressing"
	ReasonSuspended          = "Suspended"
	// ReasonParentNotReady is gitaso's: the Kustomization whose output
	// declares the unit did not render, so the unit's spec at this
	// revision is unknown and it keeps its objects as last applied.
	ReasonParentNotReady = "ParentNotReady"
)

// Annotations a unit's objects carry (the renderers write them): the
// HelmRelease wins over the Kustomization that declared it.
const (
	AnnotationUnitKustomization = "gitaso.io/flux-kustomization"
	AnnotationUnitHelmRelease   = "gitaso.io/helm-release"
	// AnnotationKept marks an object of a unit that did not render at
	// this revision, taken from what the unit last applied (its value is
	// the unit's ID): planned as it was, never deleted for being absent.
	AnnotationKept = "gitaso.io/kept-from-unit"
)

// UnitRef names an object of a unit's healthChecks.
type UnitRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// Unit is one Flux Kustomization or HelmRelease found at a revision, and
// whether it rendered. A repository without Flux objects has no units: it
// is one unit as a whole (a failure refuses the revision, as before).
type Unit struct {
	Kind      string `json:"kind"` // UnitKustomization or UnitHelmRelease
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	File      string `json:"file,omitempty"` // where the Flux object is declared
	Line      int    `json:"line,omitempty"`
	// Parent is the ID of the Kustomization whose output declared the
	// unit; "" for a unit of the entry path.
	Parent string `json:"parent,omitempty"`
	// DependsOn are the IDs of the units spec.dependsOn names (a
	// Kustomization's name Kustomizations, a HelmRelease's HelmReleases).
	DependsOn []string `json:"dependsOn,omitempty"`
	// Suspended: spec.suspend or kustomize.toolkit.fluxcd.io/reconcile:
	// disabled.
	Suspended bool `json:"suspended,omitempty"`
	// Wait (spec.wait) and HealthChecks (spec.healthChecks): the unit is
	// Ready only once these ASO objects (Wait: all of its ASO objects)
	// are Ready in Azure; Timeout bounds the wait (spec.timeout, else
	// spec.interval, as Flux).
	Wait          bool          `json:"wait,omitempty"`
	HealthChecks  []UnitRef     `json:"healthChecks,omitempty"`
	Timeout       time.Duration `json:"timeout,omitempty"`
	Interval      time.Duration `json:"interval,omitempty"`
	RetryInterval time.Duration `json:"retryInterval,omitempty"` // spec.retryInterval, else Interval
	// Reason is "" when the unit rendered; otherwise why it did not
	// (ReasonBuildFailed, ReasonArtifactFailed, ReasonDependencyNotReady,
	// ReasonParentNotReady, ...), Message saying it in a line and Errors
	// every problem with file and line. A unit with a Reason keeps its
	// objects as last applied.
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Errors  diag.List `json:"-"`
	// Retry is set when the failure may pass without a new commit (a
	// registry that did not answer): the unit is rendered again after
	// RetryInterval even when the commit does not change.
	Retry bool `json:"retry,omitempty"`
	// Objects is the number of objects the unit rendered.
	Objects int `json:"objects,omitempty"`
	// Ignored is set on a HelmRelease that renders no ASO object (or is
	// skipped explicitly): it is counted, not planned.
	Ignored bool `json:"ignored,omitempty"`
}

// UnitID is "Kind/namespace/name".
func UnitID(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// ID returns the unit's "Kind/namespace/name".
func (u Unit) ID() string { return UnitID(u.Kind, u.Namespace, u.Name) }

// Failed reports whether the unit did not render (or waits): it keeps its
// objects as last applied.
func (u Unit) Failed() bool { return u.Reason != "" }

// UnitOf returns the ID of the unit an object belongs to, from the
// provenance annotations the renderers write: its HelmRelease, else its
// Kustomization; "" for an object of the entry path (or of a repository
// without Flux objects).
func UnitOf(o Object) string {
	ann := o.Annotations()
	if id := ann[AnnotationKept]; id != "" {
		return id
	}
	return UnitOfAnnotations(ann)
}

// UnitOfAnnotations is UnitOf over an object's annotations.
func UnitOfAnnotations(ann map[string]string) string {
	if v := ann[AnnotationUnitHelmRelease]; v != "" {
		if ns, name, ok := cutSlash(v); ok {
			return UnitID(UnitHelmRelease, ns, name)
		}
	}
	if v := ann[AnnotationUnitKustomization]; v != "" {
		if ns, name, ok := cutSlash(v); ok {
			return UnitID(UnitKustomization, ns, name)
		}
	}
	return ""
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}
