package emulator

import (
	"net/http"
	"regexp"
	"strings"
)

// Role assignments, management locks and policy assignments are listed as ARM lists them at a scope
// ({scope}/providers/Microsoft.Authorization/{type}): every one that applies there, that is attached at the scope,
// above it (the subscription, the tenant root) or below it (a resource of a listed resource group, a child of a
// listed resource). $filter=atScope() keeps those at or above the scope; for role assignments,
// $filter=principalId eq '{id}' keeps the principal's at, above and below (Role Assignments - List For Scope;
// Management Locks - List At Resource Group Level; Policy Assignments - List For Resource Group). Any other
// $filter answers 400 InvalidFilterInQueryString.

const policyAssignmentTypeKey = "microsoft.authorization/policyassignments"

// appliesAtScope reports whether typeKey is listed at a scope with what applies there rather than with the scope's
// own children.
func appliesAtScope(typeKey string) bool {
	return typeKey == raTypeKey || typeKey == lockTypeKey || typeKey == policyAssignmentTypeKey
}

var atScopeFilterRE = regexp.MustCompile(`(?i)^\s*atScope\(\s*\)\s*$`)

// applying returns the resources of typeKey attached at, above or below scopeKey (at or above with atOrAbove).
// Caller holds e.mu.
func (s *store) applying(typeKey, scopeKey string, atOrAbove bool) []*resource {
	var out []*resource
	for k := range s.byType[typeKey] {
		x := s.byKey[k]
		if x == nil {
			continue
		}
		above := scopeContains(x.parentKey, scopeKey)
		if above || !atOrAbove && scopeContains(scopeKey, x.parentKey) {
			out = append(out, x)
		}
	}
	sortResources(out)
	return out
}

// listApplying answers a list of an authorization type at a scope (see above).
func (e *Emulator) listApplying(r *http.Request, typeKey, scopeKey string) ([]*resource, *armError) {
	f := r.URL.Query().Get("$filter")
	switch {
	case f == "":
		return e.store.applying(typeKey, scopeKey, false), nil
	case atScopeFilterRE.MatchString(f):
		return e.store.applying(typeKey, scopeKey, true), nil
	case typeKey == raTypeKey && principalFilterRE.MatchString(f):
		return filterAssignments(e.store.applying(typeKey, scopeKey, false), f), nil
	}
	return nil, newARMError(http.StatusBadRequest, "InvalidFilterInQueryString", "The $filter '%s' is invalid: '%s' is not supported.", f, strings.TrimSpace(f))
}
