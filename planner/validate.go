package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/internal/diag"
)

// topLevelFields are the keys a Kubernetes object may have.
var topLevelFields = []string{"apiVersion", "kind", "metadata", "spec", "status"}

// metadataFields is ObjectMeta's field set.
var metadataFields = []string{
	"annotations", "creationTimestamp", "deletionGracePeriodSeconds", "deletionTimestamp", "finalizers",
	"generateName", "generation", "labels", "managedFields", "name", "namespace", "ownerReferences",
	"resourceVersion", "selfLink", "uid",
}

// validateObject checks an object's fields against the catalog before
// anything is converted; the caller fills in file, line and object. Unknown
// top-level and metadata fields are reported too: an API server drops them
// silently (a misspelt "annotation:" would lose a reconcile policy).
func validateObject(k *aso.Kind, content map[string]any) diag.List {
	var l diag.List
	l = append(l, unknownKeys(content, "", topLevelFields)...)
	if md, ok := content["metadata"].(map[string]any); ok {
		l = append(l, unknownKeys(md, "metadata.", metadataFields)...)
	}
	l = append(l, requiredPairs(k, content)...)
	return append(l, aso.Validate(k, content)...)
}

// armRequiredPairs are ARM-required properties that ASO offers as a literal
// and a *FromConfig field, so that neither is required in the CRD and ASO
// accepts a manifest with neither (ARM then rejects the PUT). gitaso asks
// for one of them up front.
var armRequiredPairs = map[string][]string{
	"authorization.azure.com/RoleAssignment":                {"principalId"},
	"managedidentity.azure.com/FederatedIdentityCredential": {"issuer", "subject"},
}

func requiredPairs(k *aso.Kind, content map[string]any) diag.List {
	spec, _ := content["spec"].(map[string]any)
	if spec == nil {
		return nil
	}
	var l diag.List
	for _, f := range armRequiredPairs[k.Group+"/"+k.Kind] {
		_, lit := spec[f]
		_, cfg := spec[f+"FromConfig"]
		if !lit && !cfg {
			l = append(l, &diag.Error{Field: "spec." + f, Msg: fmt.Sprintf("set one of %s and %sFromConfig (ARM requires properties.%s)", f, f, f)})
		}
	}
	return l
}

func unknownKeys(m map[string]any, prefix string, known []string) diag.List {
	var l diag.List
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if contains(known, k) {
			continue
		}
		msg := fmt.Sprintf("unknown field %q", k)
		if s := nearest(k, known); s != "" {
			msg += fmt.Sprintf(": did you mean %q?", s)
			if strings.EqualFold(s, k) {
				msg += fmt.Sprintf(" (field names are case-sensitive; the API server would drop %q silently)", k)
			}
		}
		l = append(l, &diag.Error{Field: prefix + k, Msg: msg})
	}
	return l
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// nearest returns the known name closest to s: equal ignoring case, or
// within an edit distance of 2.
func nearest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if strings.EqualFold(k, s) {
			return k
		}
		if d := editDistance(strings.ToLower(s), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// suggestKinds returns the nearest known group/version/kind spellings.
func suggestKinds(group, version, kind string) []string {
	return aso.Suggest(group, version, kind)
}

// armTypeOf returns the ARM resource type of an ID ("Microsoft.Resources/
// resourceGroups" for a resource group, "Microsoft.Resources/subscriptions"
// for a subscription), "" when it cannot tell.
func armTypeOf(id string) string {
	parts := strings.Split(strings.Trim(id, "/"), "/")
	idx := -1
	for i := len(parts) - 1; i >= 0; i-- {
		if strings.EqualFold(parts[i], "providers") {
			idx = i
			break
		}
	}
	if idx < 0 {
		switch {
		case len(parts) == 4 && strings.EqualFold(parts[0], "subscriptions") && strings.EqualFold(parts[2], "resourceGroups"):
			return "Microsoft.Resources/resourceGroups"
		case len(parts) == 2 && strings.EqualFold(parts[0], "subscriptions"):
			return "Microsoft.Resources/subscriptions"
		}
		return ""
	}
	rest := parts[idx+1:]
	if len(rest) < 3 || len(rest)%2 == 0 {
		return ""
	}
	t := rest[0]
	for i := 1; i < len(rest); i += 2 {
		t += "/" + rest[i]
	}
	return t
}

// ownerARMTypeOK checks an owner given by armId against the ARM type the
// kind's owner has.
func ownerARMTypeOK(k *aso.Kind, armID string) (want, got string, ok bool) {
	if k.ArbitraryOwner || k.OwnerKind == "" {
		return "", "", true
	}
	got = armTypeOf(armID)
	if got == "" {
		return "", "", true // malformed IDs are reported elsewhere
	}
	for _, c := range aso.Kinds() {
		if c.Group == k.OwnerGroup && c.Kind == k.OwnerKind {
			want = c.ARMType
			break
		}
	}
	if k.OwnerKind == "ResourceGroup" {
		want = "Microsoft.Resources/resourceGroups"
	}
	if want == "" {
		return "", "", true
	}
	return want, got, strings.EqualFold(want, got)
}
