package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// eventually polls cond (state outside the browser) for up to 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBrowserSyncAsksForToken clicks "Sync now" against an API that requires
// a token: the page asks for it, a wrong one is rejected and asked again, the
// right one triggers exactly one sync, and the token is remembered in memory
// only (not in the URL, cookies, web storage or the DOM).
func TestBrowserSyncAsksForToken(t *testing.T) {
	wd := newWebDriver(t)
	f := newFixture(t)
	wd.open(f.srv.URL + "/#resources")
	wd.waitFor("the resource rows", `return document.querySelectorAll('#resources-body tr').length > 0`)

	wd.click("#sync")
	wd.waitFor("the token dialog", `return document.getElementById('token-dialog').open`)
	if got := wd.str(`return document.activeElement.id`); got != "token-input" {
		t.Errorf("focus is on %q, want the token input", got)
	}
	if n := f.syncCount(); n != 0 {
		t.Fatalf("%d syncs without a token", n)
	}
	if dir := os.Getenv("GITASO_WEB_SCREENSHOTS"); dir != "" {
		wd.screenshot(filepath.Join(dir, "token-dialog.png"))
	}

	wd.typeInto("#token-input", "wrong-token")
	wd.click(`#token-form button[type="submit"]`)
	wd.waitFor("the rejection", `return document.getElementById('token-dialog').open && document.getElementById('token-why').textContent.includes('rejected')`)
	if n := f.syncCount(); n != 0 {
		t.Fatalf("a wrong token triggered %d syncs", n)
	}

	wd.typeInto("#token-input", apiToken)
	wd.click(`#token-form button[type="submit"]`)
	wd.waitFor("the sync confirmation", `return document.getElementById('status').textContent.includes('Sync triggered')`)
	if n := f.syncCount(); n != 1 {
		t.Fatalf("%d syncs after the right token, want 1", n)
	}
	if wd.str(`return String(document.getElementById('token-dialog').open)`) != "false" {
		t.Error("token dialog still open")
	}

	// The token stays in memory: a second click syncs without asking.
	wd.click("#sync")
	wd.waitFor("the second sync", `return document.getElementById('sync').disabled === false`)
	eventually(t, "a second sync", func() bool { return f.syncCount() == 2 })
	if wd.str(`return String(document.getElementById('token-dialog').open)`) != "false" {
		t.Error("the page asked for the token again")
	}

	leaks := wd.str(`
		const parts = [location.href, document.cookie, document.documentElement.outerHTML, document.title];
		for (const s of [localStorage, sessionStorage]) for (let i = 0; i < s.length; i++) parts.push(s.key(i), s.getItem(s.key(i)));
		return parts.join('\n');`)
	for _, s := range []string{apiToken, "wrong-token"} {
		if strings.Contains(leaks, s) {
			t.Errorf("token %q found in the URL, cookies, storage or DOM", s)
		}
	}
	for _, r := range f.seen() {
		if strings.Contains(r, apiToken) {
			t.Errorf("token sent in a URL: %s", r)
		}
	}
}

// TestBrowserFiltersAndPlanOptions uses the filter form and the plan's
// "show unchanged" switch like a user would.
func TestBrowserFiltersAndPlanOptions(t *testing.T) {
	wd := newWebDriver(t)
	f := newFixture(t)
	wd.open(f.srv.URL + "/")
	wd.waitFor("the resource rows", `return document.querySelectorAll('#resources-body tr').length === 7`)

	// Readiness: choosing "False" refetches with ?ready=false.
	wd.exec(nil, `const s = document.getElementById('f-ready'); s.value = 'false'; s.dispatchEvent(new Event('change'));`)
	wd.waitFor("the not-ready rows", `return document.querySelectorAll('#resources-body tr').length === 2`)
	if got := wd.str(`return [...document.querySelectorAll('#resources-body tr')].map(r => r.dataset.key).join(',')`); got != keyPG+","+keyStorage {
		t.Errorf("not-ready rows %q", got)
	}
	if !containsAny(f.seen(), "GET /api/v1/resources?ready=false&limit=500") {
		t.Errorf("no ?ready=false request; saw %v", f.seen())
	}
	if got := wd.str(`return location.hash`); got != "#resources?ready=false" {
		t.Errorf("hash %q", got)
	}

	// Kind (typed, submitted with Enter) narrows further on the server.
	wd.typeInto("#f-kind", "storageaccount\uE007")
	wd.waitFor("one storage row", `return document.querySelectorAll('#resources-body tr').length === 1`)
	if !containsAny(f.seen(), "GET /api/v1/resources?kind=storageaccount&ready=false&limit=500") {
		t.Errorf("no kind filter request; saw %v", f.seen())
	}

	// Clear, then the name filter (server-side, once typing pauses).
	wd.click("#f-clear")
	wd.waitFor("all rows again", `return document.querySelectorAll('#resources-body tr').length === 7`)
	wd.typeInto("#f-name", "storage")
	wd.waitFor("the two storage rows", `return document.querySelectorAll('#resources-body tr').length === 2`)
	if got := wd.str(`return location.hash`); got != "#resources?name=storage" {
		t.Errorf("hash %q after the name filter", got)
	}

	// Open a resource from the table; the detail takes focus.
	wd.click(`#resources-body a[data-key="platform/storage.azure.com/StorageAccount/teamastorage"]`)
	wd.waitFor("the detail", `return document.getElementById('detail-body').textContent.includes('AuthorizationFailed')`)
	if got := wd.str(`return document.activeElement.id`); got != "h-detail" {
		t.Errorf("focus on %q after opening the detail, want the heading", got)
	}

	// The plan, with and without unchanged resources.
	wd.click("#tab-plan")
	wd.waitFor("the plan", `return document.getElementById('plan-text').textContent.includes('Plan:')`)
	if got, want := wd.str(`return document.getElementById('plan-text').textContent`), f.planText(t, false); got != want {
		t.Errorf("plan text\n--- page\n%s\n--- cli\n%s", got, want)
	}
	wd.click("#plan-unchanged")
	wd.waitFor("unchanged resources", `return document.getElementById('plan-text').textContent.includes('is up to date')`)
	if got, want := wd.str(`return document.getElementById('plan-text').textContent`), f.planText(t, true); got != want {
		t.Errorf("plan text with unchanged\n--- page\n%s\n--- cli\n%s", got, want)
	}
	if dir := os.Getenv("GITASO_WEB_SCREENSHOTS"); dir != "" {
		wd.screenshot(filepath.Join(dir, "plan-unchanged.png"))
	}
	assertNoSecrets(t, "page after interaction", wd.str(`return document.documentElement.outerHTML`), f.secrets(t))
}

// TestBrowserAutoRefresh changes the state behind an open page and waits for
// the page to show it without a reload.
func TestBrowserAutoRefresh(t *testing.T) {
	wd := newWebDriver(t)
	f := newFixture(t)
	wd.open(f.srv.URL + "/#resources")
	sel := `#resources-body tr[data-key="` + keyStorage + `"]`
	wd.waitFor("the failing row", `return document.querySelector(arguments[0])?.className === 'row-false'`, sel)
	wd.exec(nil, `window.__marker = 1`) // gone if the page reloads
	err := f.db.Update(func(w *state.Writer) error {
		_, err := w.SetReady(keyStorage, record.Condition{Type: "Ready", Status: "True", Reason: "Succeeded", ObservedGeneration: 2}, time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	wd.waitFor("the row to turn ready", `return document.querySelector(arguments[0])?.className === 'row-true'`, sel)
	if got := wd.str(`return String(window.__marker)`); got != "1" {
		t.Error("the page reloaded instead of refreshing its data")
	}
	if got := wd.str(`return document.querySelector(arguments[0]).textContent`, sel); strings.Contains(got, "AuthorizationFailed") {
		t.Errorf("refreshed row still shows the old failure: %s", got)
	}
}
