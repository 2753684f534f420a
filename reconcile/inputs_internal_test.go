package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// The Secrets a spec references and the repository does not declare are
// read from the cluster, as ASO reads them: an imported repository holds
// none (fails before: only the aso-credential Secrets were asked for).
func TestCredentialKeysSpecSecrets(t *testing.T) {
	objs, err := source.ParseFile("pg.yaml", []byte(`apiVersion: dbforpostgresql.azure.com/v1api20240801
kind: FlexibleServer
metadata: {name: pg, namespace: platform}
spec:
  location: uksouth
  owner: {name: rg}
  administratorLogin: pgadmin
  administratorLoginPassword: {name: pg-admin, key: password}
---
apiVersion: dbforpostgresql.azure.com/v1api20240801
kind: FlexibleServer
metadata: {name: pg2, namespace: team}
spec:
  location: uksouth
  owner: {name: rg}
  administratorLogin: pgadmin
  administratorLoginPassword: {name: declared, key: password}
---
apiVersion: v1
kind: Secret
metadata: {name: declared, namespace: team}
stringData: {password: x}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := credentialKeys(&manifest.Snapshot{Objects: objs})
	want := []string{"platform/aso-credential", "platform/pg-admin", "team/aso-credential"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
}
