package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gitaso/gitaso/access"
)

// SignIn configures signing people in with OpenID Connect (authorization
// code flow with PKCE, state and nonce) and the session cookie that
// follows.
type SignIn struct {
	// Issuer is the OpenID Connect issuer URL; its discovery document is
	// read at the first sign-in (Entra ID:
	// https://login.microsoftonline.com/{tenant}/v2.0).
	Issuer string
	// ClientID and ClientSecret are the application's registration at the
	// issuer; the secret may be empty for a public client.
	ClientID     string
	ClientSecret string
	// RedirectURL is where the issuer sends the browser back:
	// https://gitaso.example.com/auth/callback (a reverse proxy's path prefix
	// before /auth/callback, if any). It must be registered with the
	// issuer. An https URL makes the cookies Secure.
	RedirectURL string
	// GroupsClaim names the ID token claim holding the user's groups
	// (DefaultGroupsClaim when empty).
	GroupsClaim string
	// Scopes asked besides openid (default profile and email).
	Scopes []string
	// HTTPClient reaches the issuer (discovery, keys, token endpoint);
	// nil: http.DefaultClient.
	HTTPClient *http.Client
	// SessionKey encrypts and authenticates the cookies (at least
	// MinSessionKey bytes). Changing it signs everyone out.
	SessionKey []byte
	// SessionLifetime is how long a sign-in lasts (DefaultSessionLifetime
	// when 0); then the user signs in again and the groups are read anew.
	SessionLifetime time.Duration
}

// DefaultGroupsClaim is the claim Entra ID (and most issuers) put groups in.
const DefaultGroupsClaim = "groups"

// DefaultSessionLifetime is how long a sign-in lasts by default: a working
// day.
const DefaultSessionLifetime = 8 * time.Hour

// loginLifetime bounds the time between /auth/login and /auth/callback.
const loginLifetime = 10 * time.Minute

// check validates the settings; errors name the flag.
func (o *SignIn) check() error {
	u, err := url.Parse(o.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("--oidc-issuer %q: want an absolute https URL, e.g. https://login.microsoftonline.com/<tenant>/v2.0", o.Issuer)
	}
	if o.ClientID == "" {
		return errors.New("--oidc-client-id is required with --oidc-issuer")
	}
	r, err := url.Parse(o.RedirectURL)
	if err != nil || (r.Scheme != "https" && r.Scheme != "http") || r.Host == "" || !strings.HasSuffix(r.Path, "/auth/callback") || r.RawQuery != "" || r.Fragment != "" {
		return fmt.Errorf("--oidc-redirect-url %q: want gitaso's own address and /auth/callback (after a reverse proxy's path prefix, if any), e.g. https://gitaso.example.com/auth/callback (registered with the issuer)", o.RedirectURL)
	}
	if len(o.SessionKey) < MinSessionKey {
		return fmt.Errorf("session key: %d bytes, want at least %d", len(o.SessionKey), MinSessionKey)
	}
	return nil
}

// signIn runs the sign-in endpoints. The provider is discovered at the
// first sign-in and kept once found.
type signIn struct {
	opts    SignIn
	log     *slog.Logger
	jar     cookieJar
	session *sealer
	login   *sealer

	// event is told of every sign-in, refused or not (server.authEvent).
	event func(r *http.Request, action string, id access.Identity, err error)

	mu       sync.Mutex
	provider *oidc.Provider
}

func newSignIn(o SignIn, log *slog.Logger) (*signIn, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = DefaultGroupsClaim
	}
	if o.Scopes == nil {
		o.Scopes = []string{"profile", "email"}
	}
	if o.SessionLifetime <= 0 {
		o.SessionLifetime = DefaultSessionLifetime
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	s := &signIn{opts: o, log: log, jar: newCookieJar(strings.HasPrefix(o.RedirectURL, "https://")),
		event: func(*http.Request, string, access.Identity, error) {}}
	var err error
	if s.session, err = newSealer(o.SessionKey, "session"); err != nil {
		return nil, err
	}
	if s.login, err = newSealer(o.SessionKey, "login"); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *signIn) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, s.opts.HTTPClient)
}

// config returns the provider and the OAuth 2 settings, discovering the
// provider the first time.
func (s *signIn) config(ctx context.Context) (*oidc.Provider, *oauth2.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.provider == nil {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		p, err := oidc.NewProvider(s.ctx(ctx), s.opts.Issuer)
		if err != nil {
			return nil, nil, fmt.Errorf("discover the OpenID Connect issuer %s: %w", s.opts.Issuer, err)
		}
		s.provider = p
	}
	ep := s.provider.Endpoint()
	// One way, not auto-detection's two tries: a code is redeemed once.
	ep.AuthStyle = oauth2.AuthStyleInParams
	return s.provider, &oauth2.Config{ClientID: s.opts.ClientID, ClientSecret: s.opts.ClientSecret, Endpoint: ep,
		RedirectURL: s.opts.RedirectURL, Scopes: append([]string{oidc.ScopeOpenID}, s.opts.Scopes...)}, nil
}

// safeReturn keeps a return path on this site: a path, never another host
// ("//evil.example", "/\evil.example").
func safeReturn(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") || strings.ContainsAny(p, "\r\n") {
		return "/"
	}
	return p
}

// login is GET /auth/login[?return=/path]: it remembers a fresh state,
// nonce and PKCE verifier in the login cookie and sends the browser to the
// issuer's authorization endpoint.
func (s *signIn) handleLogin(w http.ResponseWriter, r *http.Request) {
	_, cfg, err := s.config(r.Context())
	if err != nil {
		s.log.WarnContext(r.Context(), "sign-in unavailable", "error", err)
		signInPage(w, http.StatusBadGateway, "Sign-in is unavailable: the identity provider could not be reached. See the gitaso log.")
		return
	}
	ls := loginState{State: randomString(32), Nonce: randomString(32), Verifier: oauth2.GenerateVerifier(),
		Return: safeReturn(r.URL.Query().Get("return")), Expires: time.Now().Add(loginLifetime).Unix()}
	v, err := s.login.seal(s.jar.login, ls)
	if err != nil {
		s.log.ErrorContext(r.Context(), "sign-in", "error", err)
		signInPage(w, http.StatusInternalServerError, "Sign-in failed; see the gitaso log.")
		return
	}
	s.jar.set(w, s.jar.login, v, time.Now().Add(loginLifetime))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, cfg.AuthCodeURL(ls.State, oidc.Nonce(ls.Nonce), oauth2.S256ChallengeOption(ls.Verifier)), http.StatusFound)
}

// callbackError is a refused sign-in: the status, what the user reads and
// what the log says (never a code or a token).
type callbackError struct {
	status int
	msg    string
	err    error
}

func (e *callbackError) Error() string { return e.msg + ": " + e.err.Error() }

// Unwrap returns the cause.
func (e *callbackError) Unwrap() error { return e.err }

// callback is GET /auth/callback: it checks the state against the login
// cookie, redeems the code with the PKCE verifier, verifies the ID token
// (signature by the issuer's keys, issuer, audience, expiry, nonce) and
// sets the session cookie.
func (s *signIn) handleCallback(w http.ResponseWriter, r *http.Request) {
	s.jar.set(w, s.jar.login, "", time.Time{}) // one use, whatever happens
	sess, ret, err := s.redeem(r)
	if err != nil {
		var ce *callbackError
		if !errors.As(err, &ce) {
			ce = &callbackError{http.StatusInternalServerError, "sign-in failed", err}
		}
		s.log.WarnContext(r.Context(), "sign-in refused", "reason", ce.msg, "error", ce.err)
		s.event(r, "sign-in", access.Identity{Kind: access.Anonymous}, ce)
		signInPage(w, ce.status, "Sign-in refused: "+ce.msg+".")
		return
	}
	v, err := s.session.seal(s.jar.session, sess)
	if err == nil && len(v) > maxCookie {
		err = fmt.Errorf("the session of %s does not fit a cookie (%d groups): configure the issuer to send fewer groups (Entra ID: groups assigned to the application)", sess.Name, len(sess.Groups))
	}
	if err != nil {
		s.log.ErrorContext(r.Context(), "sign-in failed", "error", err)
		signInPage(w, http.StatusInternalServerError, "Sign-in failed; see the gitaso log.")
		return
	}
	s.jar.set(w, s.jar.session, v, time.Unix(sess.Expires, 0))
	s.log.InfoContext(r.Context(), "signed in", "user", sess.Name, "subject", sess.Subject, "groups", sess.Groups)
	s.event(r, "sign-in", sess.identity(), nil)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, ret, http.StatusSeeOther)
}

func (s *signIn) redeem(r *http.Request) (*session, string, error) {
	q := r.URL.Query()
	c, err := r.Cookie(s.jar.login)
	var ls loginState
	if err != nil || s.login.open(s.jar.login, c.Value, &ls) != nil || time.Now().Unix() > ls.Expires {
		return nil, "", &callbackError{http.StatusBadRequest, "the sign-in was not started here or took too long; start again", errCookie}
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(ls.State)) != 1 {
		return nil, "", &callbackError{http.StatusBadRequest, "the state does not match the sign-in started in this browser", errors.New("state mismatch")}
	}
	if e := q.Get("error"); e != "" {
		return nil, "", &callbackError{http.StatusUnauthorized, "the identity provider answered " + e, errors.New(q.Get("error_description"))}
	}
	prov, cfg, err := s.config(r.Context())
	if err != nil {
		return nil, "", &callbackError{http.StatusBadGateway, "the identity provider could not be reached", err}
	}
	ctx := s.ctx(r.Context())
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(ls.Verifier))
	if err != nil {
		return nil, "", &callbackError{http.StatusUnauthorized, "the identity provider did not redeem the code", err}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, "", &callbackError{http.StatusUnauthorized, "the identity provider sent no ID token", errors.New("no id_token")}
	}
	idt, err := prov.Verifier(&oidc.Config{ClientID: s.opts.ClientID}).Verify(ctx, raw)
	if err != nil {
		return nil, "", &callbackError{http.StatusUnauthorized, "the ID token is not valid", err}
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(ls.Nonce)) != 1 {
		return nil, "", &callbackError{http.StatusUnauthorized, "the ID token's nonce is not this sign-in's", errors.New("nonce mismatch")}
	}
	sess, err := s.sessionOf(idt)
	if err != nil {
		return nil, "", &callbackError{http.StatusUnauthorized, "the ID token's claims cannot be read", err}
	}
	return sess, ls.Return, nil
}

// sessionOf builds the session from a verified ID token: the name shown is
// preferred_username, else email, else name, else sub; groups come from the
// configured claim (a list of strings, or one string).
func (s *signIn) sessionOf(idt *oidc.IDToken) (*session, error) {
	var c map[string]any
	if err := idt.Claims(&c); err != nil {
		return nil, err
	}
	str := func(k string) string { v, _ := c[k].(string); return v }
	name := str("preferred_username")
	for _, k := range []string{"email", "name"} {
		if name == "" {
			name = str(k)
		}
	}
	if name == "" {
		name = idt.Subject
	}
	var groups []string
	switch g := c[s.opts.GroupsClaim].(type) {
	case string:
		groups = []string{g}
	case []any:
		for _, v := range g {
			if v, ok := v.(string); ok && v != "" {
				groups = append(groups, v)
			}
		}
	case nil:
		if _, over := c["_claim_names"]; over {
			s.log.Warn("the ID token names too many groups to carry them (Entra ID group overage): signed in without groups; "+
				"assign groups to the application so that the token lists them", "user", name)
		}
	default:
		return nil, fmt.Errorf("claim %s is %T, want a list of strings", s.opts.GroupsClaim, g)
	}
	exp := time.Now().Add(s.opts.SessionLifetime)
	return &session{Subject: idt.Subject, Name: name, Groups: groups, Issuer: idt.Issuer, Expires: exp.Unix(), CSRF: randomString(32)}, nil
}

// current returns the session of a request's cookie, or nil.
func (s *signIn) current(r *http.Request) *session {
	c, err := r.Cookie(s.jar.session)
	if err != nil {
		return nil
	}
	var sess session
	if s.session.open(s.jar.session, c.Value, &sess) != nil || time.Now().Unix() >= sess.Expires || sess.Subject == "" {
		return nil
	}
	return &sess
}

func (sess *session) identity() access.Identity {
	return access.Identity{Kind: access.User, Subject: sess.Subject, Name: sess.Name, Groups: sess.Groups, Issuer: sess.Issuer}
}

var signInTmpl = template.Must(template.New("p").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gitaso sign-in</title></head>
<body><h1>gitaso</h1><p id="message">{{.}}</p><p><a href="/auth/login">Sign in again</a> · <a href="/">Status page</a></p></body></html>
`))

func signInPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = signInTmpl.Execute(w, msg)
}
