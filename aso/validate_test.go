package aso

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustParse(t *testing.T, y string) map[string]any {
	t.Helper()
	docs, err := parseYAML([]byte(y))
	if err != nil || len(docs) != 1 {
		t.Fatalf("parse: %v (%d docs)", err, len(docs))
	}
	return docs[0]
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // "field: message substring"
	}{
		{
			name: "valid role assignment",
			yaml: `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata: {name: ra}
spec:
  owner: {group: resources.azure.com, kind: ResourceGroup, name: rg}
  principalId: 00000000-0000-0000-0000-000000000001
  roleDefinitionReference: {wellKnownName: Reader}
`,
		},
		{
			name: "wrong-case ARMID and both forms",
			yaml: `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata: {name: ra}
spec:
  owner: {group: resources.azure.com, kind: ResourceGroup, name: rg}
  principalId: p
  principalIdFromConfig: {name: cm, key: principalId}
  roleDefinitionReference:
    ARMID: /subscriptions/x/providers/Microsoft.Authorization/roleDefinitions/y
    name: r
    group: authorization.azure.com
    kind: RoleDefinition
  principalType: user
`,
			want: []string{
				`spec.principalId: set only one of principalId and principalIdFromConfig`,
				`spec.principalType: unsupported value "user": did you mean "User"?`,
				`spec.roleDefinitionReference.ARMID: unknown field "ARMID": did you mean "armId"?`,
			},
		},
		{
			name: "reference with armId and name",
			yaml: `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata: {name: ra}
spec:
  owner: {armId: /subscriptions/00000000-0000-0000-0000-000000000000}
  principalId: p
  roleDefinitionReference:
    armId: /subscriptions/x/providers/Microsoft.Authorization/roleDefinitions/y
    name: r
    group: authorization.azure.com
    kind: RoleDefinition
`,
			want: []string{`spec.roleDefinitionReference: set only one of armId and name`},
		},
		{
			name: "GroupReferences, enum, required, type",
			yaml: `
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata: {name: sa}
spec:
  location: westeurope
  Kind: StorageV2
  sku: {name: Standard_LRX}
  accessTier: hot
  isHnsEnabled: "yes"
  tags: {a: b}
`,
			want: []string{
				`spec.Kind: unknown field "Kind": did you mean "kind"?`,
				`spec.accessTier: unsupported value "hot": did you mean "Hot"?`,
				`spec.isHnsEnabled: expected true or false, got a string`,
				`spec.kind: required field is missing`,
				`spec.owner: required field is missing`,
				`spec.sku.name: unsupported value "Standard_LRX": must be one of`,
			},
		},
		{
			name: "owner of the wrong kind, typo field",
			yaml: `
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccountsBlobServicesContainer
metadata: {name: c}
spec:
  owner: {name: sa, group: storage.azure.com, kind: StorageAccount}
  publicAcess: None
`,
			want: []string{
				`spec.owner.kind: the owner of a StorageAccountsBlobServicesContainer must be a storage.azure.com/StorageAccountsBlobService`,
				`spec.publicAcess: unknown field "publicAcess": did you mean "publicAccess"?`,
			},
		},
		{
			name: "GroupReferences in a private endpoint",
			yaml: `
apiVersion: network.azure.com/v1api20220701
kind: PrivateEndpoint
metadata: {name: pe}
spec:
  location: westeurope
  owner: {name: rg}
  privateLinkServiceConnections:
    - name: conn
      GroupReferences: [blob]
      privateLinkServiceReference: {group: storage.azure.com, kind: StorageAccount, name: sa}
  subnet: {reference: {group: network.azure.com, kind: VirtualNetworksSubnet, name: s}}
`,
			want: []string{`spec.privateLinkServiceConnections[0].GroupReferences: unknown field "GroupReferences"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := mustParse(t, tt.yaml)
			k, ok := LookupAPIVersion(o["apiVersion"].(string), o["kind"].(string))
			if !ok {
				t.Fatalf("unknown kind")
			}
			errs := Validate(k, o)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field+": "+e.Msg)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %d:\n got %s\nwant prefix %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// Every conformance sample is valid.
func TestValidateConformanceSamples(t *testing.T) {
	shared := sharedDir(t)
	files, _ := filepath.Glob(filepath.Join(shared, "conformance", "aso", "*", "*", "*.yaml"))
	refs, _ := filepath.Glob(filepath.Join(shared, "conformance", "aso", "*", "*", "refs", "*.yaml"))
	files = append(files, refs...)
	if len(files) < 40 {
		t.Fatalf("found only %d samples", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := parseYAML(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			o, err := newTestObj(f, d)
			if err != nil {
				t.Fatal(err)
			}
			if errs := Validate(o.k, d); len(errs) > 0 {
				t.Errorf("%s: %v", f, errs)
			}
		}
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		g, v, k string
		first   string
	}{
		{"storage.azure.com", "v1api20990101", "StorageAccount", "storage.azure.com/v20250601 StorageAccount"},
		{"storage.azure.com", "v1beta20210401", "StorageAccount", "storage.azure.com/"},
		{"storage.azure.com", "v1api20230101", "Storageaccount", "storage.azure.com/v1api20230101 StorageAccount"},
		{"storage.azure.io", "v1api20230101", "StorageAccount", "storage.azure.com/v1api20230101 StorageAccount"},
		{"managedidentity.azure.com", "v1api20230131", "UserAssignedIdentitiy", "managedidentity.azure.com/v1api20230131 UserAssignedIdentity"},
	}
	for _, tt := range tests {
		got := Suggest(tt.g, tt.v, tt.k)
		if len(got) == 0 || !strings.HasPrefix(got[0], tt.first) {
			t.Errorf("Suggest(%s, %s, %s) = %q, want first %q", tt.g, tt.v, tt.k, got, tt.first)
		}
	}
	if got := Suggest("example.com", "v1", "Zzzzqqq"); len(got) != 0 {
		t.Errorf("Suggest for nonsense = %q, want none", got)
	}
	if diff := cmp.Diff(3, len(Suggest("storage.azure.com", "v1", "StorageAccount"))); diff != "" {
		t.Errorf("want 3 suggestions: %s", diff)
	}
}

func TestLooksLikeASO(t *testing.T) {
	for g, want := range map[string]bool{
		"resources.azure.cm":      true,
		"azure.microsoft.com":     true,
		"storage.azure.com":       false, // is ASO
		"":                        false,
		"apps":                    false,
		"networking.k8s.io":       false,
		"kustomize.config.k8s.io": false,
		"resources.azure.co":      true,
	} {
		if got := LooksLikeASO(g); got != want {
			t.Errorf("LooksLikeASO(%q) = %v, want %v", g, got, want)
		}
	}
	if s := Suggest("azure.microsoft.com", "v1alpha1", "ResourceGroup"); len(s) == 0 || s[0] != "resources.azure.com/v1api20200601 ResourceGroup" {
		t.Errorf("Suggest for an ASO v1 ResourceGroup = %q", s)
	}
	if s := Suggest("resources.azure.cm", "v1api20200601", "ResourceGroup"); len(s) == 0 || s[0] != "resources.azure.com/v1api20200601 ResourceGroup" {
		t.Errorf("Suggest for a group typo = %q", s)
	}
}
