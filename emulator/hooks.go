package emulator

import (
	"fmt"
	"net/http"
	"strings"
)

// The behaviours ASO's per-kind hooks guard against (gitaso's aso hooks are tested against them):
//
//   - writes refused while a resource, or the parent a child is written under, is in a transient state
//     (hooks_state.go): AKS clusters and agent pools, PostgreSQL flexible servers and their databases and firewall
//     rules, Kusto clusters and databases, Cosmos DB accounts being deleted;
//   - private endpoint connections that wait for approval, subnets' ipConfigurations, backup instances'
//     protection status (hooks_network.go, hooks_dataprotection.go);
//   - API Management products that cannot be deleted while they have subscriptions, unless
//     deleteSubscriptions=true (hooks_apimanagement.go);
//   - subscription aliases that create a subscription, and the subscription cancel action (hooks_subscription.go).
//
// SetResourceProperties (and PATCH /_admin/resource) puts a stored resource into any state, as a test needs it.

// serveBehaviour answers the requests a per-kind behaviour owns before the generic dispatch, reporting whether it
// did. Caller holds no lock.
func (e *Emulator) serveBehaviour(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo) bool {
	switch {
	case p.Kind == pathTail && r.Method == http.MethodPost && p.ParentType == typeSubscription &&
		strings.EqualFold(p.Namespace, "Microsoft.Subscription") && strings.EqualFold(p.Tail, "cancel"):
		e.serveCancelSubscription(w, p, c, info)
		return true
	case p.Kind == pathTail && r.Method == http.MethodPost && strings.EqualFold(p.ParentType, backupInstanceType) &&
		strings.EqualFold(p.Tail, "sync"):
		e.serveSyncBackupInstance(w, p, c, info)
		return true
	case p.Kind == pathResource && r.Method == http.MethodDelete && strings.EqualFold(p.Type, apimProductType):
		return e.deleteProductSubscriptions(w, r, p, c, info)
	}
	return false
}

// prepareBehaviour applies the per-kind behaviours to a PUT: it refuses writes in a transient state and fills what
// ARM fills. Caller holds e.mu (write).
func (e *Emulator) prepareBehaviour(p armPath, typeKey string, body, old map[string]any) *armError {
	if aerr := e.refuseTransient(p, typeKey, old); aerr != nil {
		return aerr
	}
	switch typeKey {
	case peTypeKey:
		prepareEndpointConnections(p, body, old)
	case subnetTypeKey:
		keepReadOnly(body, old, "ipConfigurations")
	case backupInstanceTypeKey:
		prepareBackupInstance(body, old)
	case aliasTypeKey:
		e.prepareAlias(body, old)
	}
	return nil
}

// keepReadOnly copies read-only properties ARM owns from the stored resource into a new body.
func keepReadOnly(body, old map[string]any, names ...string) {
	op, _ := old["properties"].(map[string]any)
	if op == nil {
		return
	}
	props := ensureObject(body, "properties")
	for _, n := range names {
		if v, ok := op[n]; ok {
			props[n] = v
		}
	}
}

// SetResourceProperties merges props into properties of the stored resource id (an RFC 7386 merge: null removes a
// member), as if Azure had changed it: a provisioningState of "Updating" makes an AKS cluster refuse writes, a
// state of "Stopped" a PostgreSQL server, and so on. It fails when the resource does not exist.
func (e *Emulator) SetResourceProperties(id string, props map[string]any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	res := e.store.get(strings.ToLower(id))
	if res == nil {
		return fmt.Errorf("emulator: no resource %s", id)
	}
	m, err := res.decode()
	if err != nil {
		return err
	}
	mergePatch(ensureObject(m, "properties"), props)
	res.body = mustJSON(m)
	if s, ok := props["provisioningState"].(string); ok {
		res.state = s
	}
	if isEmbeddedChild(res.typeKey) {
		e.syncEmbedded(res.parentKey)
	}
	e.markDirty()
	e.recordAdminWrite(res.ID, "write", "") // the Activity Log shows the change (activity.go)
	return nil
}

// serveAdminResource is PATCH /_admin/resource {"id": "...", "properties": {...}}: SetResourceProperties.
func (e *Emulator) serveAdminResource(w http.ResponseWriter, decode func(any) bool) {
	var in struct {
		ID         string         `json:"id"`
		Properties map[string]any `json:"properties"`
	}
	if !decode(&in) {
		return
	}
	if err := e.SetResourceProperties(in.ID, in.Properties); err != nil {
		writeARMError(w, http.StatusNotFound, "ResourceNotFound", err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
