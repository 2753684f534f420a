package emulator

import (
	"net/http"
	"strings"
)

// API Management products and their subscriptions. A product that subscriptions are scoped to (a
// service/subscriptions resource whose properties.scope is the product, as "/products/{id}" or its full ID) cannot
// be deleted unless the DELETE says deleteSubscriptions=true, which deletes those subscriptions with it, as
// armapimanagement's ProductClient.Delete does. The refusal (400 ValidationError) is modelled: the conformance
// recordings hold no product deletion with subscriptions.

const (
	apimProductType         = "Microsoft.ApiManagement/service/products"
	apimSubscriptionTypeKey = "microsoft.apimanagement/service/subscriptions"
)

// productSubscriptions are the subscriptions of the product at productID. Caller holds e.mu.
func (e *Emulator) productSubscriptions(productID string) []*resource {
	p := parseARMPath(productID)
	var out []*resource
	for _, s := range e.store.childrenOf(strings.ToLower(p.Parent), apimSubscriptionTypeKey) {
		m, err := s.decode()
		if err != nil {
			continue
		}
		scope := strings.ToLower(strings.TrimRight(getString(m, "properties", "scope"), "/"))
		if scope == "/products/"+strings.ToLower(p.Name) || scope == strings.ToLower(productID) {
			out = append(out, s)
		}
	}
	return out
}

// deleteProductSubscriptions runs before a product's DELETE: it refuses the DELETE while subscriptions use the
// product and deleteSubscriptions is not true, and deletes them when it is. It reports whether it answered the
// request (a refusal); otherwise the generic DELETE follows.
func (e *Emulator) deleteProductSubscriptions(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo) bool {
	if !e.authorize(w, c, actionFor(p.Type, "delete"), p.ID, info) {
		return true
	}
	withSubs := strings.EqualFold(r.URL.Query().Get("deleteSubscriptions"), "true")
	e.mu.Lock()
	subs := e.productSubscriptions(p.ID)
	if len(subs) > 0 && !withSubs {
		e.mu.Unlock()
		e.writeErr(w, info, newARMError(http.StatusBadRequest, "ValidationError",
			"Product '%s' has %d subscription(s). Delete them first or set deleteSubscriptions=true.", p.Name, len(subs)))
		return true
	}
	for _, s := range subs {
		e.removeResource(s.key)
	}
	if len(subs) > 0 {
		e.markDirty()
	}
	e.mu.Unlock()
	return false
}
