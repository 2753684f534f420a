package planner_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// partialUnits are four units: one failed to build, with its errors (one
// with a backtick and a newline, which neither plan may break on), one
// waiting for it, one healthy, one ignored release.
func partialUnits() []record.Unit {
	return []record.Unit{
		{Kind: "Kustomization", Namespace: "flux-system", Name: "platform",
			Ready:               record.Condition{Type: "Ready", Status: "True", Reason: "ReconciliationSucceeded"},
			LastAppliedRevision: "2222222222222222222222222222222222222222"},
		{Kind: "Kustomization", Namespace: "team-b", Name: "apps",
			Ready:               record.Condition{Type: "Ready", Status: "False", Reason: "BuildFailed", Message: "kustomize build failed"},
			LastAppliedRevision: "1111111111111111111111111111111111111111",
			Errors: []string{
				"teams/b/kustomization.yaml:7: patches[0]: no object matches the patch's target",
				"teams/b/vars.yaml:3: ${`DB_SKU`} is not set\n(strict substitution)",
			},
			Objects: []string{"team-b/resources.azure.com/ResourceGroup/b-rg", "team-b/storage.azure.com/StorageAccount/bstore"}},
		{Kind: "HelmRelease", Namespace: "team-b", Name: "db",
			Ready: record.Condition{Type: "Ready", Status: "False", Reason: "DependencyNotReady", Message: "dependency 'Kustomization/team-b/apps' is not ready"}},
		{Kind: "HelmRelease", Namespace: "cert-manager", Name: "cert-manager", Ignored: true,
			Ready: record.Condition{Type: "Ready", Status: "True", Reason: "ReconciliationSucceeded"}},
	}
}

func renderBoth(t *testing.T, p *planner.Plan) (text, md string) {
	t.Helper()
	var tb, mb bytes.Buffer
	if err := planner.RenderText(&tb, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := planner.RenderMarkdown(&mb, p); err != nil {
		t.Fatal(err)
	}
	return tb.String(), mb.String()
}

// A plan whose units failed says so at its head, in the text plan and the
// pull-request comment: how many of how many, then per failed unit its ID,
// reason, last applied revision, objects kept, and its errors (file:line)
// or its message; the ignored releases are counted.
func TestRenderPartialPlan(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	p.Units = partialUnits()
	text, md := renderBoth(t, p)
	wantText := `gitaso plan for revision 0123456789ab
  1 release renders no ASO object

Partial: 2 of 4 units failed; their objects are kept as last applied
  Kustomization/team-b/apps (BuildFailed): last applied 111111111111, 2 objects kept
      teams/b/kustomization.yaml:7: patches[0]: no object matches the patch's target
      teams/b/vars.yaml:3: ${` + "`DB_SKU`" + `} is not set (strict substitution)
  HelmRelease/team-b/db (DependencyNotReady): never applied
      dependency 'Kustomization/team-b/apps' is not ready

  # platform/ResourceGroup/team-a-rg will be created
`
	if !strings.HasPrefix(text, wantText) {
		t.Errorf("text plan head:\n%s\nwant:\n%s", text[:min(len(text), len(wantText)+200)], wantText)
	}
	if !strings.HasSuffix(text, "Partial: the units that failed keep their objects as last applied until they render again.\n") {
		t.Errorf("text plan does not end saying it is partial:\n%s", text[max(0, len(text)-300):])
	}
	wantMD := "### gitaso plan for `0123456789ab`\n\n" +
		"1 release renders no ASO object.\n\n" +
		"> [!CAUTION]\n> **Partial: 2 of 4 units failed; their objects are kept as last applied.** Every other unit is planned.\n>\n" +
		"> - `Kustomization/team-b/apps (BuildFailed): last applied 111111111111, 2 objects kept`\n" +
		">   - `teams/b/kustomization.yaml:7: patches[0]: no object matches the patch's target`\n" +
		">   - ``teams/b/vars.yaml:3: ${`DB_SKU`} is not set (strict substitution)``\n" +
		"> - `HelmRelease/team-b/db (DependencyNotReady): never applied`\n" +
		">   - `dependency 'Kustomization/team-b/apps' is not ready`\n\n" +
		"**6 to create"
	if !strings.HasPrefix(md, wantMD) {
		t.Errorf("markdown plan head:\n%s\nwant:\n%s", md[:min(len(md), len(wantMD)+200)], wantMD)
	}
	if !strings.Contains(md, "<details><summary>Full plan</summary>\n\n```diff\n"+strings.ReplaceAll(wantText, "```", "'''")) {
		t.Error("the comment's full plan is not the text plan")
	}
	if got, want := planner.SummaryLine(p), "partial (2 of 4 units failed): 6 to create"; got != want {
		t.Errorf("SummaryLine = %q, want %q", got, want)
	}

	// The JSON plan carries the units; read back, it renders the same.
	var js bytes.Buffer
	if err := planner.RenderJSON(&js, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"units": [`) || !strings.Contains(js.String(), `"reason": "BuildFailed"`) {
		t.Errorf("JSON plan lacks its units:\n%s", js.String()[max(0, js.Len()-1500):])
	}
	back, err := planner.ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if t2, m2 := renderBoth(t, back); t2 != text || m2 != md {
		t.Error("the plan read back from JSON renders otherwise")
	}
}

// A partial plan with no change still says it is partial (the failed
// unit's objects are planned as last applied: no change), in both forms.
func TestRenderPartialPlanWithoutChanges(t *testing.T) {
	p := &planner.Plan{Revision: "0123456789abcdef0123456789abcdef01234567+sha256:abcd", Units: partialUnits()[1:2]}
	p.Units[0].LastAppliedRevision = "fedcba9876543210fedcba9876543210fedcba98+sha256:0011"
	text, md := renderBoth(t, p)
	want := `gitaso plan for revision 0123456789ab+sha256:abcd

Partial: 1 of 1 unit failed; their objects are kept as last applied
  Kustomization/team-b/apps (BuildFailed): last applied fedcba987654+sha256:0011, 2 objects kept
      teams/b/kustomization.yaml:7: patches[0]: no object matches the patch's target
      teams/b/vars.yaml:3: ${` + "`DB_SKU`" + `} is not set (strict substitution)

No changes. Azure matches the manifests (0 resources).
Partial: the units that failed keep their objects as last applied until they render again.
`
	if text != want {
		t.Errorf("text plan:\n%s\nwant:\n%s", text, want)
	}
	if !strings.Contains(md, "> **Partial: 1 of 1 unit failed; their objects are kept as last applied.**") || !strings.Contains(md, "No changes.") {
		t.Errorf("markdown plan:\n%s", md)
	}
	if got := planner.SummaryLine(p); got != "partial (1 of 1 unit failed): no changes" {
		t.Errorf("SummaryLine = %q", got)
	}
}

// Units that all applied add only the count of the ignored releases; no
// units at all add nothing (the plans of a repository without Flux objects
// are as before).
func TestRenderPlanUnitsHealthy(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	before, beforeMD := renderBoth(t, p)
	var healthy []record.Unit
	for _, u := range partialUnits() {
		if !u.Failing() {
			healthy = append(healthy, u)
		}
	}
	p.Units = healthy
	text, md := renderBoth(t, p)
	if strings.Contains(text, "Partial") || strings.Contains(md, "Partial") || strings.Contains(planner.SummaryLine(p), "partial") {
		t.Errorf("a plan whose units all applied says partial:\n%s", text)
	}
	head := "gitaso plan for revision 0123456789ab\n"
	if want := head + "  1 release renders no ASO object\n" + strings.TrimPrefix(before, head); text != want {
		t.Errorf("text plan:\n%s\nwant:\n%s", text, want)
	}
	if !strings.Contains(md, "\n1 release renders no ASO object.\n") {
		t.Errorf("markdown plan does not count the ignored release:\n%s", md)
	}
	for i := range 3 {
		p.Units = append(p.Units, record.Unit{Kind: "HelmRelease", Namespace: "infra", Name: fmt.Sprint("r", i), Ignored: true})
	}
	if text, _ := renderBoth(t, p); !strings.Contains(text, "\n  4 releases render no ASO object\n") {
		t.Errorf("four ignored releases:\n%s", text)
	}
	p.Units = nil
	if text, md := renderBoth(t, p); text != before || md != beforeMD {
		t.Error("a plan without units renders otherwise than before")
	}
}

// A unit with many errors lists the first 20 and counts the others.
func TestRenderPartialPlanManyErrors(t *testing.T) {
	u := partialUnits()[1]
	u.Errors = nil
	for i := range 25 {
		u.Errors = append(u.Errors, fmt.Sprintf("teams/b/f%d.yaml:1: bad", i))
	}
	p := &planner.Plan{Revision: "dir-abc", Units: []record.Unit{u}}
	text, _ := renderBoth(t, p)
	if !strings.Contains(text, "teams/b/f19.yaml:1: bad\n      ... and 5 more errors\n") || strings.Contains(text, "f20.yaml") {
		t.Errorf("text plan:\n%s", text)
	}
}
