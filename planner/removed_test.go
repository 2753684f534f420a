package planner_test

import (
	"strings"
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

// A resource's warnings show in the text plan (above the resource, also for
// an unchanged one the text otherwise leaves out), in the markdown comment
// and in the JSON form.
func TestWarningsShowInEveryRendering(t *testing.T) {
	p := &planner.Plan{Revision: "0123456789abcdef", Resources: []*planner.Resource{
		{Namespace: "team", Group: "containerservice.azure.com", Version: "v1api20240402preview", Kind: "ManagedCluster", Name: "aks",
			Action: planner.Create, ARMID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks",
			Request:  &planner.Request{Method: "PUT", Path: "/x?api-version=2024-04-02-preview", Body: []byte(`{"location":"westeurope"}`)},
			Warnings: []string{"removed | after ASO v2.18.0"}},
		{Namespace: "team", Group: "storage.azure.com", Version: "v1beta20210401", Kind: "StorageAccount", Name: "sa",
			Action: planner.NoOp, ARMID: "/x/sa", Warnings: []string{"removed in ASO v2.4.0"}},
	}}
	var text, md, js strings.Builder
	if err := planner.RenderText(&text, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\n  # team/ManagedCluster/aks will be created\n  # warning: removed | after ASO v2.18.0\n  + containerservice.azure.com/v1api20240402preview ManagedCluster",
		"\n  # team/StorageAccount/sa is up to date\n  # warning: removed in ASO v2.4.0\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text plan lacks %q:\n%s", want, text.String())
		}
	}
	if err := planner.RenderMarkdown(&md, p); err != nil {
		t.Fatal(err)
	}
	if want := "> [!WARNING]\n> `team/ManagedCluster/aks`: removed \\| after ASO v2.18.0\n> `team/StorageAccount/sa`: removed in ASO v2.4.0\n"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
	if err := planner.RenderJSON(&js, p); err != nil {
		t.Fatal(err)
	}
	back, err := planner.ReadJSON(strings.NewReader(js.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Resources[0].Warnings; len(got) != 1 || got[0] != "removed | after ASO v2.18.0" {
		t.Errorf("JSON warnings %v", got)
	}
}
