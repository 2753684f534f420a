package api

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/record"
)

// Authentication decides who calls: a named bearer token (Options.Tokens,
// Options.Token), the session cookie of an OpenID Connect sign-in
// (Options.SignIn), or nobody (access.Anonymous). The identity is put in
// the request's context (access.WithIdentity) for the handlers and the
// policy to read. Tokens and cookies are never logged nor answered.

// CodeCSRF: a state-changing request of a signed-in browser without its
// session's X-CSRF-Token (403).
const CodeCSRF = "csrf"

// CSRFHeader carries a session's CSRF token (GET /api/v1/whoami's
// csrfToken) on every state-changing request of a signed-in browser.
const CSRFHeader = "X-CSRF-Token"

// via says how a request was authenticated.
type via int

const (
	viaNone via = iota
	viaToken
	viaCookie
)

// authInfo is what a request's credentials say besides the identity: how
// it was authenticated, and the session (cookie only).
type authInfo struct {
	via     via
	session *session
}

// credentials reads a request's credentials: a bearer token (ok false when
// the API does not know it), else the session cookie; none: the identity
// already in the request's context (set in-process, e.g. by a test), else
// anonymous. It is read again where needed rather than carried in the
// context: one map lookup, or one cookie decryption.
func (s *server) credentials(r *http.Request) (id access.Identity, info authInfo, ok bool) {
	if tok, has := bearer(r.Header.Get("Authorization")); has && s.tokens.Len() > 0 {
		tid, known := s.tokens.Lookup(tok)
		return tid, authInfo{via: viaToken}, known
	}
	if s.signIn != nil {
		if sess := s.signIn.current(r); sess != nil {
			return sess.identity(), authInfo{via: viaCookie, session: sess}, true
		}
	}
	return access.IdentityFrom(r.Context()), authInfo{}, true
}

// authConfigured reports whether any way to authenticate is set.
func (s *server) authConfigured() bool {
	return s.signIn != nil || s.tokens.Len() > 0
}

// authenticate sets the request's identity. A bearer token the API does not
// know is refused at once (401), except on the paths that authenticate
// otherwise or not at all: the probes and the webhook (whose sender may
// send its own secret as a bearer token). With sign-in or Tokens
// configured, reading is for callers too: an anonymous request to the API
// (but whoami) or /metrics is answered 401; the page and its assets load,
// and say how to sign in. A request that carries no credential keeps an
// identity already in its context (set in-process, e.g. by a test).
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/api/v1/webhook":
			next.ServeHTTP(w, r)
			return
		}
		id, _, ok := s.credentials(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gitaso", error="invalid_token"`)
			s.writeError(w, http.StatusUnauthorized, CodeUnauthorized, "the bearer token is not valid (unknown or revoked)")
			return
		}
		if s.readGate && isAnonymous(id) && gatedRead(r.URL.Path) {
			s.unauthorized(w)
			return
		}
		next.ServeHTTP(w, r.WithContext(access.WithIdentity(r.Context(), id)))
	})
}

func isAnonymous(id access.Identity) bool { return id.Kind == access.Anonymous || id.Kind == "" }

// gatedRead reports whether path needs a caller when reading is gated: the
// API but whoami (and the webhook, which has its own secret), and /metrics.
func gatedRead(path string) bool {
	switch {
	case path == "/metrics":
		return true
	case path == "/api/v1/whoami", path == "/api/v1/webhook":
		return false
	}
	return strings.HasPrefix(path, "/api/")
}

// unauthorized answers 401, saying how to authenticate.
func (s *server) unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="gitaso"`)
	msg := "a valid bearer token is required"
	if s.signIn != nil {
		msg = "sign in (/auth/login) or send a valid bearer token"
	}
	s.writeError(w, http.StatusUnauthorized, CodeUnauthorized, msg)
}

// requireCaller refuses, when authentication is configured, a request with
// no identity (401) and a cookie-authenticated request without its
// session's CSRF token (403). It returns false when it answered.
func (s *server) requireCaller(w http.ResponseWriter, r *http.Request) bool {
	if !s.authConfigured() {
		return true
	}
	id, a, _ := s.credentials(r)
	if a.via == viaNone && isAnonymous(id) {
		s.unauthorized(w)
		return false
	}
	if a.via == viaCookie {
		got := r.Header.Get(CSRFHeader)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(a.session.CSRF)) != 1 {
			s.writeError(w, http.StatusForbidden, CodeCSRF, fmt.Sprintf(
				"a signed-in browser's request that changes something must carry its session's %s (GET /api/v1/whoami csrfToken)", CSRFHeader))
			return false
		}
	}
	return true
}

// whoamiAnswer is GET /api/v1/whoami.
type whoamiAnswer struct {
	Identity access.Identity `json:"identity"`
	// SignIn says whether people can sign in (and where).
	SignIn   bool   `json:"signIn"`
	LoginURL string `json:"loginURL,omitempty"`
	// CSRFToken is the session's token to send as X-CSRF-Token (signed-in
	// browsers only); ExpiresAt when the sign-in ends.
	// Rights are what the caller may do: "*" for every namespace, else per
	// namespace of the resources gitaso holds (the page shows which buttons
	// work).
	Rights    map[string][]access.Right `json:"rights,omitempty"`
	CSRFToken string                    `json:"csrfToken,omitempty"`
	ExpiresAt *time.Time                `json:"expiresAt,omitempty"`
}

// whoami is GET /api/v1/whoami: who the API takes the caller for.
func (s *server) whoami(w http.ResponseWriter, r *http.Request) {
	out := whoamiAnswer{Identity: access.IdentityFrom(r.Context()), SignIn: s.signIn != nil}
	out.Rights = RightsOf(s.policy(), out.Identity, s.namespaces())
	if out.SignIn {
		out.LoginURL = "/auth/login"
	}
	if _, a, _ := s.credentials(r); a.session != nil {
		out.CSRFToken = a.session.CSRF
		exp := time.Unix(a.session.Expires, 0).UTC()
		out.ExpiresAt = &exp
	}
	s.writeJSON(w, http.StatusOK, out)
}

// logout is POST /auth/logout: it clears the session cookie. A signed-in
// browser sends its CSRF token (header, or the form field csrf) from this
// site; then it is sent to the status page (a form) or answered 204. The
// issuer's own session is not ended.
func (s *server) logout(w http.ResponseWriter, r *http.Request) {
	if !s.sameSite(w, r) {
		return
	}
	if _, a, _ := s.credentials(r); a.session != nil {
		got := r.Header.Get(CSRFHeader)
		if got == "" {
			_ = r.ParseForm()
			got = r.PostForm.Get("csrf")
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(a.session.CSRF)) != 1 {
			s.writeError(w, http.StatusForbidden, CodeCSRF, "sign-out needs the session's CSRF token (X-CSRF-Token or the form field csrf)")
			return
		}
		s.log.InfoContext(r.Context(), "signed out", "user", a.session.Name)
		s.authEvent(r, "sign-out", a.session.identity(), nil)
	}
	s.signIn.jar.set(w, s.signIn.jar.session, "", time.Time{})
	if r.Header.Get(CSRFHeader) == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// authEvent is told of every sign-in ("sign-in": the identity, or
// anonymous and the reason when refused) and sign-out: the place where the
// audit trail records them. Nothing secret is in its arguments (the
// reason's error names no code, cookie or token).
func (s *server) authEvent(r *http.Request, action string, id access.Identity, err error) {
	ev := record.AuditEvent{Action: action, Outcome: record.AuditAllowed}
	if err != nil {
		ev.Outcome, ev.Detail = record.AuditRefused, err.Error()
	}
	s.opts.Audit.record(r.WithContext(access.WithIdentity(r.Context(), id)), ev)
}

// sameSite refuses a request another site sent (Sec-Fetch-Site, Origin);
// it returns false when it answered.
func (s *server) sameSite(w http.ResponseWriter, r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		s.writeError(w, http.StatusForbidden, CodeForbidden, "cross-site request refused (Sec-Fetch-Site: "+site+")")
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r) {
		s.writeError(w, http.StatusForbidden, CodeForbidden, fmt.Sprintf("cross-origin request refused: Origin %q is not this server", o))
		return false
	}
	return true
}

// signInRoutes answer 404 when sign-in is not configured.
func (s *server) signInRoute(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.signIn == nil {
			s.writeError(w, http.StatusNotFound, CodeNotFound, "sign-in is not configured (gitaso serve --oidc-issuer)")
			return
		}
		h(w, r)
	}
}
