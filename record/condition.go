package record

import "time"

// Condition status values (Kubernetes' metav1.ConditionStatus).
const (
	StatusTrue    = "True"
	StatusFalse   = "False"
	StatusUnknown = "Unknown"
)

// Condition severities as ASO uses them; severity is empty when Status is True.
const (
	SeverityError   = "Error"
	SeverityWarning = "Warning"
	SeverityInfo    = "Info"
)

// ConditionReady is the condition type gitaso maintains per resource.
const ConditionReady = "Ready"

// Condition is a status condition in ASO's shape (status.conditions[] of an
// ASO resource): Ready with status True|False|Unknown, a severity when not
// True, ASO's reason (Reconciling, WaitingForOwner, ... or ARM's error code)
// and the generation it describes.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Severity           string    `json:"severity,omitempty"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
}

// IsEquivalent reports whether c and other are the same except for
// LastTransitionTime (ASO's Condition.IsEquivalent).
func (c Condition) IsEquivalent(other Condition) bool {
	return c.Type == other.Type &&
		c.Status == other.Status &&
		c.Severity == other.Severity &&
		c.Reason == other.Reason &&
		c.ObservedGeneration == other.ObservedGeneration &&
		c.Message == other.Message
}

// priority follows ASO: True and False/Warning|Error rank highest, False/Info
// next, Unknown lowest.
func (c Condition) priority() int {
	switch c.Status {
	case StatusTrue:
		return 5
	case StatusFalse:
		if c.Severity == SeverityInfo {
			return 4
		}
		return 5 // Warning, Error, or (wrongly) no severity: make it visible
	case StatusUnknown:
		return 3
	}
	return 0
}

// reasonPriority lets Reconciling (Info) replace operator-raised warnings that
// have been fixed, as ASO's SetConditionReasonAware does. Unlisted reasons
// rank 0.
var reasonPriority = map[string]int{
	"ReferenceNotFound": -2,
	"SecretNotFound":    -2,
	"ConfigMapNotFound": -2,
	"WaitingForOwner":   -2,
	"Reconciling":       -1,
}

// ShouldOverwrite reports whether c should replace old under ASO's rules
// (conversion-rules §8):
//   - an empty old condition (no type) is always replaced;
//   - a newer observedGeneration wins, an older one never does (ASO lets an
//     older one through on priority; gitaso never regresses a generation);
//   - an equivalent condition does not replace (the first occurrence keeps its
//     lastTransitionTime);
//   - at the same generation True/Warning/Error beat Info, Info beats Unknown,
//     equal priority replaces;
//   - Reconciling also replaces WaitingForOwner, ReferenceNotFound,
//     SecretNotFound and ConfigMapNotFound, and any other non-Unknown reason
//     replaces those and Reconciling (ASO's SetConditionReasonAware).
func (c Condition) ShouldOverwrite(old Condition) bool {
	if old.Type == "" {
		return true
	}
	if c.Type != old.Type {
		return false
	}
	if c.ObservedGeneration != old.ObservedGeneration {
		return c.ObservedGeneration > old.ObservedGeneration
	}
	if c.IsEquivalent(old) {
		return false
	}
	if c.priority() >= old.priority() {
		return true
	}
	// Reason-aware override; an Unknown condition never uses it, so Info
	// always beats Unknown.
	return c.Status != StatusUnknown && reasonPriority[c.Reason] > reasonPriority[old.Reason]
}

// MergeCondition returns the condition to store when next is reported while
// old is stored, and whether it differs from old. When next wins and its
// status equals old's, old's LastTransitionTime is kept (the status did not
// transition); when the status changes and next has no LastTransitionTime,
// now is used.
func MergeCondition(old, next Condition, now time.Time) (Condition, bool) {
	if !next.ShouldOverwrite(old) {
		return old, false
	}
	if old.Type != "" && old.Status == next.Status && !old.LastTransitionTime.IsZero() {
		next.LastTransitionTime = old.LastTransitionTime
	} else if next.LastTransitionTime.IsZero() {
		next.LastTransitionTime = now
	}
	next.LastTransitionTime = next.LastTransitionTime.UTC().Truncate(time.Second)
	return next, true
}
