package emulator

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
)

// Lists as ARM answers them to a general client:
//
//   - a list at a scope where the caller may not read everything (a role on one resource group, listing the
//     subscription's resources or resource groups, or a provider's type across the subscription) answers 200 with
//     what the caller may read; only a caller without any role beneath the scope gets 403 AuthorizationFailed;
//   - $filter on /resources and /resourcegroups: conditions joined by "and": resourceType, name, location,
//     resourceGroup (/resources only) and tagName/tagValue with eq, and substringof('text', name). Anything else
//     answers 400 InvalidFilterInQueryString.

// listAccess decides how a list at scope is answered: whole (true, false), filtered to what the caller may read
// (true, true), or refused with the 403 written (false).
func (e *Emulator) listAccess(w http.ResponseWriter, c *accessClaims, action, scope string, info *reqInfo) (ok, partial bool) {
	e.mu.RLock()
	all := e.rbac.allowed(c.Oid, strings.ToLower(action), strings.ToLower(scope))
	below := false
	if !all {
		sk := strings.ToLower(scope)
		for _, a := range e.rbac.byPrincipal[strings.ToLower(c.Oid)] {
			if scopeContains(sk, a.scope) {
				below = true
				break
			}
		}
	}
	e.mu.RUnlock()
	if all {
		return true, false
	}
	if below {
		return true, true
	}
	return e.authorize(w, c, action, scope, info), false
}

var (
	filterEqRE        = regexp.MustCompile(`(?i)^\s*(\w+)\s+eq\s+'((?:[^']|'')*)'\s*$`)
	filterSubstringRE = regexp.MustCompile(`(?i)^\s*substringof\(\s*'((?:[^']|'')*)'\s*,\s*name\s*\)\s*$`)
	filterAndRE       = regexp.MustCompile(`(?i)\s+and\s+`)
)

type listFilter struct {
	eq        map[string]string // lower-cased field -> value
	substring string
}

// parseListFilter parses a $filter of /resources (resources true) or /resourcegroups.
func parseListFilter(f string, resources bool) (*listFilter, *armError) {
	lf := &listFilter{eq: map[string]string{}}
	for _, cond := range filterAndRE.Split(strings.TrimSpace(f), -1) {
		if m := filterSubstringRE.FindStringSubmatch(cond); m != nil && resources {
			lf.substring = strings.ReplaceAll(m[1], "''", "'")
			continue
		}
		m := filterEqRE.FindStringSubmatch(cond)
		field := ""
		if m != nil {
			field = strings.ToLower(m[1])
		}
		switch field {
		case "tagname", "tagvalue":
		case "resourcetype", "name", "location", "resourcegroup":
			if !resources {
				field = ""
			}
		default:
			field = ""
		}
		if field == "" {
			return nil, newARMError(http.StatusBadRequest, "InvalidFilterInQueryString", "The $filter '%s' is invalid: '%s' is not supported.", f, strings.TrimSpace(cond))
		}
		lf.eq[field] = strings.ReplaceAll(m[2], "''", "'")
	}
	if _, ok := lf.eq["tagvalue"]; ok {
		if _, ok := lf.eq["tagname"]; !ok {
			return nil, newARMError(http.StatusBadRequest, "InvalidFilterInQueryString", "The $filter '%s' is invalid: tagValue needs tagName.", f)
		}
	}
	return lf, nil
}

func (lf *listFilter) match(x *resource) bool {
	for field, v := range lf.eq {
		switch field {
		case "resourcetype":
			if !strings.EqualFold(x.Type, v) {
				return false
			}
		case "name":
			if !strings.EqualFold(x.Name, v) {
				return false
			}
		case "location":
			if normalizeRegion(x.Location) != normalizeRegion(v) {
				return false
			}
		case "resourcegroup":
			if x.rgKey != strings.ToLower(v) {
				return false
			}
		}
	}
	if lf.substring != "" && !strings.Contains(strings.ToLower(x.Name), strings.ToLower(lf.substring)) {
		return false
	}
	if name, ok := lf.eq["tagname"]; ok {
		var body struct {
			Tags map[string]string `json:"tags"`
		}
		if json.Unmarshal(x.body, &body) != nil {
			return false
		}
		found := false
		for k, s := range body.Tags {
			if strings.EqualFold(k, name) {
				want, has := lf.eq["tagvalue"]
				found = !has || s == want
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// filterList applies $filter (on /resources and /resourcegroups) and, for a partial list, RBAC to the items of a
// list. Caller holds e.mu.
func (e *Emulator) filterList(r *http.Request, p armPath, c *accessClaims, items []*resource, partial bool) ([]*resource, *armError) {
	resources := p.Namespace == "" && strings.EqualFold(p.Tail, "resources")
	groups := p.Namespace == "" && strings.EqualFold(p.Type, typeResourceGroup)
	var lf *listFilter
	if f := r.URL.Query().Get("$filter"); f != "" && (resources || groups) {
		var aerr *armError
		if lf, aerr = parseListFilter(f, resources); aerr != nil {
			return nil, aerr
		}
	}
	if lf == nil && !partial {
		return items, nil
	}
	out := items[:0:0]
	for _, x := range items {
		if lf != nil && !lf.match(x) {
			continue
		}
		if partial && !e.rbac.allowed(c.Oid, strings.ToLower(actionFor(x.Type, "read")), x.key) {
			continue
		}
		out = append(out, x)
	}
	return out, nil
}
