package emulator_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gitaso/gitaso/emulator"
)

const testRedirect = "http://127.0.0.1:1/auth/callback"

func signInEmulator(t *testing.T) (*emulator.Emulator, emulator.ServicePrincipal) {
	t.Helper()
	e, err := emulator.New(emulator.WithUsers(
		emulator.User{UserPrincipalName: "admin@gitaso.local", Groups: []string{"platform-admins"}},
		emulator.User{UserPrincipalName: "alice@gitaso.local", DisplayName: "Alice", Groups: []string{"team-a"}},
	))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	app, err := e.AddSignInApplication("gitaso", testRedirect)
	if err != nil {
		t.Fatal(err)
	}
	return e, app
}

// authorize runs the browser's part of a sign-in with net/http: the form,
// then the post choosing upn. It returns the redirect's query.
func authorize(t *testing.T, e *emulator.Emulator, authURL, upn string) url.Values {
	t.Helper()
	c := *e.HTTPClient()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `value="alice@gitaso.local"`) {
		t.Fatalf("sign-in form: %d\n%s", resp.StatusCode, page)
	}
	u, _ := url.Parse(authURL)
	form := u.Query()
	form.Set("user", upn)
	resp, err = c.PostForm(u.Scheme+"://"+u.Host+u.Path, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("sign-in post: %d, want a redirect", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), testRedirect+"?") {
		t.Fatalf("redirected to %q, want %s", resp.Header.Get("Location"), testRedirect)
	}
	return loc.Query()
}

// TestSignInCodeFlow: a relying party built on go-oidc and x/oauth2 finds
// the emulator's tenant by discovery, signs alice in with PKCE and verifies
// her ID token against the published keys: Entra's v2.0 claims, her groups,
// the nonce; the code is redeemed once, and only with its verifier.
func TestSignInCodeFlow(t *testing.T) {
	e, app := signInEmulator(t)
	ctx := oidc.ClientContext(context.Background(), e.HTTPClient())
	prov, err := oidc.NewProvider(ctx, e.SignInIssuer())
	if err != nil {
		t.Fatalf("discovery of %s: %v", e.SignInIssuer(), err)
	}
	ep := prov.Endpoint()
	ep.AuthStyle = oauth2.AuthStyleInParams // auto-detection would try twice, and a code is redeemed once
	cfg := oauth2.Config{ClientID: app.ClientID, ClientSecret: app.Secret, Endpoint: ep,
		RedirectURL: testRedirect, Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}
	verifier := oauth2.GenerateVerifier()
	q := authorize(t, e, cfg.AuthCodeURL("st-1", oidc.Nonce("n-1"), oauth2.S256ChallengeOption(verifier)), "alice@gitaso.local")
	if q.Get("state") != "st-1" || q.Get("code") == "" {
		t.Fatalf("callback query %v: want state st-1 and a code", q)
	}
	// A wrong verifier is refused (and spends the code).
	if _, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier())); err == nil || !strings.Contains(err.Error(), "AADSTS501481") {
		t.Fatalf("exchange with a wrong verifier: %v, want AADSTS501481", err)
	}
	q = authorize(t, e, cfg.AuthCodeURL("st-2", oidc.Nonce("n-2"), oauth2.S256ChallengeOption(verifier)), "alice@gitaso.local")
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if _, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier)); err == nil || !strings.Contains(err.Error(), "AADSTS70008") {
		t.Fatalf("second redemption of a code: %v, want AADSTS70008", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := prov.Verifier(&oidc.Config{ClientID: app.ClientID}).Verify(ctx, raw)
	if err != nil {
		t.Fatalf("verify ID token: %v", err)
	}
	var c struct {
		Nonce, Name, Email, Oid, Tid, Ver string
		PreferredUsername                 string   `json:"preferred_username"`
		Groups                            []string `json:"groups"`
	}
	if err := idt.Claims(&c); err != nil {
		t.Fatal(err)
	}
	if c.Nonce != "n-2" || c.PreferredUsername != "alice@gitaso.local" || c.Email != "alice@gitaso.local" || c.Name != "Alice" ||
		!slices.Equal(c.Groups, []string{"team-a"}) || c.Tid != e.TenantID() || c.Ver != "2.0" || c.Oid == "" || idt.Subject == "" {
		t.Errorf("claims %+v sub %q", c, idt.Subject)
	}
	if idt.Issuer != e.SignInIssuer() {
		t.Errorf("iss %q, want %q", idt.Issuer, e.SignInIssuer())
	}
	// Without the client secret the application (a web app) gets no token.
	q = authorize(t, e, cfg.AuthCodeURL("st-3", oauth2.S256ChallengeOption(verifier)), "admin@gitaso.local")
	public := cfg
	public.ClientSecret = ""
	if _, err := public.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier)); err == nil || !strings.Contains(err.Error(), "AADSTS7000218") {
		t.Fatalf("exchange without the secret: %v, want AADSTS7000218", err)
	}
}

// TestSignInRefusals: the authorization endpoint never redirects to a URI
// the application did not register, names an unknown application, and
// keeps an unknown user on the form.
func TestSignInRefusals(t *testing.T) {
	e, app := signInEmulator(t)
	c := *e.HTTPClient()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	base := e.ARMEndpoint() + "/" + e.TenantID() + "/oauth2/v2.0/authorize?"
	get := func(q url.Values) (int, string, string) {
		resp, err := c.Get(base + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(b)
	}
	ok := url.Values{"client_id": {app.ClientID}, "response_type": {"code"}, "redirect_uri": {testRedirect}, "scope": {"openid"}, "state": {"s"}}
	with := func(k, v string) url.Values {
		q := url.Values{}
		for kk, vv := range ok {
			q[kk] = vv
		}
		q.Set(k, v)
		return q
	}
	if st, loc, body := get(with("redirect_uri", "https://evil.example/cb")); st != http.StatusBadRequest || loc != "" || !strings.Contains(body, "AADSTS50011") {
		t.Errorf("unregistered redirect URI: %d %q %s", st, loc, body)
	}
	if st, _, body := get(with("client_id", "00000000-0000-4000-8000-000000000000")); st != http.StatusBadRequest || !strings.Contains(body, "AADSTS700016") {
		t.Errorf("unknown client: %d %s", st, body)
	}
	if st, loc, _ := get(with("response_type", "token")); st != http.StatusFound || !strings.Contains(loc, "error=unsupported_response_type") || !strings.Contains(loc, "state=s") {
		t.Errorf("implicit flow: %d %q", st, loc)
	}
	if st, loc, _ := get(with("scope", "profile")); st != http.StatusFound || !strings.Contains(loc, "error=invalid_scope") {
		t.Errorf("no openid scope: %d %q", st, loc)
	}
	form := with("login", "mallory@gitaso.local")
	resp, err := c.PostForm(strings.TrimSuffix(base, "?"), form)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "AADSTS50034") {
		t.Errorf("unknown user: %d %s", resp.StatusCode, b)
	}
}
