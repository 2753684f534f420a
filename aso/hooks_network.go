package aso

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// ASO's network and compute hooks: the child collections a parent's PUT
// keeps (api/network/customizations/*_extension(s).go, compute
// vmss_extensions.go) and the post-reconcile checks of PrivateEndpoint and
// VirtualNetworksSubnet.

// childCollection is a collection of child resources embedded in a parent's
// body that ASO keeps on the parent's PUT, because the children are managed
// as resources of their own (VirtualNetworksSubnet, ...) and a PUT without
// them would delete them.
type childCollection struct {
	path []string // in the ARM body
}

// preservedCollections are the armPayloadModifier hooks of the network and
// compute groups. ASO replaces the collection with Azure's for VNets, NSGs
// and route tables (whose specs cannot set it) and merges by name for load
// balancers and scale sets (the manifest's items first, then Azure's items
// of other names); gitaso merges by name for all of them, which gives the
// same body when the manifest does not set the collection.
var preservedCollections = map[string]childCollection{
	"network.azure.com/VirtualNetwork":         {path: []string{"properties", "subnets"}},
	"network.azure.com/NetworkSecurityGroup":   {path: []string{"properties", "securityRules"}},
	"network.azure.com/RouteTable":             {path: []string{"properties", "routes"}},
	"network.azure.com/LoadBalancer":           {path: []string{"properties", "inboundNatRules"}},
	"compute.azure.com/VirtualMachineScaleSet": {path: []string{"properties", "virtualMachineProfile", "extensionProfile", "extensions"}},
}

func init() {
	for k, c := range preservedCollections {
		group, kind, _ := strings.Cut(k, "/")
		register(group, kind).ModifyPayload = preserveChildren(c)
	}
	register("network.azure.com", "PrivateEndpoint").PostReconcile = privateEndpointApproved
	register("network.azure.com", "VirtualNetworksSubnet").PostReconcile = subnetStatusSize
}

// preserveChildren returns the payload modifier that GETs the resource (at
// the kind's api-version) and copies its existing children into the body. A
// resource that does not exist yet is sent unchanged.
func preserveChildren(c childCollection) PayloadModifier {
	field := c.path[len(c.path)-1]
	return func(ctx context.Context, arm ARM, t Target, body []byte) ([]byte, error) {
		cur, err := arm.Get(ctx, t.ARMID, t.APIVersion)
		if err != nil {
			if IsNotFound(err) {
				return body, nil
			}
			return nil, fmt.Errorf("read %s to keep its %s: %w", t.ARMID, field, err)
		}
		out, added, err := MergeChildren(body, cur, c.path...)
		if err != nil {
			return nil, err
		}
		if added > 0 {
			logger(ctx).InfoContext(ctx, "keeping existing child resources", "resource", t.Namespace+"/"+t.Kind+"/"+t.Name, "field", field, "count", added)
		}
		return out, nil
	}
}

// MergeChildren copies the items of the collection at path in current (the
// resource as ARM holds it) whose name the body's collection lacks to the
// end of the body's collection, and reports how many it added. Every other
// member of body keeps its place and bytes.
func MergeChildren(body, current []byte, path ...string) ([]byte, int, error) {
	field := path[len(path)-1]
	azRaw, ok := rawAt(current, path...)
	if !ok {
		return body, 0, nil
	}
	var azure []json.RawMessage
	if err := json.Unmarshal(azRaw, &azure); err != nil || len(azure) == 0 {
		return body, 0, nil
	}
	var mine []json.RawMessage
	if raw, ok := rawAt(body, path...); ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &mine); err != nil {
			return nil, 0, fmt.Errorf("read %s of the body: %w", field, err)
		}
	}
	merged := mergeByName(mine, azure)
	if len(merged) == len(mine) {
		return body, 0, nil
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, it := range merged {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := json.Compact(&buf, it); err != nil {
			return nil, 0, fmt.Errorf("copy %s: %w", field, err)
		}
	}
	buf.WriteByte(']')
	out, err := setPath(body, path, buf.Bytes())
	return out, len(merged) - len(mine), err
}

// mergeByName returns mine followed by the items of azure whose name is not
// in mine.
func mergeByName(mine, azure []json.RawMessage) []json.RawMessage {
	have := map[string]bool{}
	for _, it := range mine {
		have[nameOf(it)] = true
	}
	out := append([]json.RawMessage(nil), mine...)
	for _, it := range azure {
		if n := nameOf(it); n == "" || !have[n] {
			out = append(out, it)
		}
	}
	return out
}

func nameOf(item json.RawMessage) string {
	var v struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(item, &v)
	return v.Name
}

// privateEndpointApproved is PrivateEndpoint's post-reconcile check: every
// manual private link service connection must be Approved by the owner of
// the linked resource before the endpoint is Ready (ASO
// private_endpoints_extensions.go; automatic connections are not checked).
func privateEndpointApproved(_ Target, status []byte) PostResult {
	var pe struct {
		Properties struct {
			Manual []struct {
				ID         string `json:"id"`
				Properties struct {
					State struct {
						Status string `json:"status"`
					} `json:"privateLinkServiceConnectionState"`
				} `json:"properties"`
			} `json:"manualPrivateLinkServiceConnections"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(status, &pe)
	var reqApprovals []string
	for _, c := range pe.Properties.Manual {
		if c.Properties.State.Status != "Approved" {
			reqApprovals = append(reqApprovals, c.ID)
		}
	}
	if len(reqApprovals) > 0 {
		// ASO formats the slice with %q inside quotes: '["id1" "id2"]'.
		return PostResult{Message: fmt.Sprintf("Private connection(s) '%q' to the PrivateEndpoint requires approval", reqApprovals)}
	}
	return PostResult{Ready: true}
}

// maxSubnetIPConfigurations is the number of ipConfigurations beyond which
// ASO drops them from a subnet's status (an object must fit etcd).
const maxSubnetIPConfigurations = 2000

// subnetStatusSize is VirtualNetworksSubnet's post-reconcile check. It never
// fails: ASO drops status.ipConfigurations when there are more than 2000
// (a busy subnet's list would make the object too large to store), and so
// does gitaso with the status it records.
func subnetStatusSize(_ Target, status []byte) PostResult {
	raw, ok := rawAt(status, "properties", "ipConfigurations")
	if !ok {
		return PostResult{Ready: true}
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) <= maxSubnetIPConfigurations {
		return PostResult{Ready: true}
	}
	trimmed, err := removePath(status, "properties", "ipConfigurations")
	if err != nil {
		return PostResult{Ready: true}
	}
	return PostResult{Ready: true, Status: trimmed}
}
