package emulator

import (
	"net/http"
	"strings"
)

// Virtual networks and their subnets, as Microsoft.Network runs them:
//   - a subnet in use (an IP configuration of a network interface, a private endpoint's among them, names it; or
//     its read-only properties.ipConfigurations lists one) cannot be deleted: a DELETE of the subnet, of its
//     virtual network, or a PUT of the virtual network that leaves it out answers 400 InUseSubnetCannotBeDeleted;
//   - subnets written with their virtual network (properties.subnets of its PUT) are provisioned with the virtual
//     network's operation: Updating while it runs, then Succeeded or Failed with it (setState, reconcileEmbedded).

const vnetTypeKey = "microsoft.network/virtualnetworks"

// subnetUser returns an ID of something using the subnet (an IP configuration), or "". Caller holds e.mu.
func (e *Emulator) subnetUser(subnet *resource) string {
	if m, err := subnet.decode(); err == nil {
		for _, coll := range []string{"ipConfigurations", "privateEndpoints"} {
			for _, it := range asSlice(objectAt(m, "properties")[coll]) {
				if id := getString(asObject(it), "id"); id != "" {
					return id
				}
			}
		}
	}
	scope := "/subscriptions/" + subnet.subKey
	if subnet.subKey == "" {
		scope = ""
	}
	for _, nic := range e.store.ofType(nicTypeKey, strings.ToLower(scope)) {
		m, err := nic.decode()
		if err != nil {
			continue
		}
		for _, it := range asSlice(objectAt(m, "properties")["ipConfigurations"]) {
			ipc := asObject(it)
			if strings.EqualFold(getString(ipc, "properties", "subnet", "id"), subnet.ID) {
				return firstNonEmpty(getString(ipc, "id"), nic.ID+"/ipConfigurations/"+getString(ipc, "name"))
			}
		}
	}
	return ""
}

func inUseSubnet(subnet *resource, user string) *armError {
	return newARMError(http.StatusBadRequest, "InUseSubnetCannotBeDeleted",
		"Subnet %s is in use by %s and cannot be deleted. In order to delete the subnet, delete all the resources within the subnet. See aka.ms/deletesubnet.", subnet.Name, user)
}

// refuseDelete refuses a DELETE of a subnet in use or of a virtual network with one. Caller holds e.mu.
func (e *Emulator) refuseDelete(res *resource) *armError {
	switch res.typeKey {
	case subnetTypeKey:
		if u := e.subnetUser(res); u != "" {
			return inUseSubnet(res, u)
		}
	case vnetTypeKey:
		for _, s := range e.store.childrenOf(res.key, subnetTypeKey) {
			if u := e.subnetUser(s); u != "" {
				return inUseSubnet(s, u)
			}
		}
	}
	return nil
}

// refuseSubnetRemoval refuses a PUT of an existing virtual network whose properties.subnets leaves out a subnet in
// use. Caller holds e.mu.
func (e *Emulator) refuseSubnetRemoval(p armPath, body map[string]any) *armError {
	keep := map[string]bool{}
	for _, it := range asSlice(objectAt(body, "properties")["subnets"]) {
		keep[strings.ToLower(getString(asObject(it), "name"))] = true
	}
	for _, s := range e.store.childrenOf(strings.ToLower(p.ID), subnetTypeKey) {
		if keep[strings.ToLower(s.Name)] {
			continue
		}
		if u := e.subnetUser(s); u != "" {
			return inUseSubnet(s, u)
		}
	}
	return nil
}

// embeddedState is the provisioning state of children written with their parent while the parent is in state.
func embeddedState(parent string) string {
	switch parent {
	case "", "Succeeded", "Failed", "Deleting", "Canceled":
		return firstNonEmpty(parent, "Succeeded")
	}
	return "Updating"
}

// setEmbeddedStates moves the embedded children of a parent to the state its own operation gives them. Caller
// holds e.mu (write).
func (e *Emulator) setEmbeddedStates(parentKey, childType, parentState string) {
	state := embeddedState(parentState)
	for _, c := range e.store.childrenOf(parentKey, childType) {
		if c.state == state {
			continue
		}
		m, err := c.decode()
		if err != nil {
			continue
		}
		ensureObject(m, "properties")["provisioningState"] = state
		c.body = mustJSON(m)
		c.state = state
	}
}

func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
