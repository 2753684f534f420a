package planner_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
)

// TestPlanSaysWhereAResourceCameFrom: a resource a HelmRelease rendered
// shows its release, chart and version, template and Kustomization in the
// plan (text, markdown, JSON), and the revision names the chart versions.
func TestPlanSaysWhereAResourceCameFrom(t *testing.T) {
	snap := snapshot(t, map[string]string{"apps/team-a.yaml": `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: team-a-rg
  namespace: team-a
  annotations:
    gitaso.io/flux-kustomization: flux-system/apps
    gitaso.io/helm-release: team-a/infra
    gitaso.io/helm-chart: team-infra@1.1.0
    gitaso.io/helm-template: team-infra/templates/rg.yaml
spec:
  location: westeurope
`})
	snap.External = []manifest.External{{Kind: "HelmChart", User: "team-a/infra", Name: "team-infra", Version: "1.1.0", Digest: "sha256:abc"}}
	snap.Revision = "0123456789abcdef0123456789abcdef01234567+5f2b0c9d1e3a"
	g, err := planner.Build(snap, planner.Options{SubscriptionID: "11111111-2222-3333-4444-555555555555"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	o := p.Resources[0].Origin
	if o == nil || o.HelmRelease != "team-a/infra" || o.Chart != "team-infra@1.1.0" || o.Template != "team-infra/templates/rg.yaml" || o.Kustomization != "flux-system/apps" {
		t.Fatalf("origin %+v", o)
	}
	var text, md, js bytes.Buffer
	_ = planner.RenderText(&text, p, planner.TextOptions{})
	_ = planner.RenderMarkdown(&md, p)
	_ = planner.RenderJSON(&js, p)
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		for _, want := range []string{"0123456789ab+5f2b0c9d1e3a", "team-infra@1.1.0"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s plan lacks %q:\n%s", name, want, out)
			}
		}
	}
	if !strings.Contains(text.String(), `origin     = "HelmRelease team-a/infra, chart team-infra@1.1.0, template team-infra/templates/rg.yaml, Kustomization flux-system/apps"`) {
		t.Errorf("text plan lacks the origin:\n%s", text.String())
	}
	if !strings.Contains(js.String(), `"helmRelease":"team-a/infra"`) && !strings.Contains(js.String(), `"helmRelease": "team-a/infra"`) {
		t.Errorf("JSON plan lacks the origin:\n%s", js.String())
	}
}
