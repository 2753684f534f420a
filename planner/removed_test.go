package planner_test

import (
	"strings"
	"testing"

	"github.com/gitaso/gitaso/planner"
)

// A manifest of a version a later ASO release removed plans with the
// conversion of the release that last had it (its api-version, its fields:
// aiToolchainOperatorProfile is in 2024-04-02-preview, not in the versions
// that replace it) and says, on the resource, which release removed it and
// what replaces it.
func TestRemovedVersionPlansWithItsReleaseConversion(t *testing.T) {
	files := map[string]string{"a.yaml": `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: rg, namespace: team}
spec: {location: westeurope}
---
apiVersion: containerservice.azure.com/v1api20240402preview
kind: ManagedCluster
metadata: {name: aks, namespace: team}
spec:
  location: westeurope
  owner: {name: rg}
  dnsPrefix: aks
  aiToolchainOperatorProfile: {enabled: true}
`}
	g, err := planner.Build(snapshot(t, files), planner.Options{SubscriptionID: sub})
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Get(planner.Key("team", "containerservice.azure.com", "ManagedCluster", "aks"))
	if r == nil || r.Action != planner.Create || r.Request == nil {
		t.Fatalf("ManagedCluster planned %+v, want a create", r)
	}
	if want := "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks?api-version=2024-04-02-preview"; r.Request.Path != want {
		t.Errorf("PUT %s, want %s", r.Request.Path, want)
	}
	if !strings.Contains(string(r.Request.Body), `"aiToolchainOperatorProfile":{"enabled":true}`) {
		t.Errorf("body %s lacks the 2024-04-02-preview field aiToolchainOperatorProfile", r.Request.Body)
	}
	want := "containerservice.azure.com/v1api20240402preview ManagedCluster was removed after ASO v2.18.0 (last in v2.18.0); " +
		"use containerservice.azure.com/v20251002preview or containerservice.azure.com/v1api20250801 or containerservice.azure.com/v1api20240901; " +
		"planned with ASO v2.18.0's conversion"
	if len(r.Warnings) != 1 || r.Warnings[0] != want {
		t.Errorf("warnings %q, want [%q]", r.Warnings, want)
	}
	if rg := p.Get(planner.Key("team", "resources.azure.com", "ResourceGroup", "rg")); rg == nil || len(rg.Warnings) != 0 {
		t.Errorf("resource group %+v: want no warning", rg)
	}
}

// A v1beta… version ASO renamed v1api… with the same schema plans with the
// v1api… package (its api-version), and the warning says so.
func TestRemovedBetaVersionPlansWithTheSameSchema(t *testing.T) {
	files := map[string]string{"sa.yaml": `
apiVersion: storage.azure.com/v1beta20210401
kind: StorageAccount
metadata: {name: sa, namespace: ns}
spec:
  location: westeurope
  kind: StorageV2
  sku: {name: Standard_LRS}
  owner: {armId: /subscriptions/` + sub + `/resourceGroups/rg}
`}
	g, err := planner.Build(snapshot(t, files), planner.Options{SubscriptionID: sub})
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Get(planner.Key("ns", "storage.azure.com", "StorageAccount", "sa"))
	if r == nil || r.Request == nil || !strings.HasSuffix(r.Request.Path, "/storageAccounts/sa?api-version=2021-04-01") {
		t.Fatalf("planned %+v, want a PUT with api-version 2021-04-01", r)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "was removed in ASO v2.4.0 (last in v2.3.0)") ||
		!strings.HasSuffix(r.Warnings[0], "planned with ASO v2.3.0's conversion, which storage.azure.com/v1api20210401 reproduces") {
		t.Errorf("warnings %q", r.Warnings)
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
