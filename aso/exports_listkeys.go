package aso

import (
	"context"
	"encoding/json"
)

// Key exports that ASO reads with a listKeys-style call of the SDK client
// named in each entry (api/<group>/customizations/*, ASO's go.mod for the
// client versions, e88a45d1).

func init() {
	registerExports(map[string]*kindExports{
		// armappconfiguration v1.1.1 ConfigurationStoresClient.NewListKeysPager:
		// POST .../configurationStores/{name}/listKeys?api-version=2022-05-01,
		// {"value":[{id,name,value,connectionString,readOnly,...}]}. Keys by name:
		// Primary, Secondary, Primary Read Only, Secondary Read Only.
		"appconfiguration.azure.com/ConfigurationStore": {
			calls: []*exportCall{{
				name: "listKeys", secret: true, names: appConfigSecrets,
				fetch: func(ctx context.Context, arm ARM, a *Applied, _ map[string]any) (map[string]string, error) {
					resp, err := arm.Post(ctx, a.ARMID+"/listKeys", "2022-05-01", nil)
					if err != nil {
						return nil, err
					}
					var v struct {
						Value []struct {
							ID               *string `json:"id"`
							Name             *string `json:"name"`
							Value            *string `json:"value"`
							ConnectionString *string `json:"connectionString"`
						} `json:"value"`
					}
					if err := json.Unmarshal(resp, &v); err != nil {
						return nil, err
					}
					out := map[string]string{}
					for _, k := range v.Value {
						if k.Name == nil {
							continue
						}
						prefix, ok := appConfigKeyNames[*k.Name]
						if !ok {
							continue
						}
						out[prefix+"ConnectionString"] = deref(k.ConnectionString)
						out[prefix+"KeyID"] = deref(k.ID)
						out[prefix+"Key"] = deref(k.Value)
					}
					return out, nil
				},
			}},
		},
		// armredisenterprise v1.2.0 DatabasesClient.ListKeys: POST
		// .../redisEnterprise/{cluster}/databases/{db}/listKeys?api-version=2022-01-01.
		"cache.azure.com/RedisEnterpriseDatabase": {
			calls: []*exportCall{postCall("/listKeys", "2022-01-01", []string{"primaryKey", "secondaryKey"}, members("primaryKey", "secondaryKey"))},
		},
		// armiothub v1.3.0 ResourceClient.NewListKeysPager: POST
		// .../IotHubs/{name}/listkeys?api-version=2023-06-30, {"value":[{keyName,
		// primaryKey, secondaryKey, rights}]}; the policies ASO reads by name.
		"devices.azure.com/IotHub": {
			calls: []*exportCall{{
				name: "listkeys", secret: true, names: iotHubSecrets,
				fetch: func(ctx context.Context, arm ARM, a *Applied, _ map[string]any) (map[string]string, error) {
					resp, err := arm.Post(ctx, sdkPath(a.ARMID, map[string]string{"iothubs": "IotHubs"})+"/listkeys", "2023-06-30", nil)
					if err != nil {
						return nil, err
					}
					var v struct {
						Value []struct {
							KeyName      *string `json:"keyName"`
							PrimaryKey   *string `json:"primaryKey"`
							SecondaryKey *string `json:"secondaryKey"`
						} `json:"value"`
					}
					if err := json.Unmarshal(resp, &v); err != nil {
						return nil, err
					}
					out := map[string]string{}
					for _, k := range v.Value {
						if k.KeyName == nil {
							continue
						}
						prefix, ok := iotHubPolicies[*k.KeyName]
						if !ok {
							continue
						}
						out[prefix+"PrimaryKey"] = deref(k.PrimaryKey)
						out[prefix+"SecondaryKey"] = deref(k.SecondaryKey)
					}
					return out, nil
				},
				// ASO's RawSecrets hold only the non-empty keys.
				raw: nonEmpty,
			}},
		},
		// armmachinelearning v1.0.0 WorkspacesClient.ListKeys: POST
		// .../workspaces/{name}/listKeys?api-version=2021-07-01.
		"machinelearningservices.azure.com/Workspace": {
			calls: []*exportCall{{
				name: "listKeys", secret: true,
				names: []string{"appInsightsInstrumentationKey", "containerRegistryPassword", "containerRegistryPassword2",
					"containerRegistryUserName", "primaryNotebookAccessKey", "secondaryNotebookAccessKey", "userStorageKey"},
				fetch: func(ctx context.Context, arm ARM, a *Applied, _ map[string]any) (map[string]string, error) {
					resp, err := arm.Post(ctx, a.ARMID+"/listKeys", "2021-07-01", nil)
					if err != nil {
						return nil, err
					}
					var v struct {
						AppInsightsInstrumentationKey *string `json:"appInsightsInstrumentationKey"`
						UserStorageKey                *string `json:"userStorageKey"`
						ContainerRegistryCredentials  *struct {
							Username  *string `json:"username"`
							Passwords []struct {
								Name  *string `json:"name"`
								Value *string `json:"value"`
							} `json:"passwords"`
						} `json:"containerRegistryCredentials"`
						NotebookAccessKeys *struct {
							PrimaryAccessKey   *string `json:"primaryAccessKey"`
							SecondaryAccessKey *string `json:"secondaryAccessKey"`
						} `json:"notebookAccessKeys"`
					}
					if err := json.Unmarshal(resp, &v); err != nil {
						return nil, err
					}
					out := map[string]string{
						"appInsightsInstrumentationKey": deref(v.AppInsightsInstrumentationKey),
						"userStorageKey":                deref(v.UserStorageKey),
					}
					if c := v.ContainerRegistryCredentials; c != nil {
						out["containerRegistryUserName"] = deref(c.Username)
						for _, p := range c.Passwords {
							if p.Name == nil || p.Value == nil {
								continue
							}
							switch *p.Name {
							case "password":
								out["containerRegistryPassword"] = *p.Value
							case "password2":
								out["containerRegistryPassword2"] = *p.Value
							}
						}
					}
					if n := v.NotebookAccessKeys; n != nil {
						out["primaryNotebookAccessKey"] = deref(n.PrimaryAccessKey)
						out["secondaryNotebookAccessKey"] = deref(n.SecondaryAccessKey)
					}
					return nonEmpty(out), nil
				},
			}},
		},
		// armnotificationhubs v1.2.0 NamespacesClient.ListKeys with the rule
		// RootManageSharedAccessKey: POST
		// .../namespaces/{ns}/AuthorizationRules/RootManageSharedAccessKey/listKeys?api-version=2017-04-01.
		"notificationhubs.azure.com/Namespace": {
			configs: map[string]string{"serviceBusEndpoint": "properties.serviceBusEndpoint"},
			calls: []*exportCall{withRaw(postCall("/AuthorizationRules/RootManageSharedAccessKey/listKeys", "2017-04-01", authRuleKeys, members(authRuleKeys...)),
				notificationHubRaw)},
		},
		// armnotificationhubs v1.2.0 Client.ListKeys with the rule
		// DefaultFullSharedAccessSignature: POST
		// .../notificationHubs/{hub}/AuthorizationRules/DefaultFullSharedAccessSignature/listKeys?api-version=2017-04-01.
		"notificationhubs.azure.com/NotificationHub": {
			calls: []*exportCall{withRaw(sdkPostCall("/AuthorizationRules/DefaultFullSharedAccessSignature/listKeys",
				map[string]string{"notificationhubs": "notificationHubs"}, "2017-04-01", authRuleKeys, members(authRuleKeys...)),
				notificationHubRaw)},
		},
		// armsearch v1.4.0: QueryKeysClient.NewListBySearchServicePager (POST
		// .../listQueryKeys) and AdminKeysClient.Get (POST .../listAdminKeys),
		// api-version 2025-05-01; ASO makes both whenever a secret is asked for.
		"search.azure.com/SearchService": {
			configs: map[string]string{"identityPrincipalId": "identity.principalId", "identityTenantId": "identity.tenantId"},
			calls: []*exportCall{{
				name: "listAdminKeys", secret: true, names: []string{"adminPrimaryKey", "adminSecondaryKey", "queryKey"},
				fetch: func(ctx context.Context, arm ARM, a *Applied, _ map[string]any) (map[string]string, error) {
					qresp, err := arm.Post(ctx, a.ARMID+"/listQueryKeys", "2025-05-01", nil)
					if err != nil {
						return nil, err
					}
					var q struct {
						Value []struct {
							Name *string `json:"name"`
							Key  *string `json:"key"`
						} `json:"value"`
					}
					if err := json.Unmarshal(qresp, &q); err != nil {
						return nil, err
					}
					aresp, err := arm.Post(ctx, a.ARMID+"/listAdminKeys", "2025-05-01", nil)
					if err != nil {
						return nil, err
					}
					var ad struct {
						PrimaryKey   *string `json:"primaryKey"`
						SecondaryKey *string `json:"secondaryKey"`
					}
					if err := json.Unmarshal(aresp, &ad); err != nil {
						return nil, err
					}
					out := map[string]string{"adminPrimaryKey": deref(ad.PrimaryKey), "adminSecondaryKey": deref(ad.SecondaryKey)}
					// The key without a name is "default"; so is one named
					// "default" (the later wins, as in ASO's map).
					for _, k := range q.Value {
						if k.Name == nil && k.Key != nil || k.Name != nil && *k.Name == "default" {
							out["queryKey"] = deref(k.Key)
						}
					}
					return out, nil
				},
				// ASO's RawSecrets: adminSecondaryKey holds the primary key, and
				// queryKey is set only when the default query key is empty.
				raw: func(w map[string]string) map[string]string {
					out := map[string]string{}
					if w["adminPrimaryKey"] != "" {
						out["adminPrimaryKey"] = w["adminPrimaryKey"]
					}
					if w["adminSecondaryKey"] != "" {
						out["adminSecondaryKey"] = w["adminPrimaryKey"]
					}
					if q, ok := w["queryKey"]; ok && q == "" {
						out["queryKey"] = q
					}
					return out
				},
			}},
		},
	})
}

var appConfigKeyNames = map[string]string{
	"Primary": "primary", "Secondary": "secondary", "Primary Read Only": "primaryReadOnly", "Secondary Read Only": "secondaryReadOnly",
}

var appConfigSecrets = []string{
	"primaryConnectionString", "primaryKey", "primaryKeyID", "primaryReadOnlyConnectionString", "primaryReadOnlyKey",
	"primaryReadOnlyKeyID", "secondaryConnectionString", "secondaryKey", "secondaryKeyID",
	"secondaryReadOnlyConnectionString", "secondaryReadOnlyKey", "secondaryReadOnlyKeyID",
}

var iotHubPolicies = map[string]string{
	"iothubowner": "iotHubOwner", "service": "service", "device": "device", "registryRead": "registryRead", "registryReadWrite": "registryReadWrite",
}

var iotHubSecrets = []string{
	"devicePrimaryKey", "deviceSecondaryKey", "iotHubOwnerPrimaryKey", "iotHubOwnerSecondaryKey", "registryReadPrimaryKey",
	"registryReadSecondaryKey", "registryReadWritePrimaryKey", "registryReadWriteSecondaryKey", "servicePrimaryKey", "serviceSecondaryKey",
}

// notificationHubRaw is ASO's RawSecrets of a notification hub namespace or
// hub: primaryKey holds the primary connection string (ASO's
// addSecretsToMap), the written secret the key itself.
func notificationHubRaw(w map[string]string) map[string]string {
	out := nonEmpty(w)
	if w["primaryKey"] != "" {
		out["primaryKey"] = w["primaryConnectionString"]
	}
	return out
}

func withRaw(c *exportCall, raw func(map[string]string) map[string]string) *exportCall {
	c.raw = raw
	return c
}

func nonEmpty(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
