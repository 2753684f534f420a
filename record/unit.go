package record

import "time"

// Unit is what gitaso remembers about one Flux Kustomization or
// HelmRelease (a unit: it renders, applies and fails alone) between runs,
// and what the API shows of it (GET /api/v1/units).
type Unit struct {
	Kind      string `json:"kind"` // Kustomization or HelmRelease
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	File      string `json:"file,omitempty"`
	Line      int    `json:"line,omitempty"`
	// Parent is the ID of the Kustomization whose output declared it.
	Parent    string   `json:"parent,omitempty"`
	DependsOn []string `json:"dependsOn,omitempty"`
	Suspended bool     `json:"suspended,omitempty"`
	Wait      bool     `json:"wait,omitempty"`
	// Ready is Flux's Ready condition: True with ReconciliationSucceeded;
	// False with BuildFailed, ArtifactFailed, DependencyNotReady,
	// ParentNotReady, ReconciliationFailed or HealthCheckFailed; Unknown
	// with Progressing while wait or healthChecks wait for Azure.
	Ready Condition `json:"ready"`
	// LastAppliedRevision is the revision whose objects the unit last
	// applied completely (Flux's status.lastAppliedRevision);
	// LastAttemptedRevision the newest one it was rendered or tried at.
	LastAppliedRevision   string `json:"lastAppliedRevision,omitempty"`
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`
	// Errors are the unit's problems, each "file:line: object: field:
	// message", when it failed.
	Errors []string `json:"errors,omitempty"`
	// Objects are the state keys of the unit's ASO objects as last
	// applied (kept while it fails).
	Objects []string `json:"objects,omitempty"`
	// Ignored: a HelmRelease that renders no ASO object (or is skipped).
	Ignored bool `json:"ignored,omitempty"`
	// AppliedAt is when LastAppliedRevision was applied; ReadySince when
	// Ready last changed is Ready.LastTransitionTime. NextRetryAt is when
	// a failure that may pass without a commit is tried again.
	AppliedAt   time.Time `json:"appliedAt,omitzero"`
	NextRetryAt time.Time `json:"nextRetryAt,omitzero"`
	UpdatedAt   time.Time `json:"updatedAt,omitzero"`
}

// ID returns "Kind/namespace/name".
func (u Unit) ID() string { return u.Kind + "/" + u.Namespace + "/" + u.Name }

// Failing reports whether the unit's Ready condition is False.
func (u Unit) Failing() bool { return u.Ready.Status == StatusFalse }
