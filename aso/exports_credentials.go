package aso

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Kubeconfig and cluster-credential exports (api/containerservice and
// api/redhatopenshift customizations). Each credential is its own call,
// made only when that secret is asked for, as ASO does.

func init() {
	registerExports(map[string]*kindExports{
		// armcontainerservice v1.0.0 ManagedClustersClient.ListClusterAdminCredentials
		// and ListClusterUserCredentials: POST .../listClusterAdminCredential and
		// .../listClusterUserCredential?api-version=2022-04-01; the secret is
		// the first kubeconfig's value, which ARM sends base64-encoded and the
		// SDK decodes.
		"containerservice.azure.com/ManagedCluster": {
			configs: map[string]string{"principalId": "identity.principalId", "oidcIssuerProfile": "properties.oidcIssuerProfile.issuerURL"},
			calls: []*exportCall{
				kubeconfigCall("listClusterAdminCredential", "adminCredentials"),
				kubeconfigCall("listClusterUserCredential", "userCredentials"),
			},
		},
		// Fleet's CRD declares operatorSpec.secrets.userCredentials, but ASO has
		// no exporter for Fleet (containerservice/customizations/fleet_extensions.go
		// only classifies FleetsMember errors): the secret is never written.
		"containerservice.azure.com/Fleet": {
			missing: []string{"userCredentials"},
		},
		// armredhatopenshift v1.6.0 OpenShiftClustersClient: ListAdminCredentials
		// (POST .../listAdminCredentials → kubeconfig, as ARM sends it) and
		// ListCredentials (POST .../listCredentials → kubeadminUsername,
		// kubeadminPassword), api-version 2023-11-22.
		"redhatopenshift.azure.com/OpenShiftCluster": {
			calls: []*exportCall{
				postCall("/listAdminCredentials", "2023-11-22", []string{"adminCredentials"}, members("adminCredentials=kubeconfig")),
				postCall("/listCredentials", "2023-11-22", []string{"username", "password"},
					members("username=kubeadminUsername", "password=kubeadminPassword")),
			},
		},
	})
}

// kubeconfigCall is an AKS credential call giving one secret.
func kubeconfigCall(action, secret string) *exportCall {
	return &exportCall{
		name: action, secret: true, names: []string{secret},
		fetch: func(ctx context.Context, arm ARM, a *Applied, _ map[string]any) (map[string]string, error) {
			resp, err := arm.Post(ctx, a.ARMID+"/"+action, "2022-04-01", nil)
			if err != nil {
				return nil, err
			}
			var v struct {
				Kubeconfigs []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"kubeconfigs"`
			}
			if err := json.Unmarshal(resp, &v); err != nil {
				return nil, err
			}
			if len(v.Kubeconfigs) == 0 {
				return map[string]string{}, nil
			}
			b, err := base64.StdEncoding.DecodeString(v.Kubeconfigs[0].Value)
			if err != nil {
				return nil, fmt.Errorf("kubeconfig %q is not base64: %w", v.Kubeconfigs[0].Name, err)
			}
			return map[string]string{secret: string(b)}, nil
		},
	}
}
