package api

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// maxRequestBody bounds the body of POST /api/v1/sync and /api/v1/approve.
const maxRequestBody = 64 << 10

// hostPolicy decides which Host headers the API answers. A browser sends the
// name it resolved in Host, so a page that rebinds its own DNS name to the
// API's address (DNS rebinding) is recognised by a name the API does not
// know. IP literals cannot be rebound.
type hostPolicy struct {
	anyIP bool            // the listener has an unspecified address: every IP literal
	any   bool            // "*" in AllowedHosts: no check
	names map[string]bool // exact names and IP literals, lower case
	zones []string        // ".example.com": the domain and its subdomains
}

func newHostPolicy(listen string, allowed []string) hostPolicy {
	p := hostPolicy{names: map[string]bool{}}
	if listen != "" {
		h := hostOnly(listen)
		if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
			p.anyIP = true
		} else {
			p.names[normHost(h)] = true
		}
	}
	for _, a := range allowed {
		a = normHost(hostOnly(strings.TrimSpace(a)))
		switch {
		case a == "":
		case a == "*":
			p.any = true
		case strings.HasPrefix(a, "*."):
			p.zones = append(p.zones, a[1:])
		case strings.HasPrefix(a, "."):
			p.zones = append(p.zones, a)
		default:
			p.names[a] = true
		}
	}
	return p
}

// allows reports whether the Host header host (with or without a port) is
// one the API answers: loopback addresses, localhost and its subdomains
// (RFC 6761: they always resolve to loopback), the listen address, and the
// allowed hosts. An absent Host (HTTP/1.0) comes from no browser.
func (p hostPolicy) allows(host string) bool {
	h := normHost(hostOnly(host))
	if h == "" || p.any || p.names[h] {
		return true
	}
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback() || p.anyIP
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	for _, z := range p.zones {
		if h == z[1:] || strings.HasSuffix(h, z) {
			return true
		}
	}
	return false
}

// hostOnly strips the port and IPv6 brackets of host[:port].
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// IsLoopback reports whether a listen address (host:port) accepts
// connections from this machine only: localhost or a loopback IP. An empty
// or unspecified host (":8080", "0.0.0.0:8080") and any other name are not.
func IsLoopback(listen string) bool {
	h := normHost(hostOnly(listen))
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ErrAuthRequired is returned by Options.Validate when the API listens
// beyond loopback with neither sign-in nor tokens, and InsecureNoAuth is
// not set.
var ErrAuthRequired = errors.New("sign-in or tokens are required when the API listens beyond loopback")

// ErrTokenRequired is ErrAuthRequired's former name.
//
// Deprecated: use ErrAuthRequired.
var ErrTokenRequired = ErrAuthRequired

// Validate checks the options a server is started with: a way to
// authenticate (sign-in or tokens) whenever ListenAddr is not a loopback
// address, unless InsecureNoAuth; well-formed sign-in settings and
// AllowedHosts.
func (o Options) Validate() error {
	auth := o.Token != "" || o.Tokens.Len() > 0 || o.SignIn != nil
	if !auth && !o.InsecureNoAuth && o.ListenAddr != "" && !IsLoopback(o.ListenAddr) {
		return fmt.Errorf("%w: --listen %s is reachable from other machines, and with neither sign-in nor tokens anyone who reaches it "+
			"could read every resource and plan, trigger runs and approve deletions; configure sign-in (--oidc-issuer, --oidc-client-id, "+
			"--oidc-redirect-url) or tokens (--api-tokens-file, --api-token-file), listen on 127.0.0.1, or pass --insecure-no-auth "+
			"if this is intended (e.g. an authenticating proxy in front)", ErrAuthRequired, o.ListenAddr)
	}
	if o.SignIn != nil {
		if err := o.SignIn.check(); err != nil {
			return err
		}
	}
	if o.Token != "" && o.Tokens != nil {
		if id, clash := o.Tokens.Lookup(o.Token); clash {
			return fmt.Errorf("the token of --api-token-file is the token %s as well: one token, one name", id.Name)
		}
	}
	for _, a := range o.AllowedHosts {
		a = strings.TrimSpace(a)
		if a == "" || strings.ContainsAny(a, "/@ \t") {
			return fmt.Errorf("allowed host %q: want a host name or IP address (optionally with a port), a leading dot for a domain and its subdomains, or *", a)
		}
	}
	return nil
}

// checkHost answers 403 to a request whose Host the policy does not allow
// (DNS rebinding), except on the exempt paths: /healthz (a constant answer
// probes send with any Host) and /api/v1/webhook (Git hosts call it by
// whatever public name forwards to gitaso, and it authenticates every
// request with the webhook secret, which a rebinding page does not have).
func (s *server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/api/v1/webhook":
		default:
			if !s.hosts.allows(r.Host) {
				s.writeError(w, http.StatusForbidden, CodeForbidden, fmt.Sprintf(
					"host %q is not served: gitaso answers loopback addresses, localhost and its listen address; add other names with --api-allowed-hosts",
					hostOnly(r.Host)))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// mutating guards the endpoints that change something (sync, approve)
// against cross-site requests, then, when sign-in or tokens are
// configured, requires a caller (requireCaller: a token, or a signed-in
// browser with its CSRF token):
//
//   - Sec-Fetch-Site, when sent, must be same-origin (or none);
//   - Origin, when sent, must be the API's own (its host and port are the
//     request's Host);
//   - Content-Type must be application/json: a page of another origin can
//     send it only after a CORS preflight, which the API never grants, so a
//     form or a "simple" fetch cannot trigger anything.
func (s *server) mutating(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.sameSite(w, r) {
			return
		}
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			s.writeError(w, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
				"send Content-Type: application/json (curl -H 'Content-Type: application/json' ...)")
			return
		}
		if !s.requireCaller(w, r) {
			return
		}
		next(w, r)
	}
}

// sameOrigin reports whether an Origin header names the server the request
// was sent to: the same host and port as the Host header. A Host without a
// port stands for the default port of the origin's scheme (a TLS-terminating
// proxy in front of gitaso).
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false // includes "null" (sandboxed frames, file:// pages)
	}
	def := map[string]string{"http": "80", "https": "443"}[u.Scheme]
	split := func(hp string) (string, string) {
		if h, p, err := net.SplitHostPort(hp); err == nil {
			return normHost(h), p
		}
		return normHost(hostOnly(hp)), def
	}
	oh, op := split(u.Host)
	rh, rp := split(r.Host)
	return oh == rh && op == rp
}

// bearer returns the token of an "Authorization: Bearer <token>" header; the
// scheme is case-insensitive (RFC 7235).
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// readBody reads at most limit bytes of the request body; a larger body
// answers 413 and returns false.
func (s *server) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("the request body is larger than %d bytes", limit))
		} else {
			s.writeError(w, http.StatusBadRequest, CodeBadRequest, "read body: "+err.Error())
		}
		return nil, false
	}
	return b, true
}
