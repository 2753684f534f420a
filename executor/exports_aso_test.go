package executor_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/executor"
)

// The exports ASO's hand-written exporters write (api/<group>/customizations),
// end to end through the executor against the emulator: the call, its path
// and SDK api-version, and the values written.

// secretsOf returns the secret values of one secret of a result, failing
// when any is empty.
func secretsOf(t *testing.T, rr *executor.ResourceResult, name string, keys ...string) map[string]string {
	t.Helper()
	mustOK(t, rr)
	s := rr.Secrets[name]
	for _, k := range keys {
		if s[k] == "" {
			t.Errorf("secret %s has no %s: %v", name, k, s)
		}
	}
	return s
}

// oneCall checks that exactly one request went to the path ending in suffix,
// with method and api-version.
func (m *emu) oneCall(t *testing.T, method, suffix, apiVersion string) {
	t.Helper()
	var got []string
	for _, l := range m.e.RequestLog() {
		if strings.HasSuffix(l.Path, suffix) {
			got = append(got, l.Method+" "+l.Path+"?"+l.Query)
		}
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], method+" ") || !strings.HasSuffix(got[0], "?api-version="+apiVersion) {
		t.Errorf("calls to %s: %v, want one %s with api-version=%s", suffix, got, method, apiVersion)
	}
}

func TestAppConfigurationStoreKeys(t *testing.T) {
	m := newEmu(t)
	store := `apiVersion: appconfiguration.azure.com/v20240601
kind: ConfigurationStore
metadata:
  name: conf
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  sku: {name: standard}
  operatorSpec:
    secrets:
      primaryConnectionString: {name: conf, key: primaryConnectionString}
      primaryKey: {name: conf, key: primaryKey}
      primaryKeyID: {name: conf, key: primaryKeyID}
      secondaryReadOnlyConnectionString: {name: conf, key: roConnectionString}
    secretExpressions:
      - name: conf-expr
        key: endpoint
        value: secret.primaryConnectionString.split(";")[0]`
	rr := m.apply(t, rg, store)["conf"]
	s := secretsOf(t, rr, "conf", "primaryConnectionString", "primaryKey", "primaryKeyID", "roConnectionString")
	if want := "Endpoint=https://conf.azconfig.io;Id=" + s["primaryKeyID"] + ";Secret=" + s["primaryKey"]; s["primaryConnectionString"] != want {
		t.Errorf("primaryConnectionString %q, want %q", s["primaryConnectionString"], want)
	}
	if s["roConnectionString"] == s["primaryConnectionString"] {
		t.Error("read-only connection string is the primary one")
	}
	if got := rr.Secrets["conf-expr"]["endpoint"]; got != "Endpoint=https://conf.azconfig.io" {
		t.Errorf("expression %q", got)
	}
	m.oneCall(t, "POST", "/configurationStores/conf/listKeys", "2022-05-01")
}

func TestRedisEnterpriseDatabaseKeys(t *testing.T) {
	m := newEmu(t)
	cluster := `apiVersion: cache.azure.com/v1api20250401
kind: RedisEnterprise
metadata:
  name: cache
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  sku: {name: Enterprise_E10, capacity: 2}`
	db := `apiVersion: cache.azure.com/v1api20250401
kind: RedisEnterpriseDatabase
metadata:
  name: default
  namespace: team
spec:
  owner: {name: cache}
  clientProtocol: Encrypted
  operatorSpec:
    secrets:
      primaryKey: {name: redis, key: primaryKey}
      secondaryKey: {name: redis, key: secondaryKey}`
	s := secretsOf(t, m.apply(t, rg, cluster, db)["default"], "redis", "primaryKey", "secondaryKey")
	if s["primaryKey"] == s["secondaryKey"] {
		t.Errorf("keys %v", s)
	}
	m.oneCall(t, "POST", "/redisEnterprise/cache/databases/default/listKeys", "2022-01-01")
}

func TestIotHubKeys(t *testing.T) {
	m := newEmu(t)
	hub := `apiVersion: devices.azure.com/v1api20210702
kind: IotHub
metadata:
  name: hub
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  sku: {name: B1, capacity: 1}
  operatorSpec:
    secrets:
      iotHubOwnerPrimaryKey: {name: hub, key: owner}
      servicePrimaryKey: {name: hub, key: service}
      registryReadWriteSecondaryKey: {name: hub, key: rw2}
      deviceSecondaryKey: {name: hub, key: device2}`
	s := secretsOf(t, m.apply(t, rg, hub)["hub"], "hub", "owner", "service", "rw2", "device2")
	if s["owner"] == s["service"] {
		t.Errorf("keys %v", s)
	}
	// The SDK's path casing (IotHubs, listkeys).
	m.oneCall(t, "POST", "/IotHubs/hub/listkeys", "2023-06-30")
}

func TestMachineLearningWorkspaceKeys(t *testing.T) {
	m := newEmu(t)
	ws := `apiVersion: machinelearningservices.azure.com/v1api20240401
kind: Workspace
metadata:
  name: ml
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  sku: {name: Standard_S1, tier: Basic}
  identity: {type: SystemAssigned}
  operatorSpec:
    secrets:
      appInsightsInstrumentationKey: {name: ml, key: ai}
      containerRegistryPassword: {name: ml, key: acr1}
      containerRegistryPassword2: {name: ml, key: acr2}
      containerRegistryUserName: {name: ml, key: acrUser}
      primaryNotebookAccessKey: {name: ml, key: nb1}
      secondaryNotebookAccessKey: {name: ml, key: nb2}
      userStorageKey: {name: ml, key: storage}`
	s := secretsOf(t, m.apply(t, rg, ws)["ml"], "ml", "ai", "acr1", "acr2", "acrUser", "nb1", "nb2", "storage")
	if s["acr1"] == s["acr2"] || s["nb1"] == s["nb2"] {
		t.Errorf("secrets %v", s)
	}
	m.oneCall(t, "POST", "/workspaces/ml/listKeys", "2021-07-01")
}

func TestNotificationHubsKeys(t *testing.T) {
	m := newEmu(t)
	ns := `apiVersion: notificationhubs.azure.com/v1api20230901
kind: Namespace
metadata:
  name: nh
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  sku: {name: Free}
  operatorSpec:
    configMaps:
      serviceBusEndpoint: {name: nh-config, key: endpoint}
    secrets:
      primaryKey: {name: nh, key: primaryKey}
      primaryConnectionString: {name: nh, key: primaryConnectionString}
    secretExpressions:
      - name: nh-raw
        key: primaryKey
        value: secret.primaryKey`
	hub := `apiVersion: notificationhubs.azure.com/v1api20230901
kind: NotificationHub
metadata:
  name: hub
  namespace: team
spec:
  location: westeurope
  owner: {name: nh}
  operatorSpec:
    secrets:
      secondaryKey: {name: hub, key: secondaryKey}
      secondaryConnectionString: {name: hub, key: secondaryConnectionString}`
	res := m.apply(t, rg, ns, hub)
	s := secretsOf(t, res["nh"], "nh", "primaryKey", "primaryConnectionString")
	if want := "Endpoint=sb://nh.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=" + s["primaryKey"]; s["primaryConnectionString"] != want {
		t.Errorf("primaryConnectionString %q, want %q", s["primaryConnectionString"], want)
	}
	// ASO hands secretExpressions the primary connection string as
	// secret.primaryKey (its addSecretsToMap); the written secret is the key.
	if got := res["nh"].Secrets["nh-raw"]["primaryKey"]; got != s["primaryConnectionString"] {
		t.Errorf("secret.primaryKey in an expression %q, want ASO's %q", got, s["primaryConnectionString"])
	}
	h := secretsOf(t, res["hub"], "hub", "secondaryKey", "secondaryConnectionString")
	if !strings.Contains(h["secondaryConnectionString"], "SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey="+h["secondaryKey"]) {
		t.Errorf("hub secrets %v", h)
	}
	m.oneCall(t, "POST", "/namespaces/nh/AuthorizationRules/RootManageSharedAccessKey/listKeys", "2017-04-01")
	m.oneCall(t, "POST", "/notificationHubs/hub/AuthorizationRules/DefaultFullSharedAccessSignature/listKeys", "2017-04-01")
}

func TestSearchServiceKeys(t *testing.T) {
	m := newEmu(t)
	svc := `apiVersion: search.azure.com/v1api20231101
kind: SearchService
metadata:
  name: find
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  sku: {name: standard}
  operatorSpec:
    secrets:
      adminPrimaryKey: {name: search, key: admin1}
      adminSecondaryKey: {name: search, key: admin2}
      queryKey: {name: search, key: query}`
	s := secretsOf(t, m.apply(t, rg, svc)["find"], "search", "admin1", "admin2", "query")
	if s["admin1"] == s["admin2"] || s["query"] == s["admin1"] || len(s["query"]) != 52 {
		t.Errorf("keys %v", s)
	}
	m.oneCall(t, "POST", "/searchServices/find/listQueryKeys", "2025-05-01")
	m.oneCall(t, "POST", "/searchServices/find/listAdminKeys", "2025-05-01")
}

func TestManagedClusterCredentials(t *testing.T) {
	m := newEmu(t)
	mc := `apiVersion: containerservice.azure.com/v1api20250801
kind: ManagedCluster
metadata:
  name: aks
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  dnsPrefix: aks
  agentPoolProfiles:
    - {name: pool1, count: 1, vmSize: Standard_DS2_v2, osType: Linux, mode: System}
  identity: {type: SystemAssigned}
  operatorSpec:
    secrets:
      adminCredentials: {name: kube, key: admin}
      userCredentials: {name: kube, key: user}`
	rr := m.apply(t, rg, mc)["aks"]
	s := secretsOf(t, rr, "kube", "admin", "user")
	for k, v := range s {
		// The kubeconfig itself, decoded from ARM's base64 as the SDK does.
		if !strings.HasPrefix(v, "apiVersion: v1\n") || !strings.Contains(v, "kind: Config") {
			t.Errorf("%s: %q is not a kubeconfig", k, v)
		}
		if _, err := base64.StdEncoding.DecodeString(v); err == nil {
			t.Errorf("%s is still base64", k)
		}
	}
	if !strings.Contains(s["admin"], "clusterAdmin_rg_aks") || !strings.Contains(s["user"], "clusterUser_rg_aks") {
		t.Errorf("credentials %v", s)
	}
	m.oneCall(t, "POST", "/managedClusters/aks/listClusterAdminCredential", "2022-04-01")
	m.oneCall(t, "POST", "/managedClusters/aks/listClusterUserCredential", "2022-04-01")

	// Only the credential asked for is listed.
	m2 := newEmu(t)
	user := strings.Replace(mc, "      adminCredentials: {name: kube, key: admin}\n", "", 1)
	secretsOf(t, m2.apply(t, rg, user)["aks"], "kube", "user")
	if n := len(m2.requests("listClusterAdminCredential")); n != 0 {
		t.Errorf("admin credentials listed %d times without being asked for", n)
	}
}

func TestOpenShiftClusterCredentials(t *testing.T) {
	m := newEmu(t)
	oc := `apiVersion: redhatopenshift.azure.com/v1api20231122
kind: OpenShiftCluster
metadata:
  name: aro
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  clusterProfile: {domain: team}
  operatorSpec:
    secrets:
      adminCredentials: {name: aro, key: kubeconfig}
      username: {name: aro, key: username}
      password: {name: aro, key: password}`
	s := secretsOf(t, m.apply(t, rg, oc)["aro"], "aro", "kubeconfig", "username", "password")
	if s["username"] != "kubeadmin" || !strings.Contains(s["kubeconfig"], "server: https://api.team.westeurope.aroapp.io:6443/") {
		t.Errorf("secrets %v", s)
	}
	m.oneCall(t, "POST", "/openShiftClusters/aro/listAdminCredentials", "2023-11-22")
	m.oneCall(t, "POST", "/openShiftClusters/aro/listCredentials", "2023-11-22")
}

func TestPrivateEndpointNICAddress(t *testing.T) {
	m := newEmu(t)
	vnet := `apiVersion: network.azure.com/v1api20240301
kind: VirtualNetwork
metadata:
  name: vnet
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  addressSpace: {addressPrefixes: [10.3.0.0/16]}`
	subnet := `apiVersion: network.azure.com/v1api20240301
kind: VirtualNetworksSubnet
metadata:
  name: endpoints
  namespace: team
spec:
  owner: {name: vnet}
  addressPrefix: 10.3.7.0/24`
	pe := `apiVersion: network.azure.com/v1api20240301
kind: PrivateEndpoint
metadata:
  name: pe
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  privateLinkServiceConnections:
    - name: blob
      groupIds: [blob]
      privateLinkServiceReference:
        armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/other/providers/Microsoft.Storage/storageAccounts/sa
  subnet:
    reference: {group: network.azure.com, kind: VirtualNetworksSubnet, name: endpoints}
  operatorSpec:
    configMaps:
      primaryNicPrivateIpAddress: {name: pe, key: ip}`
	rr := m.apply(t, rg, vnet, subnet, pe)["pe"]
	mustOK(t, rr)
	if d := cmp.Diff(map[string]map[string]string{"pe": {"ip": "10.3.7.4"}}, rr.Outputs); d != "" {
		t.Errorf("config maps (-want +got):\n%s", d)
	}
	var nicGets []string
	for _, l := range m.e.RequestLog() {
		if strings.Contains(l.Path, "/networkInterfaces/") {
			nicGets = append(nicGets, l.Method+" "+l.Query)
		}
	}
	if d := cmp.Diff([]string{"GET api-version=2022-01-01"}, nicGets); d != "" {
		t.Errorf("NIC reads (-want +got):\n%s", d)
	}
}

// TestFleetCredentialsNotExported: Fleet's CRD has secrets.userCredentials
// but ASO writes nothing for it; gitaso says so instead of waiting forever.
func TestFleetCredentialsNotExported(t *testing.T) {
	m := newEmu(t)
	fleet := `apiVersion: containerservice.azure.com/v1api20250301
kind: Fleet
metadata:
  name: fleet
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  operatorSpec:
    secrets:
      userCredentials: {name: fleet, key: kubeconfig}`
	rr := m.apply(t, rg, fleet)["fleet"]
	if rr.Outcome != executor.Failed || rr.Ready.Reason != "FailedWritingAdditionalKubernetesObjects" ||
		!strings.Contains(rr.Ready.Message, "ASO declares this export but writes no value for it") {
		t.Errorf("outcome %s, ready %+v", rr.Outcome, rr.Ready)
	}
}

// TestListKeysKinds: the other kinds of the table, against the emulator's
// answers, with the samples' expressions (cognitiveservices Account keeps
// status.properties, as its spec does).
func TestListKeysKinds(t *testing.T) {
	for _, tc := range []struct {
		name, manifest, call, apiVersion string
		docs                             []string
		secrets                          []string
	}{
		{"account", `apiVersion: cognitiveservices.azure.com/v1api20250601
kind: Account
metadata:
  name: account
  namespace: team
spec:
  identity: {type: SystemAssigned}
  kind: OpenAI
  location: westeurope
  owner: {name: rg}
  properties: {publicNetworkAccess: Enabled}
  sku: {name: S0}
  operatorSpec:
    secrets:
      key1: {name: out, key: key1}
      key2: {name: out, key: key2}
    secretExpressions:
      - name: out
        key: endpoint
        value: self.status.properties.endpoint
      - name: out
        value: 'self.status.properties.endpoints.transformMapEntry(k, v, {k.replace(" ", "-").lowerAscii(): v})'`,
			"/accounts/account/listKeys", "2025-06-01", nil, []string{"key1", "key2", "endpoint", "openai-language-model-instance-api"}},
		{"topic", `apiVersion: eventgrid.azure.com/v1api20200601
kind: Topic
metadata:
  name: topic
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  operatorSpec:
    configMaps:
      endpoint: {name: cfg, key: endpoint}
    secrets:
      key1: {name: out, key: key1}`, "/topics/topic/listKeys", "2021-12-01", nil, []string{"key1"}},
		{"redis", `apiVersion: cache.azure.com/v1api20241101
kind: Redis
metadata:
  name: redis
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  sku: {family: P, name: Premium, capacity: 1}
  operatorSpec:
    secrets:
      primaryKey: {name: out, key: primaryKey}
      hostName: {name: out, key: hostName}
      sslPort: {name: out, key: sslPort}`, "/redis/redis/listKeys", "2021-06-01", nil, []string{"primaryKey", "hostName", "sslPort"}},
		{"logs", `apiVersion: operationalinsights.azure.com/v20250701
kind: Workspace
metadata:
  name: logs
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  sku: {name: Standalone}
  operatorSpec:
    secrets:
      primarySharedKey: {name: out, key: primarySharedKey}`, "/workspaces/logs/sharedKeys", "2020-08-01", nil, []string{"primarySharedKey"}},
		{"signalr", `apiVersion: signalrservice.azure.com/v1api20240301
kind: SignalR
metadata:
  name: signalr
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  sku: {capacity: 1, name: Premium_P1}
  operatorSpec:
    secrets:
      primaryConnectionString: {name: out, key: primaryConnectionString}`, "/signalR/signalr/listKeys", "2023-02-01", nil, []string{"primaryConnectionString"}},
		{"cosmos", `apiVersion: documentdb.azure.com/v1api20240815
kind: DatabaseAccount
metadata:
  name: cosmos
  namespace: team
spec:
  location: westeurope
  owner: {name: rg}
  databaseAccountOfferType: Standard
  locations: [{locationName: westeurope}]
  operatorSpec:
    secrets:
      primaryMasterKey: {name: out, key: primaryMasterKey}
      documentEndpoint: {name: out, key: documentEndpoint}`, "/databaseAccounts/cosmos/listKeys", "2021-10-15", nil, []string{"primaryMasterKey", "documentEndpoint"}},
		{"subscription", `apiVersion: apimanagement.azure.com/v1api20240501
kind: Subscription
metadata:
  name: subscription
  namespace: team
spec:
  displayName: all APIs
  owner: {name: apim}
  scope: /apis
  operatorSpec:
    secrets:
      primaryKey: {name: out, key: primaryKey}`, "/subscriptions/subscription/listSecrets", "2022-08-01", []string{`apiVersion: apimanagement.azure.com/v1api20240501
kind: Service
metadata:
  name: apim
  namespace: team
spec:
  location: westeurope
  sku: {capacity: 1, name: BasicV2}
  owner: {name: rg}
  publisherEmail: team@example.com
  publisherName: team`}, []string{"primaryKey"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newEmu(t)
			docs := append(append([]string{rg}, tc.docs...), tc.manifest)
			rr := m.apply(t, docs...)[tc.name]
			secretsOf(t, rr, "out", tc.secrets...)
			m.oneCall(t, "POST", tc.call, tc.apiVersion)
		})
	}
}
