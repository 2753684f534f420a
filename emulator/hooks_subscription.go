package emulator

import (
	"net/http"
	"strings"
)

// Subscription aliases (/providers/Microsoft.Subscription/aliases/{name}) and cancelling a subscription. A PUT of
// an alias without properties.subscriptionId creates a subscription (named by properties.displayName, else the
// alias) and reports its ID in properties.subscriptionId; deleting the alias leaves the subscription, as in Azure.
// POST /subscriptions/{id}/providers/Microsoft.Subscription/cancel cancels it: GET /subscriptions/{id} then reports
// state "Disabled", and the answer is {"subscriptionId": id}.

const aliasTypeKey = "microsoft.subscription/aliases"

func init() { untrackedTopLevel[aliasTypeKey] = true } // an alias has no location

// SubscriptionState is the state GET /subscriptions/{id} reports: Enabled, Disabled once cancelled, "" when the
// tenant has no such subscription.
func (e *Emulator) SubscriptionState(id string) string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	s := e.subs[strings.ToLower(id)]
	if s == nil {
		return ""
	}
	return firstNonEmpty(s.State, "Enabled")
}

// prepareAlias gives a new alias its subscription. Caller holds e.mu (write).
func (e *Emulator) prepareAlias(body, old map[string]any) {
	props := ensureObject(body, "properties")
	sub := firstNonEmpty(getString(old, "properties", "subscriptionId"), getString(props, "subscriptionId"))
	if sub == "" {
		sub = newUUID()
	}
	props["subscriptionId"] = sub
	if e.subs[strings.ToLower(sub)] == nil {
		name := firstNonEmpty(getString(props, "displayName"), sub)
		e.subs[strings.ToLower(sub)] = &subscription{ID: strings.ToLower(sub), DisplayName: name}
	}
}

// serveCancelSubscription answers POST /subscriptions/{id}/providers/Microsoft.Subscription/cancel.
func (e *Emulator) serveCancelSubscription(w http.ResponseWriter, p armPath, c *accessClaims, info *reqInfo) {
	if !e.authorize(w, c, "Microsoft.Subscription/cancel/action", "/subscriptions/"+p.Sub, info) {
		return
	}
	e.mu.Lock()
	if s := e.subs[strings.ToLower(p.Sub)]; s != nil {
		s.State = "Disabled"
	}
	e.mu.Unlock()
	e.markDirty()
	writeJSON(w, http.StatusOK, map[string]any{"subscriptionId": p.Sub})
}
