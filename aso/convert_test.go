package aso

import (
	"errors"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/google/go-cmp/cmp"
)

func TestConvert(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		r        Resolver
		want     string
		secrets  []string
		unknowns []string
	}{
		{
			name: "kusto resource-level one-of gets the name pushed into the variant",
			yaml: `
apiVersion: kusto.azure.com/v1api20240413
kind: Database
spec:
  owner: {name: c}
  readWriteDatabase: {kind: ReadWrite, hotCachePeriod: P1D, location: westeurope}
`,
			want: `{"kind":"ReadWrite","location":"westeurope","name":"NAME","properties":{"hotCachePeriod":"P1D"}}`,
		},
		{
			name: "containerservice: explicit nulls, explicit empty collections, integral float to int",
			yaml: `
apiVersion: containerservice.azure.com/v1api20240901
kind: ManagedCluster
spec:
  owner: {name: rg}
  location: westeurope
  dnsPrefix: aks
  agentPoolProfiles:
    - {name: pool1, count: 1.0, vmSize: Standard_DS2_v2, mode: System}
`,
			want: `{"location":"westeurope","name":"NAME","properties":{"addonProfiles":null,"agentPoolProfiles":[{"availabilityZones":null,"count":1,"mode":"System","name":"pool1","nodeLabels":{},"nodeTaints":[],"tags":{},"vmSize":"Standard_DS2_v2"}],"dnsPrefix":"aks","identityProfile":null,"privateLinkResources":null},"tags":{}}`,
		},
		{
			name: "reference wins over raw id, one-of flattened, map keys sorted and HTML-escaped, number field",
			yaml: `
apiVersion: insights.azure.com/v1api20180301
kind: MetricAlert
spec:
  owner: {name: rg}
  location: global
  severity: 2
  enabled: true
  evaluationFrequency: PT1M
  windowSize: PT5M
  scopesReferences: [{armId: /subscriptions/x/a}]
  actions:
    - actionGroupId: /raw/id
      actionGroupReference: {armId: /ref/id}
      webHookProperties: {z: "<b>&", a: "1"}
  criteria:
    microsoftAzureMonitorSingleResourceMultipleMetricCriteria:
      odata.type: Microsoft.Azure.Monitor.SingleResourceMultipleMetricCriteria
      allOf:
        - {name: c1, metricName: Percentage CPU, operator: GreaterThan, threshold: 80, timeAggregation: Average, criterionType: StaticThresholdCriterion}
`,
			want: `{"location":"global","name":"NAME","properties":{"actions":[{"actionGroupId":"/ref/id","webHookProperties":{"a":"1","z":"\u003cb\u003e\u0026"}}],"criteria":{"allOf":[{"criterionType":"StaticThresholdCriterion","metricName":"Percentage CPU","name":"c1","operator":"GreaterThan","threshold":80,"timeAggregation":"Average"}],"odata.type":"Microsoft.Azure.Monitor.SingleResourceMultipleMetricCriteria"},"enabled":true,"evaluationFrequency":"PT1M","scopes":["/subscriptions/x/a"],"severity":2,"windowSize":"PT5M"}}`,
		},
		{
			name: "empty map with omitempty is dropped",
			yaml: `
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
spec: {owner: {name: rg}, location: westeurope, tags: {}}
`,
			want: `{"location":"westeurope","name":"NAME"}`,
		},
		{
			name: "storage: userAssignedIdentities list to map, present empty map sent, empty list sent as null",
			yaml: `
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
spec:
  owner: {name: rg}
  location: westeurope
  kind: StorageV2
  sku: {name: Standard_LRS}
  tags: {}
  identity:
    type: UserAssigned
    userAssignedIdentities:
      - reference: {group: managedidentity.azure.com, kind: UserAssignedIdentity, name: id1}
      - reference: {armId: /subscriptions/x/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id0}
  networkAcls: {defaultAction: Deny, ipRules: []}
`,
			want: `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Fake/UserAssignedIdentity/id1":{},"/subscriptions/x/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id0":{}}},"kind":"StorageV2","location":"westeurope","name":"NAME","properties":{"networkAcls":{"defaultAction":"Deny","ipRules":null,"resourceAccessRules":null,"virtualNetworkRules":null}},"sku":{"name":"Standard_LRS"},"tags":{}}`,
		},
		{
			name: "FromConfig wins over the literal and is unknown until applied",
			yaml: `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
spec:
  owner: {group: resources.azure.com, kind: ResourceGroup, name: rg}
  principalId: literal
  principalIdFromConfig: {name: cm, key: principalId}
  roleDefinitionReference: {wellKnownName: Reader}
`,
			want:     `{"name":"NAME","properties":{"principalId":"(known after apply)","roleDefinitionId":"/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7"}}`,
			unknowns: []string{"/properties/principalId"},
		},
		{
			name: "wellKnownName is the built-in role's ID in the owner's subscription (ASO's RoleAssignment hook)",
			yaml: `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
spec:
  owner: {armId: /subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg}
  principalId: p
  roleDefinitionReference: {wellKnownName: storage blob data CONTRIBUTOR}
`,
			want: `{"name":"NAME","properties":{"principalId":"p","roleDefinitionId":"/subscriptions/11111111-2222-3333-4444-555555555555/providers/Microsoft.Authorization/roleDefinitions/ba92f5b4-2d11-453d-a403-e96b0029c9fe"}}`,
		},
		{
			name: "wellKnownName of an assignment owned by a resource known only after apply is known after apply",
			yaml: `
apiVersion: authorization.azure.com/v1api20200801preview
kind: RoleAssignment
spec:
  owner: {group: storage.azure.com, kind: StorageAccount, name: sa}
  principalId: p
  roleDefinitionReference: {wellKnownName: Reader}
`,
			r:        unknownOwner{},
			want:     `{"name":"NAME","properties":{"principalId":"p","roleDefinitionId":"(known after apply)"}}`,
			unknowns: []string{"/properties/roleDefinitionId"},
		},
		{
			name: "a container app's identityReference wellKnownName (system) is not a role",
			yaml: `
apiVersion: app.azure.com/v1api20250101
kind: ContainerApp
spec:
  owner: {name: rg}
  location: westeurope
  configuration:
    registries:
      - server: r.azurecr.io
        identityReference: {wellKnownName: system}
`,
			want: `{"location":"westeurope","name":"NAME","properties":{"configuration":{"registries":[{"identity":"system","server":"r.azurecr.io"}]}}}`,
		},
		{
			name: "secret maps are listed; a wrongly cased key (oAuth2GrantType) is dropped as the API server would",
			yaml: `
apiVersion: apimanagement.azure.com/v1api20220801
kind: AuthorizationProvidersAuthorization
spec:
  owner: {name: p}
  authorizationType: OAuth2
  oAuth2GrantType: ClientCredentials
  parameters: {name: params}
`,
			want:    `{"name":"NAME","properties":{"authorizationType":"OAuth2","parameters":{"a":"1"}}}`,
			secrets: []string{"/properties/parameters"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := mustParse(t, tt.yaml)
			k := mustKind(t, o["apiVersion"].(string), o["kind"].(string))
			r := tt.r
			if r == nil {
				r = fixedResolver{}
			}
			b, err := Convert(k, o["spec"].(map[string]any), "NAME", r)
			if err != nil {
				t.Fatal(err)
			}
			if string(b.JSON) != tt.want {
				t.Errorf("\n got %s\nwant %s", b.JSON, tt.want)
			}
			if diff := cmp.Diff(tt.secrets, b.Secrets); diff != "" {
				t.Errorf("Secrets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.unknowns, b.Unknown); diff != "" {
				t.Errorf("Unknown (-want +got):\n%s", diff)
			}
		})
	}
}

// unknownOwner knows no resource's ARM ID before apply.
type unknownOwner struct{ fixedResolver }

func (unknownOwner) ResourceID(group, kind, name string) (string, error) { return "", ErrUnknown }

type failingResolver struct{ fixedResolver }

func (failingResolver) Secret(name, key string) (string, error) {
	return "", errors.New("secret not found")
}

func TestConvertErrors(t *testing.T) {
	tests := []struct {
		name, yaml, field, msg string
	}{
		{"one-of without variant", `
apiVersion: kusto.azure.com/v1api20240413
kind: Database
spec: {owner: {name: c}}
`, "spec", "one of readWriteDatabase must be set"},
		{"wrong type", `
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
spec: {owner: {name: rg}, location: 3, kind: StorageV2, sku: {name: Standard_LRS}}
`, "spec.location", "expected a string"},
		{"fractional int", `
apiVersion: cdn.azure.com/v1api20230501
kind: AfdOrigin
spec: {owner: {name: og}, hostName: h, httpPort: 80.5}
`, "spec.httpPort", "expected an integer"},
		{"reference with both forms", `
apiVersion: cdn.azure.com/v1api20230501
kind: Route
spec: {owner: {name: e}, originGroup: {reference: {armId: /x, name: og, group: cdn.azure.com, kind: AfdOriginGroup}}}
`, "spec.originGroup.reference", "set either armId or name"},
		{"missing secret", `
apiVersion: dbforpostgresql.azure.com/v1api20240801
kind: FlexibleServer
spec: {owner: {name: rg}, administratorLoginPassword: {name: pw, key: password}}
`, "spec.administratorLoginPassword", "secret not found"},
		{"refKeyMap item without reference", `
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
spec: {owner: {name: rg}, identity: {type: UserAssigned, userAssignedIdentities: [{}]}}
`, "spec.identity.userAssignedIdentities[0].reference", "reference is required"},
		{"misspelt built-in role", `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
spec: {owner: {armId: /subscriptions/s/resourceGroups/rg}, principalId: p, roleDefinitionReference: {wellKnownName: Contributer}}
`, "spec.roleDefinitionReference.wellKnownName", `unknown built-in role "Contributer": did you mean "Contributor"?`},
		{"built-in role at a scope that is no ARM ID", `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
spec: {owner: {armId: /resourceGroups/rg}, principalId: p, roleDefinitionReference: {wellKnownName: Reader}}
`, "spec.owner", `cannot take the subscription from the scope "/resourceGroups/rg"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := mustParse(t, tt.yaml)
			k := mustKind(t, o["apiVersion"].(string), o["kind"].(string))
			_, err := Convert(k, o["spec"].(map[string]any), "n", failingResolver{})
			var de *diag.Error
			if !errors.As(err, &de) {
				t.Fatalf("err = %v (%T), want *diag.Error", err, err)
			}
			if de.Field != tt.field || !strings.Contains(de.Error(), tt.msg) {
				t.Errorf("got field %q error %q, want field %q containing %q", de.Field, de.Error(), tt.field, tt.msg)
			}
		})
	}
}

func TestDependencies(t *testing.T) {
	o := mustParse(t, `
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
spec:
  owner: {name: rg}
  identity:
    type: UserAssigned
    userAssignedIdentities:
      - reference: {group: managedidentity.azure.com, kind: UserAssignedIdentity, name: id1}
  encryption:
    identity:
      userAssignedIdentityReference: {armId: /subscriptions/x/id}
`)
	k := mustKind(t, "storage.azure.com/v1api20230101", "StorageAccount")
	deps, err := Dependencies(k, o["spec"].(map[string]any))
	if err != nil {
		t.Fatal(err)
	}
	want := []Dep{
		{Field: "spec.encryption.identity.userAssignedIdentityReference", Type: DepReference, ARMID: "/subscriptions/x/id"},
		{Field: "spec.identity.userAssignedIdentities[0].reference", Type: DepReference, Group: "managedidentity.azure.com", Kind: "UserAssignedIdentity", Name: "id1"},
	}
	if diff := cmp.Diff(want, deps); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	ra := mustParse(t, `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
spec:
  owner: {group: managedidentity.azure.com, kind: UserAssignedIdentity, name: id}
  principalIdFromConfig: {name: identity-settings, key: principalId}
  roleDefinitionReference: {wellKnownName: Reader}
`)
	k = mustKind(t, "authorization.azure.com/v1api20220401", "RoleAssignment")
	deps, err = Dependencies(k, ra["spec"].(map[string]any))
	if err != nil {
		t.Fatal(err)
	}
	want = []Dep{
		{Field: "spec.principalIdFromConfig", Type: DepConfigMap, Name: "identity-settings", Key: "principalId"},
		{Field: "spec.roleDefinitionReference", Type: DepReference, WellKnownName: "Reader"},
	}
	if diff := cmp.Diff(want, deps); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	pg := mustParse(t, `
apiVersion: dbforpostgresql.azure.com/v1api20240801
kind: FlexibleServer
spec:
  owner: {name: rg}
  administratorLoginPassword: {name: pw}
`)
	k = mustKind(t, "dbforpostgresql.azure.com/v1api20240801", "FlexibleServer")
	_, err = Dependencies(k, pg["spec"].(map[string]any))
	if l := diag.AsList(err); len(l) != 1 || l[0].Field != "spec.administratorLoginPassword" {
		t.Errorf("err = %v, want one error on spec.administratorLoginPassword", err)
	}
}
