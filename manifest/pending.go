package manifest

import (
	"slices"
	"strings"
)

// Values not known until another resource is applied.
//
// A substitution source (a --substitute-from ConfigMap or Secret, a Flux
// Kustomization's substituteFrom) that one of gitaso's resources exports
// (operatorSpec.configMaps/secrets) does not exist before that resource is
// applied for the first time. The renderers then write PendingValue(name)
// for each variable of that scope they cannot resolve, and report the source
// as an External of kind PendingConfigMap/PendingSecret; the planner sets
// aside every object holding such a value (and what depends on it) until the
// source exists, instead of applying an object with an empty value.
const (
	pendingOpen  = "⟦known-after-apply:"
	pendingClose = "⟧"

	// ExternalPendingConfigMap and ExternalPendingSecret are the External
	// kinds of a substitution source that does not exist yet: User is its
	// "namespace/name", Name its name, URL says who reads it.
	ExternalPendingConfigMap = "PendingConfigMap"
	ExternalPendingSecret    = "PendingSecret"
	// ExternalPending is a pending source of either kind (a reference
	// without a kind).
	ExternalPending = "Pending"
)

// IsPending reports whether an External is a pending substitution source.
func (e External) IsPending() bool {
	return e.Kind == ExternalPending || e.Kind == ExternalPendingConfigMap || e.Kind == ExternalPendingSecret
}

// PendingValue is the text a renderer substitutes for ${name} while the
// variable's source does not exist yet. It is a valid YAML plain scalar
// (no ": ", " #" or "$"), also inside a longer string.
func PendingValue(name string) string { return pendingOpen + name + pendingClose }

// PendingVars returns the sorted names of the variables whose values the
// object is still waiting for (see PendingValue), nil when there are none.
func PendingVars(o Object) []string {
	var names []string
	walkStrings(o.Content, func(s string) {
		for {
			i := strings.Index(s, pendingOpen)
			if i < 0 {
				return
			}
			s = s[i+len(pendingOpen):]
			j := strings.Index(s, pendingClose)
			if j < 0 {
				return
			}
			if !slices.Contains(names, s[:j]) {
				names = append(names, s[:j])
			}
			s = s[j+len(pendingClose):]
		}
	})
	slices.Sort(names)
	return names
}

// HasPending reports whether a string holds a pending value.
func HasPending(s string) bool { return strings.Contains(s, pendingOpen) }

func walkStrings(v any, f func(string)) {
	switch t := v.(type) {
	case string:
		if strings.Contains(t, pendingOpen) {
			f(t)
		}
	case map[string]any:
		for k, x := range t {
			walkStrings(k, f)
			walkStrings(x, f)
		}
	case []any:
		for _, x := range t {
			walkStrings(x, f)
		}
	}
}
