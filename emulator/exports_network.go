package emulator

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

// A private endpoint's network interface, as Azure manages it: the PUT of a privateEndpoints resource creates
// (once) a network interface {endpoint}.nic.{guid} in the endpoint's resource group and location, with one primary
// IP configuration privateEndpointIpConfig.{guid} holding a dynamic private address of the endpoint's subnet (the
// subnet's fifth address onwards, Azure keeping the first four), and the endpoint's properties.networkInterfaces
// lists it. The interface is read-only for clients in Azure; it goes when its endpoint is deleted. ASO's
// PrivateEndpoint exporter GETs it for primaryNicPrivateIpAddress.

const (
	peTypeKey  = "microsoft.network/privateendpoints"
	nicTypeKey = "microsoft.network/networkinterfaces"
)

// typePrepares complete the body of a type on PUT (after the generic checks); typeRemoves run when a resource of
// the type is removed. Caller holds e.mu (write).
var (
	typePrepares = map[string]func(e *Emulator, p armPath, body, old map[string]any) *armError{}
	typeRemoves  = map[string]func(e *Emulator, r *resource){}
)

func init() {
	typePrepares[peTypeKey] = preparePrivateEndpointNIC
	typeRemoves[peTypeKey] = removePrivateEndpointNIC
}

func preparePrivateEndpointNIC(e *Emulator, p armPath, body, old map[string]any) *armError {
	props := ensureObject(body, "properties")
	if old != nil {
		if nics := asSlice(objectAt(old, "properties")["networkInterfaces"]); len(nics) > 0 {
			props["networkInterfaces"] = nics
			return nil
		}
	}
	subnetID := getString(props, "subnet", "id")
	if subnetID == "" {
		return newARMError(400, "InvalidRequestFormat", "Cannot parse the request: the private endpoint '%s' has no properties.subnet.id.", p.Name)
	}
	seed := &resource{key: strings.ToLower(p.ID)}
	nicName := p.Name + ".nic." + e.guidFor(seed, "nic")
	nicPath := parseARMPath("/subscriptions/" + p.Sub + "/resourceGroups/" + p.RG + "/providers/Microsoft.Network/networkInterfaces/" + nicName)
	ipName := "privateEndpointIpConfig." + e.guidFor(seed, "ipconfig")
	loc, _ := body["location"].(string)
	nic := map[string]any{
		"location": loc,
		"properties": map[string]any{
			"ipConfigurations": []any{map[string]any{
				"name": ipName, "id": nicPath.ID + "/ipConfigurations/" + ipName,
				"type": "Microsoft.Network/networkInterfaces/ipConfigurations",
				"properties": map[string]any{
					"provisioningState": "Succeeded", "privateIPAddress": e.nextSubnetAddress(subnetID),
					"privateIPAllocationMethod": "Dynamic", "subnet": map[string]any{"id": subnetID},
					"primary": true, "privateIPAddressVersion": "IPv4",
				},
			}},
			"dnsSettings":                 map[string]any{"dnsServers": []any{}, "appliedDnsServers": []any{}},
			"enableAcceleratedNetworking": false, "enableIPForwarding": false, "vnetEncryptionSupported": false,
			"hostedWorkloads": []any{}, "tapConfigurations": []any{}, "nicType": "Standard",
			"privateEndpoint":         map[string]any{"id": p.ID},
			"allowPort25Out":          true,
			"auxiliaryMode":           "None",
			"auxiliarySku":            "None",
			"disableTcpStateTracking": false,
		},
	}
	e.finishBody(nicPath, nic, nil, "Succeeded")
	res := newResource(nicPath, loc, mustJSON(nic))
	res.state = "Succeeded"
	e.store.put(res)
	e.indexResource(res, nic)
	props["networkInterfaces"] = []any{map[string]any{"id": nicPath.ID}}
	return nil
}

// nextSubnetAddress is the next free private address of a subnet: its prefix's fifth address plus the number of
// network interfaces already holding one there. Caller holds e.mu.
func (e *Emulator) nextSubnetAddress(subnetID string) string {
	prefix := "10.0.0.0/24"
	if s := e.store.get(strings.ToLower(subnetID)); s != nil {
		if m, err := s.decode(); err == nil {
			prefix = firstNonEmpty(getString(m, "properties", "addressPrefix"), prefix)
		}
	}
	used := 0
	for _, r := range e.store.ofType(nicTypeKey, "") {
		var m struct {
			Properties struct {
				IPConfigurations []struct {
					Properties struct {
						Subnet struct{ ID string } `json:"subnet"`
					} `json:"properties"`
				} `json:"ipConfigurations"`
			} `json:"properties"`
		}
		if json.Unmarshal(r.body, &m) != nil {
			continue
		}
		for _, c := range m.Properties.IPConfigurations {
			if strings.EqualFold(c.Properties.Subnet.ID, subnetID) {
				used++
			}
		}
	}
	pfx, err := netip.ParsePrefix(prefix)
	if err != nil || !pfx.Addr().Is4() {
		return fmt.Sprintf("10.0.0.%d", 4+used%250)
	}
	a := pfx.Masked().Addr()
	for i := 0; i < 4+used; i++ {
		a = a.Next()
	}
	return a.String()
}

func removePrivateEndpointNIC(e *Emulator, r *resource) {
	m, err := r.decode()
	if err != nil {
		return
	}
	for _, n := range asSlice(objectAt(m, "properties")["networkInterfaces"]) {
		nm, _ := n.(map[string]any)
		if id, _ := nm["id"].(string); id != "" && e.store.get(strings.ToLower(id)) != nil {
			e.removeResource(strings.ToLower(id))
		}
	}
}

func objectAt(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}
