package emulator

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"
)

// Key and credential actions that ASO's exporters call (POST {resource}/{action}), answered with the bodies real
// ARM sends (the shapes of the SDK clients' response types). Keys are deterministic per emulator, resource and
// key name, like the storage and Service Bus keys of listKeys.
//
//   - App Configuration store: listKeys → {"value": [Primary, Secondary, Primary Read Only, Secondary Read
//     Only]}, each {id, name, value, connectionString, lastModified, readOnly};
//   - Redis Enterprise database: listKeys → {primaryKey, secondaryKey};
//   - IoT hub: listkeys → {"value": [{keyName, primaryKey, secondaryKey, rights}]}, the hub's
//     properties.authorizationPolicies or, when it sets none, Azure's five default policies;
//   - Machine Learning workspace: listKeys → userStorageKey, appInsightsInstrumentationKey,
//     containerRegistryCredentials {location, username, passwords [password, password2]}, notebookAccessKeys;
//   - Notification Hubs namespace (properties.serviceBusEndpoint https://{name}.servicebus.windows.net:443/) and hub
//     authorization rules (created with their parent, as Azure does:
//     RootManageSharedAccessKey; DefaultFullSharedAccessSignature and DefaultListenSharedAccessSignature):
//     listKeys → {keyName, primaryKey, secondaryKey, primaryConnectionString, secondaryConnectionString};
//   - Search service: listAdminKeys → {primaryKey, secondaryKey}; listQueryKeys → {"value": [{name: null,
//     key}]} (the default query key has no name), "nextLink": null.
//
// The other kinds of gitaso's exports table answer too: Cognitive Services account and Event Grid topic listKeys
// (key1, key2), Redis listKeys (primaryKey, secondaryKey; hostName, port and sslPort in its body), Log Analytics
// workspace sharedKeys, API Management subscription listSecrets, Cosmos DB account listKeys (the four master keys;
// documentEndpoint in its body), SignalR listKeys (keys and connection strings).
//
// Cluster credentials are in exports_credentials.go, the private endpoint's network interface in
// exports_network.go.

// exportAction is an action answered for a resource type (lower-cased type, lower-cased action).
type exportAction func(e *Emulator, r *resource) map[string]any

var exportActions = map[[2]string]exportAction{}

func registerExportActions(typeKey string, actions map[string]exportAction) {
	for a, f := range actions {
		exportActions[[2]string{typeKey, strings.ToLower(a)}] = f
	}
}

// exportAction answers POST {r}/{action} when an exporter's action is registered for r's type. Caller holds
// e.mu (read).
func (e *Emulator) exportAction(r *resource, action string) (map[string]any, bool) {
	f := exportActions[[2]string{r.typeKey, strings.ToLower(action)}]
	if f == nil {
		return nil, false
	}
	return f(e, r), true
}

// keyFor is a deterministic base64 key (44 characters, as Azure's SAS keys) for a resource and a key name.
func (e *Emulator) keyFor(r *resource, name string) string {
	sum := sha256.Sum256([]byte(e.adminToken + "|" + r.key + "|" + name))
	return strings.TrimRight(encodeStd(sum[:]), "=") + "="
}

// guidFor is a deterministic GUID for a resource and a name.
func (e *Emulator) guidFor(r *resource, name string) string {
	s := sha256.Sum256([]byte(e.adminToken + "|" + r.key + "|guid|" + name))
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// segmentAfter returns the ID segment following name (case-insensitive), or "".
func segmentAfter(id, name string) string {
	segs := strings.Split(id, "/")
	for i := 0; i+1 < len(segs); i++ {
		if strings.EqualFold(segs[i], name) {
			return segs[i+1]
		}
	}
	return ""
}

func init() {
	registerExportActions("microsoft.appconfiguration/configurationstores", map[string]exportAction{"listKeys": appConfigKeys})
	registerExportActions("microsoft.cache/redisenterprise/databases", map[string]exportAction{"listKeys": func(e *Emulator, r *resource) map[string]any {
		return map[string]any{"primaryKey": e.keyFor(r, "primary"), "secondaryKey": e.keyFor(r, "secondary")}
	}})
	registerExportActions("microsoft.devices/iothubs", map[string]exportAction{"listkeys": iotHubKeys})
	registerExportActions("microsoft.machinelearningservices/workspaces", map[string]exportAction{"listKeys": mlWorkspaceKeys})
	registerExportActions("microsoft.notificationhubs/namespaces/authorizationrules", map[string]exportAction{"listKeys": notificationHubRuleKeys})
	registerExportActions("microsoft.notificationhubs/namespaces/notificationhubs/authorizationrules", map[string]exportAction{"listKeys": notificationHubRuleKeys})
	registerExportActions("microsoft.search/searchservices", map[string]exportAction{
		"listAdminKeys": func(e *Emulator, r *resource) map[string]any {
			return map[string]any{"primaryKey": searchKey(e, r, "admin-primary"), "secondaryKey": searchKey(e, r, "admin-secondary")}
		},
		"listQueryKeys": func(e *Emulator, r *resource) map[string]any {
			return map[string]any{"value": []any{map[string]any{"name": nil, "key": searchKey(e, r, "query-default")}}, "nextLink": nil}
		},
	})
	typeDefaults["microsoft.notificationhubs/namespaces"] = append(typeDefaults["microsoft.notificationhubs/namespaces"],
		fieldDefault{"properties.serviceBusEndpoint", "https://{name}.servicebus.windows.net:443/"})
	// The other kinds of gitaso's exports table (aso/exports.go).
	twoKeys := func(a, b string) exportAction {
		return func(e *Emulator, r *resource) map[string]any {
			return map[string]any{a: e.keyFor(r, a), b: e.keyFor(r, b)}
		}
	}
	registerExportActions("microsoft.cognitiveservices/accounts", map[string]exportAction{"listKeys": twoKeys("key1", "key2")})
	registerExportActions("microsoft.eventgrid/topics", map[string]exportAction{"listKeys": twoKeys("key1", "key2")})
	registerExportActions("microsoft.cache/redis", map[string]exportAction{"listKeys": twoKeys("primaryKey", "secondaryKey")})
	registerExportActions("microsoft.operationalinsights/workspaces", map[string]exportAction{"sharedKeys": twoKeys("primarySharedKey", "secondarySharedKey")})
	registerExportActions("microsoft.apimanagement/service/subscriptions", map[string]exportAction{"listSecrets": twoKeys("primaryKey", "secondaryKey")})
	registerExportActions("microsoft.documentdb/databaseaccounts", map[string]exportAction{"listKeys": func(e *Emulator, r *resource) map[string]any {
		out := map[string]any{}
		for _, n := range []string{"primaryMasterKey", "secondaryMasterKey", "primaryReadonlyMasterKey", "secondaryReadonlyMasterKey"} {
			out[n] = e.keyFor(r, n) + e.keyFor(r, n+"/2") // Cosmos DB keys are 88 characters
		}
		return out
	}})
	registerExportActions("microsoft.signalrservice/signalr", map[string]exportAction{"listKeys": func(e *Emulator, r *resource) map[string]any {
		p, s := e.keyFor(r, "primary"), e.keyFor(r, "secondary")
		ep := "Endpoint=https://" + strings.ToLower(r.Name) + ".service.signalr.net;AccessKey="
		return map[string]any{"primaryKey": p, "secondaryKey": s,
			"primaryConnectionString": ep + p + ";Version=1.0;", "secondaryConnectionString": ep + s + ";Version=1.0;"}
	}})
	for typeKey, defaults := range map[string][]fieldDefault{
		"microsoft.cache/redis": {{"properties.hostName", "{name}.redis.cache.windows.net"}, {"properties.port", int64(6379)},
			{"properties.sslPort", int64(6380)}},
		"microsoft.eventgrid/topics":            {{"properties.endpoint", "https://{name}.{location}-1.eventgrid.azure.net/api/events"}},
		"microsoft.documentdb/databaseaccounts": {{"properties.documentEndpoint", "https://{name}.documents.azure.com:443/"}},
		"microsoft.cognitiveservices/accounts": {{"properties.endpoint", "https://{name}.cognitiveservices.azure.com/"},
			{"properties.endpoints", map[string]any{"Content Moderator": "https://{name}.cognitiveservices.azure.com/",
				"OpenAI Language Model Instance API": "https://{name}.openai.azure.com/"}}},
	} {
		typeDefaults[typeKey] = append(typeDefaults[typeKey], defaults...)
	}
	// How these providers answer a PUT (conformance/arm-responses.json); the others of this file answer with the
	// default style (201 and Azure-AsyncOperation).
	for typeKey, style := range map[string]putStyle{
		"microsoft.search/searchservices":                                           {sync: true, createStatus: 201},
		"microsoft.notificationhubs/namespaces/authorizationrules":                  {sync: true, createStatus: 200},
		"microsoft.notificationhubs/namespaces/notificationhubs":                    {sync: true, createStatus: 200},
		"microsoft.notificationhubs/namespaces/notificationhubs/authorizationrules": {sync: true, createStatus: 200},
		"microsoft.machinelearningservices/workspaces":                              {accepted: true},
	} {
		if _, set := putStyles[typeKey]; !set {
			putStyles[typeKey] = style
		}
	}
	nhRule := func(name string, rights ...any) defaultChild {
		return defaultChild{segment: "AuthorizationRules", name: name, location: true, props: map[string]any{"rights": rights}}
	}
	defaultChildren["microsoft.notificationhubs/namespaces"] = append(defaultChildren["microsoft.notificationhubs/namespaces"],
		nhRule("RootManageSharedAccessKey", "Listen", "Manage", "Send"))
	defaultChildren["microsoft.notificationhubs/namespaces/notificationhubs"] = append(defaultChildren["microsoft.notificationhubs/namespaces/notificationhubs"],
		nhRule("DefaultListenSharedAccessSignature", "Listen"), nhRule("DefaultFullSharedAccessSignature", "Listen", "Manage", "Send"))
}

func appConfigKeys(e *Emulator, r *resource) map[string]any {
	endpoint := "https://" + r.Name + ".azconfig.io"
	var keys []any
	for i, name := range []string{"Primary", "Secondary", "Primary Read Only", "Secondary Read Only"} {
		id := fmt.Sprintf("%s-l%d-s0:%s", strings.ToUpper(e.guidFor(r, name)[:4]), i, e.guidFor(r, name+"/id")[:8])
		value := e.keyFor(r, name)
		keys = append(keys, map[string]any{
			"id": id, "name": name, "value": value,
			"connectionString": "Endpoint=" + endpoint + ";Id=" + id + ";Secret=" + value,
			"lastModified":     armTime(time.Unix(0, 0)), "readOnly": strings.HasSuffix(name, "Read Only"),
		})
	}
	return map[string]any{"value": keys}
}

// iotHubDefaultPolicies are the shared access policies Azure gives a hub that declares none.
var iotHubDefaultPolicies = [][2]string{
	{"iothubowner", "RegistryWrite, ServiceConnect, DeviceConnect"},
	{"service", "ServiceConnect"},
	{"device", "DeviceConnect"},
	{"registryRead", "RegistryRead"},
	{"registryReadWrite", "RegistryWrite"},
}

func iotHubKeys(e *Emulator, r *resource) map[string]any {
	body, _ := r.decode()
	var values []any
	if props, _ := body["properties"].(map[string]any); props != nil {
		for _, p := range asSlice(props["authorizationPolicies"]) {
			m, _ := p.(map[string]any)
			name, _ := m["keyName"].(string)
			if name == "" {
				continue
			}
			values = append(values, map[string]any{
				"keyName": name, "rights": m["rights"],
				"primaryKey":   firstNonEmpty(getString(m, "primaryKey"), e.keyFor(r, name+"/primary")),
				"secondaryKey": firstNonEmpty(getString(m, "secondaryKey"), e.keyFor(r, name+"/secondary")),
			})
		}
	}
	if values == nil {
		for _, p := range iotHubDefaultPolicies {
			values = append(values, map[string]any{"keyName": p[0], "rights": p[1],
				"primaryKey": e.keyFor(r, p[0]+"/primary"), "secondaryKey": e.keyFor(r, p[0]+"/secondary")})
		}
	}
	return map[string]any{"value": values}
}

func mlWorkspaceKeys(e *Emulator, r *resource) map[string]any {
	body, _ := r.decode()
	registry := r.Name + "acr"
	if id := getString(body, "properties", "containerRegistry"); id != "" {
		registry = id[strings.LastIndexByte(id, '/')+1:]
	}
	storage := getString(body, "properties", "storageAccount")
	return map[string]any{
		"userStorageKey":                e.keyFor(r, "userStorage"),
		"userStorageResourceId":         storage,
		"appInsightsInstrumentationKey": e.guidFor(r, "appInsights"),
		"containerRegistryCredentials": map[string]any{
			"location": r.Location, "username": registry,
			"passwords": []any{
				map[string]any{"name": "password", "value": e.keyFor(r, "acr/password")},
				map[string]any{"name": "password2", "value": e.keyFor(r, "acr/password2")},
			},
		},
		"notebookAccessKeys": map[string]any{"primaryAccessKey": e.keyFor(r, "notebook/primary"), "secondaryAccessKey": e.keyFor(r, "notebook/secondary")},
	}
}

func notificationHubRuleKeys(e *Emulator, r *resource) map[string]any {
	ns := segmentAfter(r.ID, "namespaces")
	ep := "Endpoint=sb://" + ns + ".servicebus.windows.net/;SharedAccessKeyName=" + r.Name + ";SharedAccessKey="
	p, s := e.keyFor(r, "primary"), e.keyFor(r, "secondary")
	return map[string]any{"keyName": r.Name, "primaryKey": p, "secondaryKey": s,
		"primaryConnectionString": ep + p, "secondaryConnectionString": ep + s}
}

// searchKey is a 52-character key of upper-case letters and digits, as Azure AI Search's keys.
func searchKey(e *Emulator, r *resource, name string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	sum := sha256.Sum256([]byte(e.adminToken + "|" + r.key + "|" + name))
	sum2 := sha256.Sum256(sum[:])
	b := append(sum[:], sum2[:]...)
	out := make([]byte, 52)
	for i := range out {
		out[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(out)
}
