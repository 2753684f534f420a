package web_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/syncbuf"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
	"github.com/gitaso/gitaso/web"
)

// TestBrowserSignIn signs two people of different groups in through the
// emulator's Entra ID in a real Chromium (before, the page reads nothing and
// says to sign in): alice by choosing her on the
// sign-in form, the platform admin by typing his name. The page names
// each with their groups; "Sync now" works for a signed-in user (the page
// sends the session's CSRF token); sign-out returns to "Not signed in".
// A page of another site posting a form to the API, to sign-out or to
// sync, is refused and triggers nothing. The session cookie is HttpOnly
// (no script sees it) and never appears in the log.
func TestBrowserSignIn(t *testing.T) {
	wd := newWebDriver(t, "--ignore-certificate-errors") // the emulator's CA is not the browser's
	e, err := emulator.New(emulator.WithUsers(
		emulator.User{UserPrincipalName: "admin@gitaso.local", Groups: []string{"platform-admins"}},
		emulator.User{UserPrincipalName: "alice@gitaso.local", Groups: []string{"team-a"}},
	))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	app, err := e.AddSignInApplication("gitaso", base+"/auth/callback")
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// Resources of two namespaces, and the demo's policy: the platform
	// admins may do everything, team-a reads, syncs and approves in team-a.
	if err := db.Update(func(w *state.Writer) error {
		for _, r := range []record.Resource{
			{Namespace: "team-a", Group: "storage.azure.com", Kind: "StorageAccount", Name: "teamastorage"},
			{Namespace: "team-a", Group: "servicebus.azure.com", Kind: "Namespace", Name: "team-a-sb"},
			{Namespace: "platform", Group: "resources.azure.com", Kind: "ResourceGroup", Name: "rg-platform"},
		} {
			r.Ready = record.Condition{Type: "Ready", Status: "True"}
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	policyText, err := os.ReadFile("../examples/access/policy.csv")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := access.ParsePolicy("examples/access/policy.csv", policyText)
	if err != nil {
		t.Fatal(err)
	}
	var syncs atomic.Int64
	logs := &syncbuf.Buffer{}
	h := api.New(db, api.Options{
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Sync:   func(context.Context) error { syncs.Add(1); return nil },
		UI:     web.Handler(),
		Policy: func() *access.Policy { return pol },
		Audit:  api.NewAuditor(db, slog.New(slog.NewJSONHandler(logs, nil)), 0),
		SignIn: &api.SignIn{Issuer: e.SignInIssuer(), ClientID: app.ClientID, ClientSecret: app.Secret,
			RedirectURL: base + "/auth/callback", HTTPClient: e.HTTPClient(), SessionKey: []byte(strings.Repeat("k", 32))},
	})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	// Another site: localhost is not 127.0.0.1's site.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><form id="f" method="post" action="`+base+r.URL.Query().Get("to")+`">`+
			`<input name="csrf" value="guess"></form><script>document.getElementById('f').submit()</script>`)
	}))
	t.Cleanup(evil.Close)
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)

	whoText := `return document.getElementById('who-name').textContent`
	// The scripts that wait across a navigation (to the emulator and back)
	// find no element while another page is loaded.
	whoStarts := func(prefix string) string {
		return `const e = document.getElementById('who-name'); return !!e && e.textContent.startsWith('` + prefix + `')`
	}
	wd.open(base + "/#runs")
	wd.waitFor("the sign-in link", `return !document.getElementById('sign-in').hidden`)
	if got := wd.str(whoText); got != "Not signed in" {
		t.Errorf("before sign-in: %q", got)
	}
	// Reading needs a caller: the page says to sign in.
	wd.waitFor("the sign-in alert", `return document.getElementById('alert').textContent.includes('Sign in to see')`)
	// A sync before signing in points at the sign-in link.
	wd.click("#sync")
	wd.waitFor("the sign-in hint", `return document.getElementById('status').textContent.includes('Sign in to sync')`)

	wd.click("#sign-in")
	wd.waitFor("the emulator's sign-in form", `return !!document.querySelector('button[value="alice@gitaso.local"]')`)
	wd.click(`button[value="alice@gitaso.local"]`)
	wd.waitFor("alice signed in", whoStarts("Signed in as"))
	if got := wd.str(whoText); got != "Signed in as alice@gitaso.local (team-a)" {
		t.Errorf("alice: %q", got)
	}
	if got := wd.str(`return location.hash`); got != "#runs" {
		t.Errorf("back at %q, want the page she left (#runs)", got)
	}
	wd.waitFor("the runs read", `const a = document.getElementById('alert'); return !!a && a.hidden`)
	if c := wd.str(`return document.cookie`); c != "" {
		t.Errorf("a script sees cookies %q; the session cookie must be HttpOnly", c)
	}
	if dir := os.Getenv("GITASO_WEB_SCREENSHOTS"); dir != "" {
		wd.screenshot(filepath.Join(dir, "signed-in.png"))
	}
	wd.click("#sync")
	wd.waitFor("the sync confirmation", `return document.getElementById('status').textContent.includes('Sync triggered')`)
	if n := syncs.Load(); n != 1 {
		t.Fatalf("%d syncs after alice's click, want 1", n)
	}
	// The policy: alice sees team-a's resources only, and not the audit trail.
	rowKeys := `return Array.from(document.querySelectorAll('#resources-body tr[data-key]')).map(r => r.dataset.key).sort().join(' ')`
	wd.open(base + "/#resources")
	wd.waitFor("alice's resources", `return document.querySelectorAll('#resources-body tr[data-key]').length > 0`)
	if got := wd.str(rowKeys); !strings.HasPrefix(got, "team-a/") || strings.Contains(got, "platform/") || strings.Count(got, "team-a/") != 2 {
		t.Errorf("alice sees %q, want team-a's two resources only", got)
	}
	wd.open(base + "/#audit")
	wd.waitFor("alice's audit refusal", `const e = document.getElementById('audit-refused'); return !!e && e.textContent.includes('lacks the right admin')`)

	// Another site's form posts, with alice's cookie in the browser.
	for _, to := range []string{"/api/v1/sync", "/auth/logout"} {
		wd.open(evilURL + "/?to=" + to)
		// Refused as cross-site, or (the SameSite cookie not sent) as anonymous.
		wd.waitFor("the refusal of "+to, `return location.href.startsWith('`+base+`') && !!document.body && /refused|sign in/.test(document.body.innerText)`)
	}
	if n := syncs.Load(); n != 1 {
		t.Errorf("%d syncs after another site's posts, want 1", n)
	}
	wd.open(base + "/")
	wd.waitFor("alice still signed in", whoStarts("Signed in as alice"))

	wd.click(`#sign-out button`)
	wd.waitFor("signed out", `const e = document.getElementById('who-name'); return !!e && e.textContent === 'Not signed in'`)

	// The platform admin types his name.
	wd.click("#sign-in")
	wd.waitFor("the emulator's sign-in form", `return !!document.getElementById('login')`)
	wd.typeInto("#login", "admin@gitaso.local")
	wd.click("#next")
	wd.waitFor("the admin signed in", whoStarts("Signed in as"))
	if got := wd.str(whoText); got != "Signed in as admin@gitaso.local (platform-admins)" {
		t.Errorf("admin: %q", got)
	}
	// The admin sees every namespace, and in the audit trail alice's sign-in
	// and her refused read of it.
	wd.open(base + "/#resources")
	wd.waitFor("the admin's resources", `return document.querySelectorAll('#resources-body tr[data-key]').length === 3`)
	if got := wd.str(rowKeys); !strings.Contains(got, "platform/") || strings.Count(got, "team-a/") != 2 {
		t.Errorf("the admin sees %q, want all three resources", got)
	}
	wd.open(base + "/#audit")
	wd.waitFor("the audit trail", `const b = document.getElementById('audit-body'); return !!b && b.textContent.includes('sign-in') && b.textContent.includes('alice@gitaso.local') && b.textContent.includes('refused')`)
	if strings.Contains(logs.String(), app.Secret) {
		t.Error("the log holds the client secret")
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "gitaso_session=") || strings.Contains(l, "code=") {
			t.Errorf("the log holds a cookie or a code: %s", l)
		}
	}
}
