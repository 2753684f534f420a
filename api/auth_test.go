package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/state"
)

// signInFixture is gitaso's API with sign-in against the emulator's Entra
// ID (a real OpenID Connect provider over HTTPS) and a tokens file.
type signInFixture struct {
	e          *emulator.Emulator
	srv        *httptest.Server
	logs       *syncBuffer
	syncs      atomic.Int64
	tokensFile string
	secrets    []string // what must never appear in a log or an answer
}

func newSignInFixture(t *testing.T) *signInFixture {
	t.Helper()
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
	f := &signInFixture{e: e, logs: &syncBuffer{}, tokensFile: filepath.Join(t.TempDir(), "tokens")}
	f.writeTokens(t, "ci", "grafana")
	log := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tokens, err := api.LoadTokens(f.tokensFile, log)
	if err != nil {
		t.Fatal(err)
	}
	opts := api.Options{
		Logger: log, Tokens: tokens, Token: "legacy-token-0123456789", Audit: api.NewAuditor(db, log, time.Hour),
		Sync: func(context.Context) error { f.syncs.Add(1); return nil },
		SignIn: &api.SignIn{Issuer: e.SignInIssuer(), ClientID: app.ClientID, ClientSecret: app.Secret,
			RedirectURL: base + "/auth/callback", HTTPClient: e.HTTPClient(), SessionKey: []byte(strings.Repeat("k", 32))},
	}
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	f.secrets = append(f.secrets, app.Secret, "legacy-token-0123456789", tokenOf("ci"), tokenOf("grafana"))
	f.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: api.New(db, opts)}}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

// tokenOf is the test's token of a name.
func tokenOf(name string) string { return "gitaso_test-token-of-" + name + "-0123456789abcdef" }

// writeTokens writes the tokens file with the tokens of names (ci in group
// platform-admins), replacing it by a rename as editors and gitaso token do.
func (f *signInFixture) writeTokens(t *testing.T, names ...string) {
	t.Helper()
	var b strings.Builder
	for _, n := range names {
		e := api.TokenEntry{Name: n, Hash: api.HashToken(tokenOf(n))}
		if n == "ci" {
			e.Groups = []string{"platform-admins"}
		}
		b.WriteString(e.Line() + "\n")
	}
	tmp := f.tokensFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.tokensFile); err != nil {
		t.Fatal(err)
	}
}

// browser is an HTTP client with a cookie jar that trusts the emulator and
// follows no redirect by itself.
type browser struct {
	t *testing.T
	f *signInFixture
	c *http.Client
}

func (f *signInFixture) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: f.e.HTTPClient().Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{t: t, f: f, c: c}
}

func (b *browser) do(method, u string, header map[string]string, body string) (*http.Response, string) {
	b.t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

// startLogin is GET /auth/login: the authorization URL it redirects to.
func (b *browser) startLogin() *url.URL {
	b.t.Helper()
	resp, body := b.do(http.MethodGet, b.f.srv.URL+"/auth/login?return=/%23runs", nil, "")
	if resp.StatusCode != http.StatusFound {
		b.t.Fatalf("/auth/login: %d %s", resp.StatusCode, body)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		b.t.Fatal(err)
	}
	return u
}

// chooseUser posts the emulator's sign-in form for authURL and returns the
// callback URL it redirects to.
func (b *browser) chooseUser(authURL *url.URL, upn string) string {
	b.t.Helper()
	form := authURL.Query()
	form.Set("user", upn)
	post := *authURL
	post.RawQuery = ""
	resp, body := b.do(http.MethodPost, post.String(), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, form.Encode())
	if resp.StatusCode != http.StatusFound {
		b.t.Fatalf("sign-in form: %d %s", resp.StatusCode, body)
	}
	return resp.Header.Get("Location")
}

// signIn runs the whole sign-in of upn and returns the session cookie.
func (b *browser) signIn(upn string) *http.Cookie {
	b.t.Helper()
	cb := b.chooseUser(b.startLogin(), upn)
	resp, body := b.do(http.MethodGet, cb, nil, "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/#runs" {
		b.t.Fatalf("callback: %d %q %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "gitaso_session" {
			b.f.secrets = append(b.f.secrets, c.Value)
			return c
		}
	}
	b.t.Fatalf("callback set no session cookie: %v", resp.Header["Set-Cookie"])
	return nil
}

type whoami struct {
	Identity  access.Identity           `json:"identity"`
	SignIn    bool                      `json:"signIn"`
	CSRFToken string                    `json:"csrfToken"`
	Rights    map[string][]access.Right `json:"rights"`
}

func (b *browser) whoami(header map[string]string) whoami {
	b.t.Helper()
	resp, body := b.do(http.MethodGet, b.f.srv.URL+"/api/v1/whoami", header, "")
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("whoami: %d %s", resp.StatusCode, body)
	}
	b.f.assertNoSecrets(b.t, "whoami answer", body)
	var w whoami
	if err := json.Unmarshal([]byte(body), &w); err != nil {
		b.t.Fatal(err)
	}
	return w
}

func (f *signInFixture) assertNoSecrets(t *testing.T, what, s string) {
	t.Helper()
	for _, sec := range f.secrets {
		if sec != "" && strings.Contains(s, sec) {
			t.Errorf("%s holds a secret (%.6s...)", what, sec)
		}
	}
}

// TestSignInSession: alice signs in through the emulator's Entra ID; the
// session cookie is HttpOnly, SameSite=Lax, Path=/ (not Secure on http);
// whoami names her and her groups; a POST without the session's CSRF token
// is refused, with it accepted; sign-out ends the session. No log line and
// no answer holds a cookie, a token or the client secret.
func TestSignInSession(t *testing.T) {
	f := newSignInFixture(t)
	b := f.browser(t)
	if w := b.whoami(nil); w.Identity.Kind != access.Anonymous || !w.SignIn {
		t.Fatalf("before sign-in: %+v", w)
	}
	c := b.signIn("alice@gitaso.local")
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure {
		t.Errorf("session cookie: HttpOnly %v SameSite %v Path %q Secure %v; want HttpOnly, Lax, /, not Secure on http", c.HttpOnly, c.SameSite, c.Path, c.Secure)
	}
	w := b.whoami(nil)
	if w.Identity.Kind != access.User || w.Identity.Name != "alice@gitaso.local" || len(w.Identity.Groups) != 1 ||
		w.Identity.Groups[0] != "team-a" || w.Identity.Issuer != f.e.SignInIssuer() || w.CSRFToken == "" {
		t.Fatalf("signed in: %+v", w)
	}
	sync := func(header map[string]string) (int, string) {
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range header {
			h[k] = v
		}
		resp, body := b.do(http.MethodPost, f.srv.URL+"/api/v1/sync", h, "{}")
		f.assertNoSecrets(t, "sync answer", body)
		return resp.StatusCode, body
	}
	if code, body := sync(nil); code != http.StatusForbidden || !strings.Contains(body, `"csrf"`) {
		t.Errorf("POST without the CSRF token: %d %s, want 403 csrf", code, body)
	}
	if code, body := sync(map[string]string{api.CSRFHeader: "forged"}); code != http.StatusForbidden {
		t.Errorf("POST with a wrong CSRF token: %d %s, want 403", code, body)
	}
	if code, body := sync(map[string]string{api.CSRFHeader: w.CSRFToken}); code != http.StatusAccepted || f.syncs.Load() != 1 {
		t.Errorf("POST with the CSRF token: %d %s (syncs %d), want 202", code, body, f.syncs.Load())
	}
	// Sign-out needs the token too, then the cookie is gone.
	if resp, _ := b.do(http.MethodPost, f.srv.URL+"/auth/logout", nil, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out without the CSRF token: %d, want 403", resp.StatusCode)
	}
	if resp, _ := b.do(http.MethodPost, f.srv.URL+"/auth/logout", map[string]string{api.CSRFHeader: w.CSRFToken}, ""); resp.StatusCode != http.StatusNoContent {
		t.Errorf("sign-out: %d, want 204", resp.StatusCode)
	}
	if w := b.whoami(nil); w.Identity.Kind != access.Anonymous {
		t.Errorf("after sign-out: %+v", w)
	}
	if code, _ := sync(nil); code != http.StatusUnauthorized {
		t.Errorf("POST after sign-out: %d, want 401", code)
	}
	f.assertNoSecrets(t, "the log", f.logs.String())
	if !strings.Contains(f.logs.String(), `"signed in"`) || !strings.Contains(f.logs.String(), "alice@gitaso.local") {
		t.Errorf("the sign-in is not logged:\n%s", f.logs.String())
	}
	// Without a policy every caller has every right; whoami says so.
	if got := w.Rights["*"]; len(got) != len(access.Rights) {
		t.Errorf("whoami rights %v, want every right in *", w.Rights)
	}
	// The sign-in and the sign-out are in the audit trail (and its log events).
	for _, action := range []string{`"action":"sign-in"`, `"action":"sign-out"`} {
		if !strings.Contains(f.logs.String(), action) {
			t.Errorf("no audit event %s in the log:\n%s", action, f.logs.String())
		}
	}
}

// TestSignInRefusesForgedCallbacks: a callback is refused when its state is
// not the one this browser's sign-in started with, when the browser started
// none, when its code was issued for another sign-in (PKCE: the verifier of
// this browser does not match), when the ID token's nonce is another's, and
// when the identity provider answered an error. None signs anyone in.
func TestSignInRefusesForgedCallbacks(t *testing.T) {
	f := newSignInFixture(t)
	callback := func(b *browser, cb string) (int, string) {
		t.Helper()
		resp, body := b.do(http.MethodGet, cb, nil, "")
		for _, c := range resp.Cookies() {
			if c.Name == "gitaso_session" && c.Value != "" {
				t.Errorf("a refused callback set a session cookie")
			}
		}
		return resp.StatusCode, body
	}
	withQuery := func(u string, k, v string) string {
		p, _ := url.Parse(u)
		q := p.Query()
		q.Set(k, v)
		p.RawQuery = q.Encode()
		return p.String()
	}
	victim, attacker := f.browser(t), f.browser(t)

	// State: the victim's callback with another state.
	auth := victim.startLogin()
	if auth.Query().Get("code_challenge_method") != "S256" || auth.Query().Get("code_challenge") == "" || auth.Query().Get("nonce") == "" || auth.Query().Get("state") == "" {
		t.Fatalf("authorization request without PKCE S256, nonce or state: %s", auth)
	}
	cb := victim.chooseUser(auth, "alice@gitaso.local")
	if code, body := callback(victim, withQuery(cb, "state", "forged")); code != http.StatusBadRequest || !strings.Contains(body, "state") {
		t.Errorf("forged state: %d %s", code, body)
	}
	// No sign-in started in this browser (login CSRF: the attacker's own
	// code planted in the victim's browser).
	acb := attacker.chooseUser(attacker.startLogin(), "admin@gitaso.local")
	if code, body := callback(f.browser(t), acb); code != http.StatusBadRequest || !strings.Contains(body, "not started here") {
		t.Errorf("callback without a sign-in started: %d %s", code, body)
	}
	// PKCE: the victim's state with a code the attacker obtained for his
	// own sign-in (another verifier).
	vauth := victim.startLogin()
	acode := mustQuery(t, attacker.chooseUser(attacker.startLogin(), "admin@gitaso.local"), "code")
	forged := withQuery(withQuery(victim.f.srv.URL+"/auth/callback", "state", vauth.Query().Get("state")), "code", acode)
	if code, body := callback(victim, forged); code != http.StatusUnauthorized || !strings.Contains(body, "did not redeem the code") {
		t.Errorf("code of another sign-in: %d %s", code, body)
	}
	if !strings.Contains(f.logs.String(), "AADSTS501481") {
		t.Errorf("the PKCE refusal is not the issuer's (AADSTS501481):\n%s", f.logs.String())
	}
	// Nonce: the victim's own state and verifier, but the ID token carries
	// another nonce.
	vauth = victim.startLogin()
	q := vauth.Query()
	q.Set("nonce", "replayed-nonce")
	vauth.RawQuery = q.Encode()
	if code, body := callback(victim, victim.chooseUser(vauth, "alice@gitaso.local")); code != http.StatusUnauthorized || !strings.Contains(body, "nonce") {
		t.Errorf("another nonce: %d %s", code, body)
	}
	// The issuer's error.
	vauth = victim.startLogin()
	errCB := victim.f.srv.URL + "/auth/callback?error=access_denied&error_description=denied&state=" + url.QueryEscape(vauth.Query().Get("state"))
	if code, body := callback(victim, errCB); code != http.StatusUnauthorized || !strings.Contains(body, "access_denied") {
		t.Errorf("issuer error: %d %s", code, body)
	}
	if w := victim.whoami(nil); w.Identity.Kind != access.Anonymous {
		t.Errorf("after refused callbacks: %+v", w)
	}
	f.assertNoSecrets(t, "the log", f.logs.String())
	for _, code := range []string{acode, mustQuery(t, cb, "code")} {
		if strings.Contains(f.logs.String(), code) {
			t.Errorf("the log holds an authorization code")
		}
	}
}

func mustQuery(t *testing.T, u, k string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil || p.Query().Get(k) == "" {
		t.Fatalf("%s has no %s", u, k)
	}
	return p.Query().Get(k)
}

// TestCrossSiteFormPostRefused: a form another site posts to /api/v1/sync
// in a signed-in browser is refused, whatever the browser sends with it.
func TestCrossSiteFormPostRefused(t *testing.T) {
	f := newSignInFixture(t)
	b := f.browser(t)
	b.signIn("admin@gitaso.local")
	for _, h := range []map[string]string{
		{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		{"Content-Type": "application/x-www-form-urlencoded"},
		{"Content-Type": "text/plain"},
		{"Content-Type": "application/json"}, // had it got past CORS: no CSRF token
	} {
		resp, body := b.do(http.MethodPost, f.srv.URL+"/api/v1/sync", h, "a=b")
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("%v: %d %s, want 403 or 415", h, resp.StatusCode, body)
		}
	}
	if n := f.syncs.Load(); n != 0 {
		t.Errorf("%d syncs triggered by cross-site posts", n)
	}
}

// TestTokensRevokedWithoutRestart: each token of the tokens file is its own
// identity; a token removed from the file is refused at the next request,
// with no restart and no signal; a file that no longer parses accepts none
// of its tokens (the fixed default token still works).
func TestTokensRevokedWithoutRestart(t *testing.T) {
	f := newSignInFixture(t)
	b := f.browser(t)
	bearer := func(name string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tokenOf(name)}
	}
	if w := b.whoami(bearer("ci")); w.Identity.Kind != access.Token || w.Identity.Name != "ci" || len(w.Identity.Groups) != 1 || w.Identity.Groups[0] != "platform-admins" {
		t.Fatalf("ci: %+v", w.Identity)
	}
	if w := b.whoami(map[string]string{"Authorization": "bearer legacy-token-0123456789"}); w.Identity.Name != api.DefaultTokenName {
		t.Fatalf("--api-token-file's token: %+v", w.Identity)
	}
	status := func(name string) int {
		resp, body := b.do(http.MethodPost, f.srv.URL+"/api/v1/sync", map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + tokenOf(name)}, "")
		f.assertNoSecrets(t, "sync answer", body)
		return resp.StatusCode
	}
	if s := status("ci"); s != http.StatusAccepted {
		t.Fatalf("ci sync: %d", s)
	}
	f.writeTokens(t, "grafana")
	if s := status("ci"); s != http.StatusUnauthorized {
		t.Errorf("revoked ci: %d, want 401", s)
	}
	if s := status("grafana"); s != http.StatusAccepted {
		t.Errorf("grafana after ci's revocation: %d", s)
	}
	// Written in place (same inode), with a new token.
	if err := os.WriteFile(f.tokensFile, []byte(api.TokenEntry{Name: "deploy", Hash: api.HashToken(tokenOf("deploy"))}.Line()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := status("deploy"); s != http.StatusAccepted {
		t.Errorf("new token deploy: %d", s)
	}
	if s := status("grafana"); s != http.StatusUnauthorized {
		t.Errorf("grafana after the rewrite: %d, want 401", s)
	}
	// A broken file: fail closed, logged naming file and line.
	if err := os.WriteFile(f.tokensFile, []byte("deploy sha256:nothex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := status("deploy"); s != http.StatusUnauthorized {
		t.Errorf("deploy with a broken tokens file: %d, want 401", s)
	}
	if !strings.Contains(f.logs.String(), f.tokensFile+":1") {
		t.Errorf("the broken file is not logged with its line:\n%s", f.logs.String())
	}
	if w := b.whoami(map[string]string{"Authorization": "Bearer legacy-token-0123456789"}); w.Identity.Name != api.DefaultTokenName {
		t.Errorf("the default token with a broken tokens file: %+v", w.Identity)
	}
	f.secrets = append(f.secrets, tokenOf("deploy"))
	f.assertNoSecrets(t, "the log", f.logs.String())
}

// TestSecureCookiesOverHTTPS: with an https redirect URL the login cookie
// (and so the session cookie, written the same way) is Secure and
// __Host- prefixed.
func TestSecureCookiesOverHTTPS(t *testing.T) {
	f := newSignInFixture(t)
	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h := api.New(db, api.Options{Logger: slog.New(slog.DiscardHandler), SignIn: &api.SignIn{
		Issuer: f.e.SignInIssuer(), ClientID: "00000000-0000-4000-8000-000000000001", RedirectURL: "https://gitaso.example.com/auth/callback",
		HTTPClient: f.e.HTTPClient(), SessionKey: []byte(strings.Repeat("s", 32))}, AllowedHosts: []string{"gitaso.example.com"}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://gitaso.example.com/auth/login", nil))
	res := rec.Result()
	if res.StatusCode != http.StatusFound || len(res.Cookies()) != 1 {
		t.Fatalf("login: %d %v", res.StatusCode, res.Header["Set-Cookie"])
	}
	c := res.Cookies()[0]
	if c.Name != "__Host-gitaso_login" || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Domain != "" {
		t.Errorf("login cookie over https: %+v", c)
	}
}

// TestValidateRefusesNoAuthBeyondLoopback: a listener beyond loopback with
// neither sign-in nor tokens is refused, naming the flags that allow it;
// --insecure-no-auth, tokens or sign-in lift the refusal.
func TestValidateRefusesNoAuthBeyondLoopback(t *testing.T) {
	err := api.Options{ListenAddr: ":8080"}.Validate()
	if !errors.Is(err, api.ErrAuthRequired) {
		t.Fatalf("no auth on :8080: %v", err)
	}
	for _, flag := range []string{"--insecure-no-auth", "--oidc-issuer", "--api-tokens-file", ":8080"} {
		if !strings.Contains(err.Error(), flag) {
			t.Errorf("the refusal does not name %s: %v", flag, err)
		}
	}
	tokens, err := api.LoadTokens("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tokens.AddFixed("x", "t"); err != nil {
		t.Fatal(err)
	}
	for i, o := range []api.Options{
		{ListenAddr: ":8080", InsecureNoAuth: true},
		{ListenAddr: ":8080", Tokens: tokens},
		{ListenAddr: ":8080", SignIn: &api.SignIn{Issuer: "https://login.example/t/v2.0", ClientID: "c",
			RedirectURL: "https://gitaso.example/auth/callback", SessionKey: make([]byte, 32)}},
	} {
		if err := o.Validate(); err != nil {
			t.Errorf("%d: %v", i, err)
		}
	}
	bad := api.Options{SignIn: &api.SignIn{Issuer: "https://login.example/t/v2.0", ClientID: "c", RedirectURL: "https://gitaso.example/auth/callback", SessionKey: make([]byte, 8)}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "session key") {
		t.Errorf("short session key: %v", err)
	}
	bad.SignIn.SessionKey, bad.SignIn.RedirectURL = make([]byte, 32), "https://gitaso.example/elsewhere"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "--oidc-redirect-url") {
		t.Errorf("redirect URL not at /auth/callback: %v", err)
	}
}

// TestParseTokens: errors name file, line and field; a token is never
// accepted in place of its hash.
func TestParseTokens(t *testing.T) {
	good := "# comment\n\nci sha256:" + strings.Repeat("ab", 32) + " a,b\nweb sha256:" + strings.Repeat("cd", 32) + "\n"
	es, err := api.ParseTokens(strings.NewReader(good), "tokens")
	if err != nil || len(es) != 2 || es[0].Name != "ci" || fmt.Sprint(es[0].Groups) != "[a b]" || es[1].Groups != nil {
		t.Fatalf("%+v %v", es, err)
	}
	for in, want := range map[string]string{
		"ci gitaso_abc\n": "tokens:1: token ci: hash",
		"ci\n":            "tokens:1: want NAME",
		"c/i sha256:" + strings.Repeat("ab", 32) + "\n":                                            "tokens:1: token name",
		"ci sha256:" + strings.Repeat("ab", 32) + "\nci sha256:" + strings.Repeat("cd", 32) + "\n": "tokens:2: token name ci is already used on line 1",
		"a sha256:" + strings.Repeat("ab", 32) + "\nb sha256:" + strings.Repeat("ab", 32) + "\n":   "tokens:2: token b has the same hash",
	} {
		if _, err := api.ParseTokens(strings.NewReader(in), "tokens"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// TestReadingNeedsACaller: with sign-in or tokens configured, an anonymous
// read of the API or /metrics is 401 and names how to authenticate; the
// probes and whoami answer anyone; a token or a session reads.
func TestReadingNeedsACaller(t *testing.T) {
	f := newSignInFixture(t)
	b := f.browser(t)
	for path, want := range map[string]int{
		"/api/v1/resources": http.StatusUnauthorized, "/api/v1/runs": http.StatusUnauthorized,
		"/api/v1/plan": http.StatusUnauthorized, "/metrics": http.StatusUnauthorized,
		"/api/v1/whoami": http.StatusOK, "/healthz": http.StatusOK,
	} {
		resp, body := b.do(http.MethodGet, f.srv.URL+path, nil, "")
		if resp.StatusCode != want {
			t.Errorf("anonymous GET %s: %d %s, want %d", path, resp.StatusCode, body, want)
		}
		if want == http.StatusUnauthorized && !strings.Contains(body, "sign in") {
			t.Errorf("anonymous GET %s: %s, want a hint to sign in", path, body)
		}
	}
	resp, body := b.do(http.MethodGet, f.srv.URL+"/api/v1/resources", map[string]string{"Authorization": "Bearer " + tokenOf("grafana")}, "")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET with a token: %d %s", resp.StatusCode, body)
	}
	b.signIn("alice@gitaso.local")
	if resp, body := b.do(http.MethodGet, f.srv.URL+"/api/v1/resources", nil, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("GET signed in: %d %s", resp.StatusCode, body)
	}
}

// TestOneTokenOneName: a token both in the tokens file and given as
// --api-token-file's is refused at start, and a tokens file that takes it
// later accepts none of its tokens.
func TestOneTokenOneName(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	line := api.TokenEntry{Name: "ci", Hash: api.HashToken("shared-token")}.Line() + "\n"
	if err := os.WriteFile(file, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := api.LoadTokens(file, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := tokens.AddFixed(api.DefaultTokenName, "shared-token"); err == nil || !strings.Contains(err.Error(), "one token, one name") {
		t.Errorf("the same token twice: %v", err)
	}
	if err := (api.Options{Token: "shared-token", Tokens: tokens}).Validate(); err == nil {
		t.Error("Validate accepted the same token as Token and in Tokens")
	}
	if err := tokens.AddFixed(api.DefaultTokenName, "other-token"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(line+api.TokenEntry{Name: "web", Hash: api.HashToken("other-token")}.Line()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.Lookup("shared-token"); ok {
		t.Error("a tokens file naming the default token again still accepts its tokens")
	}
}
