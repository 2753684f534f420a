package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/gitaso/gitaso/planner"
)

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

// preserveChildren GETs the resource (at the kind's api-version) and copies
// its existing children into the body. A resource that does not exist yet is
// sent unchanged.
func (w *walk) preserveChildren(ctx context.Context, cli ARM, r *planner.Resource, body []byte, c childCollection) ([]byte, error) {
	cur, err := cli.Get(ctx, r.ARMID, r.APIVersion)
	if err != nil {
		if isNotFound(err) {
			return body, nil
		}
		return nil, fmt.Errorf("read %s to keep its %s: %w", r.ARMID, c.path[len(c.path)-1], err)
	}
	azRaw, ok := rawAt(cur, c.path...)
	if !ok {
		return body, nil
	}
	var azure []json.RawMessage
	if err := json.Unmarshal(azRaw, &azure); err != nil || len(azure) == 0 {
		return body, nil
	}
	var mine []json.RawMessage
	if raw, ok := rawAt(body, c.path...); ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &mine); err != nil {
			return nil, fmt.Errorf("read %s of the body: %w", c.path[len(c.path)-1], err)
		}
	}
	merged := mergeByName(mine, azure)
	w.e.opts.Logger.InfoContext(ctx, "keeping existing child resources", "resource", r.ID(), "field", c.path[len(c.path)-1], "count", len(merged)-len(mine))
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, it := range merged {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := json.Compact(&buf, it); err != nil {
			return nil, fmt.Errorf("copy %s: %w", c.path[len(c.path)-1], err)
		}
	}
	buf.WriteByte(']')
	return setPath(body, c.path, buf.Bytes())
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
