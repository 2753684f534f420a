package migrate_test

import (
	"testing"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/migrate"
)

func defaultName(t *testing.T, o *migrate.Object) string {
	t.Helper()
	k, ok := aso.Lookup(o.Group, o.Version, o.Kind)
	if !ok {
		t.Fatalf("%s not in the catalog", o.Kind)
	}
	spec := o.Manifest["spec"].(map[string]any)
	n, err := aso.AzureName(k, o.Namespace, o.Name, spec)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
