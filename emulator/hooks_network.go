package emulator

import (
	"fmt"
	"strings"
)

// Private endpoints and subnets, as Microsoft.Network reports them.
//
// A private endpoint's connections carry privateLinkServiceConnectionState: an automatic connection
// (privateLinkServiceConnections) is Approved at once; a manual one (manualPrivateLinkServiceConnections) is
// Pending until the owner of the linked resource approves it (SetPrivateEndpointConnectionStatus stands for that
// approval), and keeps its state across PUTs of the endpoint. A subnet's ipConfigurations (the NICs using it) are
// read-only: a PUT of the subnet keeps them.

const subnetTypeKey = "microsoft.network/virtualnetworks/subnets"

// prepareEndpointConnections fills the connections' IDs and states. Caller holds e.mu (write).
func prepareEndpointConnections(p armPath, body, old map[string]any) {
	props := ensureObject(body, "properties")
	for _, coll := range []string{"privateLinkServiceConnections", "manualPrivateLinkServiceConnections"} {
		items, _ := props[coll].([]any)
		prev := map[string]any{}
		if oi, ok := getPath(old, "properties", coll); ok {
			for _, it := range asSlice(oi) {
				if m, ok := it.(map[string]any); ok {
					if st, ok := getPath(m, "properties", "privateLinkServiceConnectionState"); ok {
						prev[strings.ToLower(getString(m, "name"))] = st
					}
				}
			}
		}
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				continue
			}
			name := getString(m, "name")
			m["id"] = p.ID + "/" + coll + "/" + name
			m["type"] = "Microsoft.Network/privateEndpoints/" + coll
			cp := ensureObject(m, "properties")
			cp["provisioningState"] = "Succeeded"
			switch {
			case prev[strings.ToLower(name)] != nil:
				cp["privateLinkServiceConnectionState"] = prev[strings.ToLower(name)]
			case coll == "privateLinkServiceConnections":
				cp["privateLinkServiceConnectionState"] = map[string]any{"status": "Approved", "description": "Auto-Approved", "actionsRequired": "None"}
			default:
				cp["privateLinkServiceConnectionState"] = map[string]any{"status": "Pending", "description": "Awaiting approval", "actionsRequired": "None"}
			}
		}
	}
}

// SetPrivateEndpointConnectionStatus sets the status (Approved, Rejected, Pending, Disconnected) of a private
// endpoint's connection, as the owner of the linked resource does when it answers the request.
func (e *Emulator) SetPrivateEndpointConnectionStatus(endpointID, connection, status string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	res := e.store.get(strings.ToLower(endpointID))
	if res == nil {
		return fmt.Errorf("emulator: no private endpoint %s", endpointID)
	}
	m, err := res.decode()
	if err != nil {
		return err
	}
	for _, coll := range []string{"privateLinkServiceConnections", "manualPrivateLinkServiceConnections"} {
		v, _ := getPath(m, "properties", coll)
		for _, it := range asSlice(v) {
			c, ok := it.(map[string]any)
			if !ok || !strings.EqualFold(getString(c, "name"), connection) {
				continue
			}
			st := map[string]any{"status": status, "description": status, "actionsRequired": "None"}
			ensureObject(c, "properties")["privateLinkServiceConnectionState"] = st
			res.body = mustJSON(m)
			e.markDirty()
			return nil
		}
	}
	return fmt.Errorf("emulator: private endpoint %s has no connection %s", endpointID, connection)
}
