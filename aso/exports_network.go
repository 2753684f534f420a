package aso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// network PrivateEndpoint's generated config map (ASO's
// ExportKubernetesConfigMaps in api/network/customizations/private_endpoints_extensions.go).

func init() {
	registerExports(map[string]*kindExports{
		// armnetwork v1.1.0 InterfacesClient.Get: GET the network interface
		// named by status.networkInterfaces[0].id (api-version 2022-01-01).
		// ASO writes the private IP address of the NIC's first IP
		// configuration once any of them is primary with an address.
		"network.azure.com/PrivateEndpoint": {
			calls: []*exportCall{{
				name: "networkInterfaces GET", names: []string{"primaryNicPrivateIpAddress"},
				fetch: func(ctx context.Context, arm ARM, a *Applied, doc map[string]any) (map[string]string, error) {
					nics, _ := memberAt(doc, "properties.networkInterfaces").([]any)
					if len(nics) == 0 {
						return nil, errors.New("ARM's private endpoint has no properties.networkInterfaces yet")
					}
					first, _ := nics[0].(map[string]any)
					id, _ := first["id"].(string)
					path, err := nicPath(id)
					if err != nil {
						return nil, err
					}
					resp, err := arm.Get(ctx, path, "2022-01-01")
					if err != nil {
						return nil, err
					}
					var nic struct {
						Properties *struct {
							IPConfigurations []struct {
								Properties *struct {
									Primary          *bool   `json:"primary"`
									PrivateIPAddress *string `json:"privateIPAddress"`
								} `json:"properties"`
							} `json:"ipConfigurations"`
						} `json:"properties"`
					}
					if err := json.Unmarshal(resp, &nic); err != nil {
						return nil, err
					}
					out := map[string]string{}
					if nic.Properties == nil {
						return out, nil
					}
					cfgs := nic.Properties.IPConfigurations
					for _, c := range cfgs {
						if c.Properties == nil || c.Properties.PrivateIPAddress == nil || c.Properties.Primary == nil || !*c.Properties.Primary {
							continue
						}
						if p := cfgs[0].Properties; p != nil && p.PrivateIPAddress != nil {
							out["primaryNicPrivateIpAddress"] = *p.PrivateIPAddress
						}
						break
					}
					return out, nil
				},
			}},
		},
	})
}

// nicPath is the request path the SDK builds from a network interface's ID
// (ASO parses the ID and calls InterfacesClient.Get with its parts).
func nicPath(id string) (string, error) {
	parts := strings.Split(strings.Trim(id, "/"), "/")
	if len(parts) != 8 || !strings.EqualFold(parts[0], "subscriptions") || !strings.EqualFold(parts[2], "resourceGroups") ||
		!strings.EqualFold(parts[5], "Microsoft.Network") || !strings.EqualFold(parts[6], "networkInterfaces") {
		return "", fmt.Errorf("%q is not a network interface ID", id)
	}
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/networkInterfaces/%s",
		parts[1], parts[3], parts[7]), nil
}
