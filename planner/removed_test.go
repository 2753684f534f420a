package planner_test

import (
	"testing"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/planner"
)

// A manifest of a version a later ASO release removed says which release
// removed it and what replaces it.
func TestRemovedVersionNamesReleaseAndReplacement(t *testing.T) {
	files := map[string]string{"a.yaml": `
apiVersion: containerservice.azure.com/v1api20240402preview
kind: ManagedCluster
metadata: {name: aks, namespace: team}
spec:
  location: westeurope
  owner: {name: rg}
`}
	_, err := planner.Build(snapshot(t, files), planner.Options{SubscriptionID: sub})
	l := diag.AsList(err)
	if len(l) != 1 {
		t.Fatalf("want one error, got %v", err)
	}
	want := `a.yaml:2: team/ManagedCluster/aks: apiVersion: unknown ASO kind containerservice.azure.com/v1api20240402preview ManagedCluster: ` +
		`containerservice.azure.com/v1api20240402preview ManagedCluster was removed after ASO v2.18.0 (last in v2.18.0); ` +
		`use containerservice.azure.com/v20251002preview or containerservice.azure.com/v1api20250801 or containerservice.azure.com/v1api20240901`
	if got := l[0].Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
