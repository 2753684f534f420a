package schemacheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/benchdata/schemacheck"
)

// SharedDir returns ../shared (or $GITASO_SHARED_DIR) relative to this package, skipping the
// test when the facts catalog is not there.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("GITASO_SHARED_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(dir, "aso-schema", "kinds.json")); err != nil {
		t.Skipf("ASO facts catalog not found (%v): set GITASO_SHARED_DIR to the shared directory to run this test", err)
	}
	return dir
}

func load(t *testing.T) *schemacheck.Catalog {
	t.Helper()
	cat, err := schemacheck.Load(filepath.Join(sharedDir(t), "aso-schema"))
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// The real ASO samples of the conformance set use only fields the catalog knows. The only
// problems reported are the cross-document ones the conformance README documents (owners named
// after a sample that does not exist, a password Secret the test generates, and the same
// identity in two sample sets).
func TestConformanceSamplesHaveNoFieldErrors(t *testing.T) {
	cat := load(t)
	docs, err := schemacheck.ReadDir(filepath.Join(sharedDir(t), "conformance", "aso"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 40 {
		t.Fatalf("read %d documents from the conformance set, want at least 40", len(docs))
	}
	for _, e := range cat.Check(docs) {
		switch {
		case strings.Contains(e.Msg, "samplestorageaccount"),
			strings.Contains(e.Msg, `Secret "server-admin-pw" not found`),
			strings.Contains(e.Msg, "declared twice") && strings.Contains(e.Object, "sampleuserassignedidentity"):
		default:
			t.Errorf("unexpected error: %v", e)
		}
	}
}

func TestCheckFindsErrors(t *testing.T) {
	cat := load(t)
	const base = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: rg, namespace: ns}
spec: {location: westeurope}
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata: {name: uai, namespace: ns}
spec:
  location: westeurope
  owner: {name: rg}
  operatorSpec:
    configMaps:
      principalId: {name: uai-settings, key: principalId}
---
apiVersion: v1
kind: Secret
metadata: {name: pw, namespace: ns}
stringData: {password: x}
`
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the errors, in file/line order; none means valid
	}{
		{name: "valid base", yaml: ""},
		{
			name: "valid role assignment from exported config map",
			yaml: `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata: {name: ra, namespace: ns}
spec:
  owner: {group: resources.azure.com, kind: ResourceGroup, name: rg}
  principalIdFromConfig: {name: uai-settings, key: principalId}
  roleDefinitionReference: {wellKnownName: Reader}
`,
		},
		{
			name: "wrong case suggests the right name",
			yaml: `
apiVersion: storage.azure.com/v20230101
kind: StorageAccount
metadata: {name: sa, namespace: ns}
spec:
  location: westeurope
  owner: {name: rg}
  kind: StorageV2
  sku: {name: Standard_LRS}
  AccessTier: Hot
`,
			want: []string{`spec.AccessTier: unknown field (did you mean "accessTier"?`},
		},
		{
			name: "enum, type and required",
			yaml: `
apiVersion: storage.azure.com/v20230101
kind: StorageAccount
metadata: {name: sa, namespace: ns}
spec:
  location: westeurope
  owner: {name: rg}
  kind: StorageV3
  allowBlobPublicAccess: "no"
`,
			want: []string{
				`spec.allowBlobPublicAccess: must be true or false`,
				`spec.kind: "StorageV3" is not one of`,
				`spec.sku: required field missing`,
			},
		},
		{
			name: "unknown kind version suggests others",
			yaml: `
apiVersion: storage.azure.com/v1api20990101
kind: StorageAccount
metadata: {name: sa, namespace: ns}
spec: {}
`,
			want: []string{"known versions: storage.azure.com/v1api20210401 StorageAccount"},
		},
		{
			name: "owner in another namespace, missing config map and secret key",
			yaml: `
apiVersion: dbforpostgresql.azure.com/v1api20240801
kind: FlexibleServer
metadata: {name: pg, namespace: other}
spec:
  location: westeurope
  owner: {name: rg}
  administratorLoginPassword: {name: pw, key: password}
---
apiVersion: dbforpostgresql.azure.com/v1api20240801
kind: FlexibleServer
metadata: {name: pg, namespace: ns}
spec:
  location: westeurope
  owner: {name: rg}
  administratorLoginPassword: {name: pw, key: nope}
---
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata: {name: ra, namespace: ns}
spec:
  owner: {armId: /subscriptions/x}
  principalIdFromConfig: {name: uai-settings, key: clientId}
  roleDefinitionReference: {wellKnownName: Reader, armId: /subscriptions/x/providers/Microsoft.Authorization/roleDefinitions/y}
`,
			want: []string{
				`other/FlexibleServer/pg: spec.administratorLoginPassword: Secret "pw" not found in namespace other`,
				`other/FlexibleServer/pg: spec.owner: resources.azure.com ResourceGroup "rg" not found in namespace other`,
				`ns/FlexibleServer/pg: spec.administratorLoginPassword: Secret "pw" has no key "nope"`,
				`ns/RoleAssignment/ra: spec.principalIdFromConfig: ConfigMap "uai-settings" key "clientId" is neither`,
				`ns/RoleAssignment/ra: spec.roleDefinitionReference: set exactly one of armId, name, wellKnownName`,
			},
		},
		{
			name: "duplicate and bad annotation",
			yaml: `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
  namespace: ns
  annotations: {serviceoperator.azure.com/reconcile-policy: keep}
spec: {location: westeurope}
`,
			want: []string{"declared twice"},
		},
		{
			name: "bad annotation value",
			yaml: `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg2
  namespace: ns
  annotations:
    serviceoperator.azure.com/reconcile-policy: keep
    serviceoperator.azure.com/credential-from: nope
spec: {location: westeurope}
`,
			want: []string{
				`credential-from: Secret "nope" not found`,
				`reconcile-policy: "keep" is not one of`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := schemacheck.ReadFile("test.yaml", []byte(base+"---\n"+tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			errs := cat.Check(docs)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tc.want), errs)
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}

func TestReadFileReportsLinesAndBadYAML(t *testing.T) {
	docs, err := schemacheck.ReadFile("a.yaml", []byte("# comment\n---\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Line != 5 || docs[1].Line != 9 || docs[1].Name() != "b" || docs[1].Namespace() != "default" {
		t.Fatalf("docs = %+v", docs)
	}
	_, err = schemacheck.ReadFile("b.yaml", []byte("a: [\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "b.yaml: invalid YAML") {
		t.Fatalf("err = %v, want b.yaml: invalid YAML", err)
	}
}
