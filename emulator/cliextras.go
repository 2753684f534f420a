package emulator

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// What a general ARM client (the Azure CLI, `az resource`, the portal's calls) relies on beyond what ASO sends,
// answered before the generic dispatch (serveExtras):
//
//   - GET /subscriptions and GET /subscriptions/{id} show a subscription to every principal holding a role
//     anywhere in it, as ARM does (a principal with a role on one resource group sees the subscription);
//   - GET {scope}/providers and {scope}/providers/{namespace} list resourceTypes with their api-versions and
//     locations (providers.go), and GET /subscriptions/{id}/locations the public regions (locations.go);
//   - checkNameAvailability of storage accounts, Service Bus namespaces and Key Vaults (namecheck.go);
//   - listKeys and regenerateKey(s) of storage accounts and Service Bus / Event Hubs authorization rules, with
//     valid base64 keys that change when regenerated (exports_keys.go);
//   - the Microsoft.Resources/tags/default extension of any resource, resource group or subscription, and the
//     subscription's tagNames (tags.go);
//   - a DELETE of a missing resource group answers 404 ResourceGroupNotFound;
//   - management locks (Microsoft.Authorization/locks, CanNotDelete and ReadOnly) refuse what they lock
//     (locks.go);
//   - resource names and locations are validated on create (names.go, locations.go).
//
// Subscription-wide lists filtered to what the caller may read and $filter on /resources and /resourcegroups are
// in listfilter.go.

// serveExtras answers the requests above, reporting whether it did. Caller holds no lock.
func (e *Emulator) serveExtras(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo, apiVersion string) bool {
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	post := r.Method == http.MethodPost
	switch {
	case p.Kind == pathSubList && get:
		e.serveVisibleSubscriptions(w, c)
		return true
	case p.Kind == pathResource && p.Type == typeSubscription && get:
		return e.serveVisibleSubscription(w, p, c)
	case (p.Kind == pathProvider || p.Kind == pathProviderList) && get:
		e.serveProviders(w, r, p)
		return true
	case p.Kind == pathTail && get && p.Namespace == "" && p.ParentType == typeSubscription && strings.EqualFold(p.Tail, "locations"):
		e.serveLocations(w, p)
		return true
	case p.Kind == pathTail && get && p.Namespace == "" && p.ParentType == typeSubscription && strings.EqualFold(p.Tail, "tagNames"):
		e.serveTagNames(w, p, c, info)
		return true
	case p.Kind == pathTail && post && p.ParentType == typeSubscription && strings.EqualFold(p.Tail, "checkNameAvailability"):
		return e.serveCheckName(w, r, p, c, info)
	case p.Kind == pathTail && post && isKeyAction(p):
		if e.refuseLocked(w, r, p, info) {
			return true
		}
		return e.serveKeyAction(w, r, p, c, info)
	case p.Kind == pathResource && strings.EqualFold(p.Type, tagsType):
		e.serveTags(w, r, p, c, info)
		return true
	case p.Kind == pathResource && r.Method == http.MethodDelete && p.Type == typeResourceGroup:
		if !e.authorize(w, c, actionFor(p.Type, "delete"), p.ID, info) {
			return true
		}
		e.mu.RLock()
		missing := e.rgMissing(p)
		e.mu.RUnlock()
		if missing {
			e.writeErr(w, info, newARMError(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", p.RG))
			return true
		}
	}
	if p.Kind == pathResource && (r.Method == http.MethodPut || r.Method == http.MethodPatch || r.Method == http.MethodDelete) {
		if e.refuseLocked(w, r, p, info) {
			return true
		}
	}
	if p.Kind == pathResource && r.Method == http.MethodPut {
		return e.refuseInvalidCreate(w, r, p, c, info)
	}
	return false
}

// peekBody reads the request body and puts it back for the handler that follows.
func peekBody(r *http.Request) []byte {
	if r.Body == nil {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	return b
}

// decodeBody decodes a JSON request body into v, writing ARM's 400 when it is not JSON.
func (e *Emulator) decodeBody(w http.ResponseWriter, r *http.Request, info *reqInfo, v any) bool {
	b := peekBody(r)
	if len(bytes.TrimSpace(b)) == 0 {
		e.writeErr(w, info, newARMError(http.StatusBadRequest, "InvalidRequestContent", "The request content was invalid and could not be deserialized: 'the request body is empty'."))
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		e.writeErr(w, info, newARMError(http.StatusBadRequest, "InvalidRequestContent", "The request content was invalid and could not be deserialized: '%v'.", err))
		return false
	}
	return true
}

// visibleSubscription reports whether a principal holds any role in the subscription (at it, or at a resource group
// or resource in it). Caller holds e.mu.
func (e *Emulator) visibleSubscription(oid, subKey string) bool {
	scope := "/subscriptions/" + subKey
	for _, a := range e.rbac.byPrincipal[strings.ToLower(oid)] {
		if a.scope == "/" || scopeContains(scope, a.scope) || scopeContains(a.scope, scope) {
			return true
		}
	}
	return false
}

func (e *Emulator) serveVisibleSubscriptions(w http.ResponseWriter, c *accessClaims) {
	e.mu.RLock()
	values := []any{}
	for _, k := range slices.Sorted(maps.Keys(e.subs)) {
		if e.visibleSubscription(c.Oid, k) {
			values = append(values, e.subscriptionJSON(e.subs[k]))
		}
	}
	e.mu.RUnlock()
	writeJSON(w, http.StatusOK, map[string]any{"value": values, "count": map[string]any{"type": "Total", "value": len(values)}})
}

// serveVisibleSubscription answers GET /subscriptions/{id} for a principal with a role somewhere in it; it leaves
// the others to the generic 403.
func (e *Emulator) serveVisibleSubscription(w http.ResponseWriter, p armPath, c *accessClaims) bool {
	e.mu.RLock()
	s := e.subs[strings.ToLower(p.Sub)]
	ok := s != nil && e.visibleSubscription(c.Oid, strings.ToLower(p.Sub))
	var body map[string]any
	if ok {
		body = e.subscriptionJSON(s)
	}
	e.mu.RUnlock()
	if !ok {
		return false
	}
	writeJSON(w, http.StatusOK, body)
	return true
}
