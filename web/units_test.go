package web_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

const (
	unitFailed  = "Kustomization/platform/team-a"
	unitWaiting = "HelmRelease/db/postgres"
	lastApplied = "0123456789abcdef0123456789abcdef01234567"
)

// fixtureUnits are the units of the fixture's revision: team-a's
// Kustomization failed to build (its identity and storage account are kept
// as last applied), the database's HelmRelease waits for it, the platform's
// Kustomization applied, and cert-manager's release renders no ASO object.
func fixtureUnits(now time.Time) []record.Unit {
	return []record.Unit{
		{Kind: "Kustomization", Namespace: "platform", Name: "team-a", File: "clusters/prod/team-a.yaml", Line: 1,
			Ready: record.Condition{Type: "Ready", Status: "False", Reason: "BuildFailed", Message: "kustomize build of teams/a failed",
				LastTransitionTime: now.Add(-time.Minute)},
			LastAppliedRevision: lastApplied, LastAttemptedRevision: "fedcba9876543210fedcba9876543210fedcba98",
			Errors: []string{
				"teams/a/kustomization.yaml:7: patches[0]: no object matches the patch's target",
				"teams/a/vars.yaml:3: ${SKU}: variable not set (strict substitution)",
			},
			Objects:   []string{keyIdentity, keyStorage},
			AppliedAt: now.Add(-10 * time.Minute), UpdatedAt: now.Add(-time.Minute)},
		{Kind: "HelmRelease", Namespace: "db", Name: "postgres", DependsOn: []string{unitFailed},
			Ready: record.Condition{Type: "Ready", Status: "False", Reason: "DependencyNotReady",
				Message: "dependency 'Kustomization/platform/team-a' is not ready"}},
		{Kind: "Kustomization", Namespace: "flux-system", Name: "platform",
			Ready:               record.Condition{Type: "Ready", Status: "True", Reason: "ReconciliationSucceeded"},
			LastAppliedRevision: "fedcba9876543210fedcba9876543210fedcba98", AppliedAt: now.Add(-time.Minute)},
		{Kind: "HelmRelease", Namespace: "cert-manager", Name: "cert-manager", Ignored: true,
			Ready: record.Condition{Type: "Ready", Status: "True", Reason: "ReconciliationSucceeded"}},
	}
}

// addUnits stores the units in state, gives the failed unit's resources
// their unit, and stores the plan with the units (partial).
func (f *fixture) addUnits(t testing.TB) []record.Unit {
	t.Helper()
	units := fixtureUnits(time.Now().UTC().Truncate(time.Second))
	var rs []record.Resource
	for _, key := range units[0].Objects {
		r, ok, err := f.db.Resource(key)
		if err != nil || !ok {
			t.Fatalf("resource %s: %v %v", key, ok, err)
		}
		r.Unit = unitFailed
		rs = append(rs, r)
	}
	f.plan.Units = units
	planJSON, err := json.Marshal(f.plan)
	if err != nil {
		t.Fatal(err)
	}
	err = f.db.Update(func(w *state.Writer) error {
		for _, u := range units {
			if err := w.PutUnit(u); err != nil {
				return err
			}
		}
		for _, r := range rs {
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		return w.SetPlan(planJSON)
	})
	if err != nil {
		t.Fatal(err)
	}
	return units
}

// The Units view lists every unit with its kind, namespace/name, Ready
// status, reason and message, last applied and attempted revisions, errors
// (file:line) and objects; a failed unit's row is red (row-false) and
// failed units come first. Every view shows the banner "2 of 4 units
// failed: the rest applied", naming the failed units.
func TestBrowserUnits(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	units := f.addUnits(t)
	dom := dumpDOM(t, f.srv.URL+"/#units")
	assertNoSecrets(t, "units view", dom, f.secrets(t))

	body := element(t, dom, "tbody", `id="units-body"`)
	rows := regexp.MustCompile(`(?s)<tr [^>]*>.*?</tr>`).FindAllString(body, -1)
	if len(rows) != len(units) {
		t.Fatalf("%d unit rows, want %d:\n%s", len(rows), len(units), body)
	}
	// Failed units first, each kind of row by ID.
	var order []string
	for _, r := range rows {
		order = append(order, regexp.MustCompile(`data-unit="([^"]*)"`).FindStringSubmatch(r)[1])
	}
	if want := []string{unitWaiting, unitFailed, "HelmRelease/cert-manager/cert-manager", "Kustomization/flux-system/platform"}; strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("rows in order %v, want %v", order, want)
	}
	failed := rows[1]
	if !strings.Contains(failed, `class="row-false"`) {
		t.Errorf("the failed unit's row is not red:\n%s", failed)
	}
	ft := text(failed)
	for _, want := range []string{"Kustomization", "platform/team-a", "Not ready", "BuildFailed", "kustomize build of teams/a failed",
		lastApplied[:12], "fedcba987654",
		"teams/a/kustomization.yaml:7: patches[0]: no object matches the patch's target",
		"teams/a/vars.yaml:3: ${SKU}: variable not set (strict substitution)"} {
		if !strings.Contains(ft, want) {
			t.Errorf("the failed unit's row lacks %q:\n%s", want, ft)
		}
	}
	if !strings.Contains(failed, `<td class="objects">2</td>`) {
		t.Errorf("the failed unit's row does not count its 2 objects:\n%s", failed)
	}
	if !strings.Contains(text(rows[0]), "DependencyNotReady") || !strings.Contains(rows[0], `class="row-false"`) || strings.Contains(rows[0], "unit-errors") {
		t.Errorf("the waiting unit's row (its message once, no errors):\n%s", rows[0])
	}
	for _, r := range rows[2:] {
		if !strings.Contains(r, `class="row-true"`) || strings.Contains(r, "unit-errors") {
			t.Errorf("a healthy unit's row:\n%s", r)
		}
	}
	if !strings.Contains(text(rows[2]), "renders no ASO object") {
		t.Errorf("the ignored release does not say so:\n%s", text(rows[2]))
	}
	if link := `href="#unit/Kustomization/platform/team-a"`; !strings.Contains(failed, link) {
		t.Errorf("the failed unit's row has no %s", link)
	}

	// The banner, on this view and on the others.
	for _, view := range []string{"#units", "#resources", "#plan"} {
		d := dom
		if view != "#units" {
			d = dumpDOM(t, f.srv.URL+"/"+view)
		}
		banner := element(t, d, "section", `id="units-banner"`)
		bt := text(banner)
		if strings.Contains(banner, " hidden") || !strings.Contains(bt, "2 of 4 units failed: the rest applied") ||
			!strings.Contains(bt, unitFailed) || !strings.Contains(bt, unitWaiting) || !strings.Contains(bt, "last applied "+lastApplied[:12]) {
			t.Errorf("%s: the units banner is %q", view, bt)
		}
		if tab := text(element(t, d, "a", `id="tab-units"`)); !strings.Contains(tab, "2 failed") {
			t.Errorf("%s: the Units tab reads %q", view, tab)
		}
	}
}

// A unit's page shows its condition, errors and the resources it rendered,
// each linking to its resource page.
func TestBrowserUnitDetail(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	f.addUnits(t)
	dom := dumpDOM(t, f.srv.URL+"/#unit/Kustomization/platform/team-a")
	assertNoSecrets(t, "unit page", dom, f.secrets(t))
	page := text(between(t, dom, `id="view-unit"`, `id="view-run"`))
	for _, want := range []string{"Kustomization platform/team-a", "BuildFailed", "kept exactly as last applied",
		"teams/a/kustomization.yaml:7: patches[0]", "clusters/prod/team-a.yaml:1", lastApplied, "Resources (2)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the unit page lacks %q:\n%s", want, page)
		}
	}
	res := element(t, dom, "table", `id="unit-resources"`)
	for _, k := range []string{keyIdentity, keyStorage} {
		if !strings.Contains(res, `href="#resource/`+k+`"`) {
			t.Errorf("the unit's resources do not link %s:\n%s", k, text(res))
		}
	}
	if n := strings.Count(res, "<tr "); n != 2 {
		t.Errorf("%d resource rows, want 2", n)
	}
	dom = dumpDOM(t, f.srv.URL+"/#unit/HelmRelease/db/postgres")
	page = text(between(t, dom, `id="view-unit"`, `id="view-run"`))
	if !strings.Contains(page, "DependencyNotReady") || !strings.Contains(page, unitFailed) || !strings.Contains(page, "no resource of this unit") {
		t.Errorf("the waiting unit's page:\n%s", page)
	}
	dom = dumpDOM(t, f.srv.URL+"/#unit/Kustomization/platform/nope")
	if page := text(between(t, dom, `id="view-unit"`, `id="view-run"`)); !strings.Contains(page, "unit Kustomization/platform/nope not found") {
		t.Errorf("an unknown unit's page:\n%s", page)
	}
}

// Clicking a unit in the list opens its page with its resources; the failed
// row is painted red.
func TestBrowserUnitsClick(t *testing.T) {
	wd := newWebDriver(t)
	f := newFixture(t)
	f.addUnits(t)
	wd.open(f.srv.URL + "/#units")
	wd.waitFor("the unit rows", `return document.querySelectorAll('#units-body tr').length === 4`)
	bg := wd.str(`return getComputedStyle(document.querySelector('#units-body tr.row-false')).backgroundColor`)
	ok := wd.str(`return getComputedStyle(document.querySelector('#units-body tr.row-true')).backgroundColor`)
	if bg == ok || bg == "rgba(0, 0, 0, 0)" {
		t.Errorf("a failed unit's row is not coloured: %s (a healthy one: %s)", bg, ok)
	}
	if dir := os.Getenv("GITASO_WEB_SCREENSHOTS"); dir != "" {
		wd.screenshot(filepath.Join(dir, "units.png"))
	}
	wd.click(`#units-body a[href="#unit/Kustomization/platform/team-a"]`)
	wd.waitFor("the unit's resources", `return document.querySelectorAll('#unit-resources tbody tr').length === 2`)
	if h := wd.str(`return document.getElementById('h-unit').textContent`); h != "Kustomization platform/team-a" {
		t.Errorf("heading %q", h)
	}
	if cur := wd.str(`return document.querySelector('nav.tabs a[aria-current="page"]').id`); cur != "tab-units" {
		t.Errorf("current tab %q, want tab-units", cur)
	}
	wd.click(`#unit-resources a[data-key="` + keyStorage + `"]`)
	wd.waitFor("the storage account's page", `return !document.getElementById('view-detail').hidden && document.getElementById('h-detail').textContent.includes('teamastorage')`)
}

// Without units (a repository without Flux objects) there is no banner, the
// tab has no count and the view says why it is empty.
func TestBrowserNoUnits(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	dom := dumpDOM(t, f.srv.URL+"/#units")
	if banner := element(t, dom, "section", `id="units-banner"`); !strings.Contains(banner, " hidden") {
		t.Errorf("a banner without units: %s", text(banner))
	}
	if tab := text(element(t, dom, "a", `id="tab-units"`)); strings.TrimSpace(tab) != "Units" {
		t.Errorf("the Units tab reads %q", tab)
	}
	if empty := element(t, dom, "p", `id="units-empty"`); strings.Contains(empty, " hidden") || !strings.Contains(text(empty), "No units") {
		t.Errorf("the empty units view: %s", empty)
	}
}

// The page's plan of a partial revision (units failed, a release ignored,
// a chart from outside the repository, an object known after apply) is the
// CLI's, line for line.
func TestBrowserPartialPlanMatchesCLI(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	f.addUnits(t)
	f.plan.External = []manifest.External{
		{Kind: "HelmChart", User: "db/postgres", Name: "pg", Version: "1.2.3", Digest: "sha256:abcd"},
		{Kind: "ExportedConfigMap", User: "platform/vars"},
		{Kind: "PendingConfigMap", User: "platform/later"},
	}
	f.plan.Deferred = []*planner.Deferred{{Namespace: "platform", Group: "storage.azure.com", Kind: "StorageAccount", Name: "later",
		File: "teams/a/later.yaml", Line: 4, Reason: "${ID} from config map platform/later"}}
	f.plan.Units[0].Errors = append(f.plan.Units[0].Errors, "teams/a/x.yaml:9: a message\nover two lines")
	f.plan.Revision = "fedcba9876543210fedcba9876543210fedcba98+sha256:0011"
	planJSON, err := json.Marshal(f.plan)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.Update(func(w *state.Writer) error { return w.SetPlan(planJSON) }); err != nil {
		t.Fatal(err)
	}
	got := text(element(t, dumpDOM(t, f.srv.URL+"/#plan"), "pre", `id="plan-text"`))
	want := f.planText(t, false)
	if !strings.Contains(want, "Partial: 2 of 4 units failed") || !strings.Contains(want, "1 release renders no ASO object") {
		t.Fatalf("the CLI's plan is not partial:\n%s", want)
	}
	if got != want {
		t.Errorf("page plan differs from the CLI's text plan\n--- page\n%s\n--- cli\n%s", got, want)
	}
	// And without units at all, as before.
	f.plan.Units = nil
	var buf bytes.Buffer
	if err := planner.RenderText(&buf, f.plan, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "Partial") {
		t.Error("a plan without units says partial")
	}
}
