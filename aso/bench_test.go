package aso

import "testing"

const benchStorage = `
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata: {name: samplekubestorage, namespace: default}
spec:
  location: westcentralus
  kind: StorageV2
  sku: {name: Standard_LRS}
  owner: {name: aso-sample-rg}
  accessTier: Hot
  allowBlobPublicAccess: false
  minimumTlsVersion: TLS1_2
  tags: {team: a, env: prod}
  networkAcls: {defaultAction: Deny, bypass: AzureServices}
`

const benchRoleAssignment = `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata: {name: aso-sample-contributor, namespace: default}
spec:
  owner: {name: aso-sample-rg, group: resources.azure.com, kind: ResourceGroup}
  principalIdFromConfig: {name: identity-settings, key: principalId}
  roleDefinitionReference:
    armId: /subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c
`

type benchResolver struct{ fixedResolver }

func (benchResolver) ConfigMap(name, key string) (string, error) {
	return "db1f7c6e-0340-494e-9ba3-444929b9cc50", nil
}

func benchConvert(b *testing.B, y string) {
	docs, err := parseYAML([]byte(y))
	if err != nil {
		b.Fatal(err)
	}
	o := docs[0]
	k, ok := LookupAPIVersion(o["apiVersion"].(string), o["kind"].(string))
	if !ok {
		b.Fatal("unknown kind")
	}
	spec := o["spec"].(map[string]any)
	md := o["metadata"].(map[string]any)
	if _, err := Convert(k, spec, "n", benchResolver{}); err != nil { // warm the package
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		name, err := AzureName(k, "default", md["name"].(string), spec)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Convert(k, spec, name, benchResolver{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConvertStorageAccount: AzureName + Convert of a StorageAccount.
func BenchmarkConvertStorageAccount(b *testing.B) { benchConvert(b, benchStorage) }

// BenchmarkConvertRoleAssignment: UUIDv5 AzureName + Convert with a *FromConfig value.
func BenchmarkConvertRoleAssignment(b *testing.B) { benchConvert(b, benchRoleAssignment) }

// BenchmarkCatalogLoad: decompress and decode the embedded catalog (kinds table).
func BenchmarkCatalogLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeCatalog(catalogGz, packagesBin); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPackageDecode: decompress and decode one API package's schema
// (storage v1api20230101), paid once per package on first use.
func BenchmarkPackageDecode(b *testing.B) {
	c, err := decodeCatalog(catalogGz, packagesBin)
	if err != nil {
		b.Fatal(err)
	}
	gz := c.packages["storage.azure.com/v1api20230101"].gz
	b.ReportAllocs()
	for b.Loop() {
		raw, err := gunzip(gz)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := decodePackage(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkARMID: nested ARM ID from the owner's ID.
func BenchmarkARMID(b *testing.B) {
	k, _ := Lookup("storage.azure.com", "v1api20230101", "StorageAccountsBlobServicesContainer")
	owner := "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/sa/blobServices/default"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ARMID(k, "00000000-0000-0000-0000-000000000000", owner, "c"); err != nil {
			b.Fatal(err)
		}
	}
}
