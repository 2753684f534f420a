package web_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

const heldRevision = "c0ffee0123456789c0ffee0123456789c0ffee01"

// heldKeys are the 14 deletions of the held revision.
func heldKeys() []string {
	var ks []string
	for i := range 14 {
		ks = append(ks, fmt.Sprintf("team-b/storage.azure.com/StorageAccount/acct%02d", i))
	}
	return ks
}

var heldUnmanaged = []string{
	"/subscriptions/" + subscription + "/resourceGroups/team-b-rg/providers/Microsoft.Web/sites/hand-made-app",
	"/subscriptions/" + subscription + "/resourceGroups/team-b-rg/providers/Microsoft.Sql/servers/legacy-sql",
}

func heldHold() *record.Hold {
	return &record.Hold{
		Reason:    record.HoldMassDeletion,
		Message:   "revision c0ffee012345 would delete 14 of 20 managed resources (70 %), more than the deletion guard allows (--max-deletion-fraction 0.5)",
		Deletions: 14, Managed: 20, Keys: heldKeys(), Unmanaged: heldUnmanaged,
	}
}

// addHeldRun records a newer run of heldRevision that the deletion guard held.
func (f *fixture) addHeldRun(t testing.TB) {
	t.Helper()
	now := time.Now().UTC()
	err := f.db.Update(func(w *state.Writer) error {
		return w.PutRun(&record.Run{Revision: heldRevision, Trigger: "interval", StartedAt: now.Add(-5 * time.Second), FinishedAt: now.Add(-4 * time.Second),
			Outcome: record.OutcomeHeld, Counts: map[string]int{"delete": 14, "no-op": 6}, Held: heldHold(),
			Summary: "held: 14 deletions wait for an approval"})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBrowserHeldBanner: when the newest run is held the page says which
// revision, why, how many deletions of how many managed resources, the
// first keys, the unmanaged resources the cascade would take, and offers
// the approval; without a held run there is no banner.
func TestBrowserHeldBanner(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	if banner := element(t, dumpDOM(t, f.srv.URL+"/"), "section", `id="held"`); !strings.Contains(banner, "hidden") || text(banner) != "" {
		t.Errorf("a banner without a held run: %s", banner)
	}

	f.addHeldRun(t)
	dom := dumpDOM(t, f.srv.URL+"/#resources")
	banner := element(t, dom, "section", `id="held"`)
	if strings.Contains(banner[:strings.Index(banner, ">")], "hidden") {
		t.Fatalf("held banner hidden: %s", banner)
	}
	b := text(banner)
	keys := heldKeys()
	for _, want := range slices.Concat([]string{
		"Revision c0ffee012345 is held", record.HoldMassDeletion, heldHold().Message,
		"14 deletions of 20 managed resources", "and 4 more", "Approve deletions",
		"resources gitaso does not manage",
	}, keys[:10], heldUnmanaged) {
		if !strings.Contains(b, want) {
			t.Errorf("banner lacks %q:\n%s", want, b)
		}
	}
	for _, k := range keys[10:] {
		if strings.Contains(b, k) {
			t.Errorf("banner lists %s beyond the first 10 keys", k)
		}
	}
	if !strings.Contains(banner, `title="`+heldRevision+`"`) {
		t.Error("banner does not carry the full revision")
	}
	assertNoSecrets(t, "held banner", dom, f.secrets(t))

	if dir := os.Getenv("GITASO_WEB_SCREENSHOTS"); dir != "" {
		runChromium(t, f.srv.URL+"/#runs", "--virtual-time-budget=4000", "--hide-scrollbars", "--window-size=1400,1000",
			"--screenshot="+filepath.Join(dir, "held-runs.png"))
	}
	// The runs view shows the held run and why.
	runs := text(element(t, dumpDOM(t, f.srv.URL+"/#runs"), "tbody", `id="runs-body"`))
	for _, want := range []string{"c0ffee012345", "held", "Held (MassDeletion): 14 deletions of 20 managed resources wait for an approval.", "14 delete, 6 no-op"} {
		if !strings.Contains(runs, want) {
			t.Errorf("runs view lacks %q:\n%s", want, runs)
		}
	}
}

// TestBrowserApproveDeletions clicks "Approve deletions": the page confirms,
// asks for the token (the API requires one), posts the full revision, and
// reports a refusal (409) in words.
func TestBrowserApproveDeletions(t *testing.T) {
	wd := newWebDriver(t)
	f := newFixture(t)
	f.addHeldRun(t)
	wd.open(f.srv.URL + "/#resources")
	wd.waitFor("the held banner", `return !document.getElementById('held').hidden && !!document.getElementById('approve')`)
	if dir := os.Getenv("GITASO_WEB_SCREENSHOTS"); dir != "" {
		wd.screenshot(filepath.Join(dir, "held-banner.png"))
	}

	// Cancelling the confirmation approves nothing.
	wd.click("#approve")
	wd.waitFor("the confirmation", `return document.getElementById('approve-dialog').open`)
	if got := wd.str(`return document.getElementById('approve-what').textContent`); !strings.Contains(got, "Delete 14 resources of revision c0ffee012345") ||
		!strings.Contains(got, "2 resources gitaso does not manage") {
		t.Errorf("confirmation text %q", got)
	}
	wd.click("#approve-cancel")
	wd.waitFor("the dialog to close", `return !document.getElementById('approve-dialog').open`)
	if n := len(f.approved()); n != 0 {
		t.Fatalf("cancel approved %d", n)
	}

	wd.click("#approve")
	wd.waitFor("the confirmation", `return document.getElementById('approve-dialog').open`)
	wd.click("#approve-confirm")
	wd.waitFor("the token dialog", `return document.getElementById('token-dialog').open`)
	if got := wd.str(`return document.getElementById('token-why').textContent`); !strings.Contains(got, "approve deletions") {
		t.Errorf("token dialog says %q", got)
	}
	if n := len(f.approved()); n != 0 {
		t.Fatalf("approved without a token: %d", n)
	}
	wd.typeInto("#token-input", apiToken)
	wd.click(`#token-form button[type="submit"]`)
	wd.waitFor("the approval", `return document.getElementById('status').textContent.includes('approved')`)
	if got := f.approved(); len(got) != 1 || got[0] != heldRevision {
		t.Fatalf("Approve called with %q, want [%s]", got, heldRevision)
	}
	if !containsAny(f.seen(), "POST /api/v1/approve") {
		t.Errorf("no POST /api/v1/approve; saw %v", f.seen())
	}

	// A refusal (nothing held any more) is reported; the token is reused.
	f.mu.Lock()
	f.approveErr = errors.New("no deletions of that revision are held: " + heldRevision)
	f.mu.Unlock()
	wd.waitFor("the button again", `return document.getElementById('approve') && !document.getElementById('approve').disabled`)
	wd.click("#approve")
	wd.waitFor("the confirmation", `return document.getElementById('approve-dialog').open`)
	wd.click("#approve-confirm")
	wd.waitFor("the refusal", `return document.getElementById('status').textContent.includes('Not approved: no deletions of that revision are held')`)
	if wd.str(`return String(document.getElementById('token-dialog').open)`) != "false" {
		t.Error("the page asked for the token again")
	}
	assertNoSecrets(t, "page after approving", wd.str(`return document.documentElement.outerHTML + location.href`), f.secrets(t))
}

// heldPlan is a held plan with a move: the page renders it line for line
// as planner.RenderText.
func heldPlan(t *testing.T) []byte {
	t.Helper()
	h := heldHold()
	for i := range 21 { // more than RenderText lists
		h.Unmanaged = append(h.Unmanaged, fmt.Sprintf("/subscriptions/s/resourceGroups/team-b-rg/providers/Microsoft.Web/sites/app%02d", i))
	}
	plan := map[string]any{
		"revision": heldRevision,
		"held":     h,
		"resources": []any{
			map[string]any{"namespace": "team-c", "group": "storage.azure.com", "version": "v1api20230101", "kind": "StorageAccount", "name": "moved",
				"action": "move", "movedFrom": "team-b/storage.azure.com/StorageAccount/moved", "armId": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/moved",
				"apiVersion": "2023-01-01", "policy": "manage", "file": "team-c/sa.yaml", "line": 3,
				"request": map[string]any{"method": "PUT", "path": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/moved?api-version=2023-01-01"},
				"changes": []any{map[string]any{"path": "/tags/team", "op": "replace", "before": "b", "after": "c"}}},
			map[string]any{"namespace": "team-c", "group": "storage.azure.com", "version": "v1api20230101", "kind": "StorageAccount", "name": "quiet-move",
				"action": "move", "movedFrom": "team-b/storage.azure.com/StorageAccount/quiet-move", "armId": "/x/quiet-move", "apiVersion": "2023-01-01", "policy": "manage",
				"request": map[string]any{"method": "PUT", "path": "/x/quiet-move?api-version=2023-01-01"}},
			map[string]any{"namespace": "team-b", "group": "storage.azure.com", "version": "v1api20230101", "kind": "StorageAccount", "name": "acct00",
				"action": "delete", "armId": "/x/acct00", "apiVersion": "2023-01-01", "policy": "manage",
				"request": map[string]any{"method": "DELETE", "path": "/x/acct00?api-version=2023-01-01"}},
			map[string]any{"namespace": "team-b", "group": "resources.azure.com", "version": "v1api20200601", "kind": "ResourceGroup", "name": "team-b-rg",
				"action": "no-op", "armId": "/subscriptions/s/resourceGroups/team-b-rg", "apiVersion": "2020-06-01", "policy": "manage"},
		},
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBrowserHeldPlanWithMovesMatchesCLI(t *testing.T) {
	chromiumPath(t)
	planJSON := heldPlan(t)
	p, err := planner.ReadJSON(bytes.NewReader(planJSON))
	if err != nil {
		t.Fatal(err)
	}
	db := openState(t)
	if err := db.Update(func(w *state.Writer) error { return w.SetPlan(planJSON) }); err != nil {
		t.Fatal(err)
	}
	srv := serveState(t, db)
	var want bytes.Buffer
	if err := planner.RenderText(&want, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"HELD (MassDeletion)", "movedFrom", "... and 3 more not managed by gitaso", "to move", "Held: "} {
		if !strings.Contains(want.String(), line) {
			t.Errorf("the CLI's plan lacks %q: the fixture no longer covers it\n%s", line, want.String())
		}
	}
	got := text(element(t, dumpDOM(t, srv.URL+"/#plan"), "pre", `id="plan-text"`))
	if got != want.String() {
		t.Errorf("page plan differs from the CLI's text plan\n--- page\n%s\n--- cli\n%s", got, want.String())
	}
}
