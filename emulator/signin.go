package emulator

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Sign-in of people: the emulator's Entra ID is an OpenID Connect provider
// for web applications, as Entra's v2.0 endpoints are. An application
// registration (AddSignInApplication, or a principal with RedirectURIs)
// sends a browser to /{tenant}/oauth2/v2.0/authorize (authorization code
// flow, PKCE S256 or plain); the emulator shows a small sign-in form where
// one of the configured users (WithUsers) is chosen or typed — there is no
// password: the emulator stands for the identity provider in tests and
// demos — and redirects back with a code; the token endpoint's
// authorization_code grant returns an ID token signed with the tenant's
// key (RS256, published at /{tenant}/discovery/v2.0/keys) whose claims are
// Entra's v2.0 ones: iss, aud, sub (pairwise per application), oid, tid,
// nonce, preferred_username, email, name and groups.

// User is a person of the emulator's tenant who can sign in through the
// authorization endpoint.
type User struct {
	// UserPrincipalName is the sign-in name, e.g. "alice@gitaso.local"; it
	// is the preferred_username and email of the ID token.
	UserPrincipalName string
	// DisplayName is the ID token's name (default: the part of the UPN
	// before the @).
	DisplayName string
	// ObjectID is the user's oid; default a GUID derived from the tenant
	// and the UPN, so it is the same across restarts.
	ObjectID string
	// Groups are the values of the ID token's groups claim. Real Entra ID
	// sends group object IDs unless the application asks for names; the
	// emulator sends exactly these strings.
	Groups []string
}

// WithUsers adds users who can sign in (repeatable). A user is matched by
// UPN, case-insensitively.
func WithUsers(users ...User) Option {
	return func(o *options) { o.users = append(o.users, users...) }
}

// SignInApplicationName is the display name of the application registration
// RunCommand creates for --sign-in-redirect-uri.
const SignInApplicationName = "gitaso-sign-in"

// codeLifetime is how long an authorization code can be redeemed (Entra:
// about 10 minutes).
const codeLifetime = 10 * time.Minute

// idTokenLifetime is the lifetime of ID tokens (Entra: one hour).
const idTokenLifetime = time.Hour

// graphAudience is the audience of the access token the code grant returns
// with the ID token (Microsoft Graph's application ID, as Entra does for
// the openid/profile/email scopes).
const graphAudience = "00000003-0000-0000-c000-000000000000"

type authCode struct {
	clientID, redirectURI string
	user                  User
	nonce, scope          string
	challenge, method     string
	expires               time.Time
}

// signIns holds the users and the authorization codes not yet redeemed.
type signIns struct {
	mu    sync.Mutex
	users []User
	codes map[string]*authCode
}

func newSignIns(tenant string, users []User) *signIns {
	s := &signIns{codes: map[string]*authCode{}}
	for _, u := range users {
		if u.DisplayName == "" {
			u.DisplayName, _, _ = strings.Cut(u.UserPrincipalName, "@")
		}
		if u.ObjectID == "" {
			u.ObjectID = derivedUUID("user", tenant, strings.ToLower(u.UserPrincipalName))
		}
		u.Groups = slices.Clone(u.Groups)
		s.users = append(s.users, u)
	}
	return s
}

func (s *signIns) user(upn string) (User, bool) {
	for _, u := range s.users {
		if strings.EqualFold(u.UserPrincipalName, strings.TrimSpace(upn)) {
			return u, true
		}
	}
	return User{}, false
}

func (s *signIns) issue(c *authCode) string {
	code := randomSecret(48)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, v := range s.codes {
		if now.After(v.expires) {
			delete(s.codes, k)
		}
	}
	s.codes[code] = c
	return code
}

// redeem takes a code out (a code is redeemed once).
func (s *signIns) redeem(code string) (*authCode, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.codes[code]
	delete(s.codes, code)
	if !ok || time.Now().After(c.expires) {
		return nil, false
	}
	return c, true
}

// derivedUUID formats the first 16 bytes of SHA-256 over parts as a version
// 4 style GUID.
func derivedUUID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	var b [16]byte
	copy(b[:], sum[:16])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return formatUUID(b)
}

// Users returns the users who can sign in.
func (e *Emulator) Users() []User {
	return slices.Clone(e.signIns.users)
}

// SignInIssuer is the OpenID Connect issuer of the tenant's v2.0 endpoints
// (real Entra: https://login.microsoftonline.com/{tenant}/v2.0); its
// discovery document is at SignInIssuer() + "/.well-known/openid-configuration".
func (e *Emulator) SignInIssuer() string { return e.base + "/" + e.tenantID + "/v2.0" }

// AddSignInApplication registers a web application that signs people in
// with the authorization code flow at the given redirect URIs, with a
// client secret (a confidential client: the token endpoint requires the
// secret). An application of that display name is reused (its client ID
// and secret kept, its redirect URIs replaced).
func (e *Emulator) AddSignInApplication(displayName string, redirectURIs ...string) (ServicePrincipal, error) {
	for _, u := range redirectURIs {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" || p.Fragment != "" {
			return ServicePrincipal{}, fmt.Errorf("sign-in application %q: redirect URI %q: want an absolute http(s) URL without a fragment", displayName, u)
		}
	}
	sp, ok := e.ServicePrincipalByName(displayName)
	if !ok {
		var err error
		if sp, err = e.AddServicePrincipal(displayName); err != nil {
			return ServicePrincipal{}, err
		}
	}
	e.mu.Lock()
	if p := e.dir.byObject[sp.ObjectID]; p != nil {
		p.RedirectURIs = slices.Clone(redirectURIs)
	}
	e.mu.Unlock()
	e.markDirty()
	return sp, nil
}

// signInForm is the emulator's sign-in page: a button per user and a field
// to type a user principal name.
var signInForm = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in (gitaso emulator)</title>
<style>body{font-family:sans-serif;max-width:32rem;margin:3rem auto}button{margin:.2rem}.err{color:#a00}</style></head>
<body><h1>Sign in</h1>
<p>to <b>{{.App}}</b> with the gitaso emulator's Entra ID (tenant {{.Tenant}}). No password: this is a test identity provider.</p>
{{if .Error}}<p class="err" id="error">{{.Error}}</p>{{end}}
<form method="post" id="signin">
{{range .Hidden}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">
{{end}}<p>{{range .Users}}<button type="submit" name="user" value="{{.UserPrincipalName}}" class="user">{{.UserPrincipalName}}</button>
{{end}}</p>
<p><label>User principal name <input name="login" id="login" value="{{.Hint}}" autocomplete="off"></label>
<button type="submit" id="next">Sign in</button></p>
</form></body></html>
`))

type hiddenField struct{ Name, Value string }

// authorizeParams are the authorization request's parameters the form
// carries from the GET to the POST.
var authorizeParams = []string{"client_id", "response_type", "redirect_uri", "scope", "state", "nonce",
	"code_challenge", "code_challenge_method", "response_mode", "login_hint", "prompt"}

// serveAuthorize is /{tenant}/oauth2/v2.0/authorize: GET shows the sign-in
// form, POST (the form) signs the chosen user in and redirects back with a
// code. Errors about the client or the redirect URI are shown on the page
// (never redirected to an unregistered URI); the others are sent to the
// redirect URI as error and error_description, as Entra does.
func (e *Emulator) serveAuthorize(w http.ResponseWriter, r *http.Request, tenant string) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		authorizePage(w, http.StatusBadRequest, "AADSTS900144: the request could not be parsed.")
		return
	}
	q := r.Form
	if !strings.EqualFold(tenant, e.tenantID) {
		authorizePage(w, http.StatusBadRequest, fmt.Sprintf("AADSTS90002: Tenant '%s' not found.", tenant))
		return
	}
	clientID := strings.ToLower(q.Get("client_id"))
	e.mu.RLock()
	var app principal
	if p := e.dir.byClient[clientID]; p != nil {
		app = *p
	}
	e.mu.RUnlock()
	if app.ClientID == "" {
		authorizePage(w, http.StatusBadRequest, fmt.Sprintf("AADSTS700016: Application with identifier '%s' was not found in the directory '%s'.", q.Get("client_id"), e.tenantID))
		return
	}
	redirect := q.Get("redirect_uri")
	if !slices.Contains(app.RedirectURIs, redirect) {
		authorizePage(w, http.StatusBadRequest, fmt.Sprintf("AADSTS50011: The redirect URI '%s' specified in the request does not match the redirect URIs configured for the application '%s'.", redirect, app.ClientID))
		return
	}
	fail := func(code, desc string) {
		u, _ := url.Parse(redirect)
		v := u.Query()
		v.Set("error", code)
		v.Set("error_description", desc)
		if s := q.Get("state"); s != "" {
			v.Set("state", s)
		}
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", fmt.Sprintf("AADSTS700054: response_type '%s' is not enabled for the application; the emulator serves the authorization code flow (response_type=code).", q.Get("response_type")))
		return
	case q.Get("response_mode") != "" && q.Get("response_mode") != "query":
		fail("invalid_request", "AADSTS900144: the emulator answers with response_mode=query only.")
		return
	case !slices.Contains(strings.Fields(q.Get("scope")), "openid"):
		fail("invalid_scope", "AADSTS900144: The request body must contain the following parameter: 'scope' with 'openid' for a sign-in.")
		return
	}
	method := q.Get("code_challenge_method")
	if q.Get("code_challenge") != "" && method == "" {
		method = "plain" // RFC 7636 4.3
	}
	if method != "" && method != "S256" && method != "plain" {
		fail("invalid_request", fmt.Sprintf("AADSTS501491: Invalid code_challenge_method '%s'.", method))
		return
	}
	if q.Get("prompt") == "none" {
		fail("login_required", "AADSTS50058: A silent sign-in request was sent but no user is signed in.")
		return
	}
	showForm := func(status int, msg string) {
		data := struct {
			App, Tenant, Error, Hint string
			Users                    []User
			Hidden                   []hiddenField
		}{App: app.DisplayName, Tenant: e.tenantID, Error: msg, Hint: q.Get("login_hint"), Users: e.signIns.users}
		for _, k := range authorizeParams {
			if v := q.Get(k); v != "" && k != "login_hint" {
				data.Hidden = append(data.Hidden, hiddenField{k, v})
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Frame-Options", "DENY")
		w.WriteHeader(status)
		_ = signInForm.Execute(w, data)
	}
	if r.Method == http.MethodGet {
		showForm(http.StatusOK, "")
		return
	}
	name := r.PostForm.Get("user")
	if name == "" {
		name = r.PostForm.Get("login")
	}
	user, ok := e.signIns.user(name)
	if !ok {
		showForm(http.StatusOK, fmt.Sprintf("AADSTS50034: The user account %s does not exist in the %s directory. To sign into this application, the account must be added to the directory.", name, e.tenantID))
		return
	}
	code := e.signIns.issue(&authCode{clientID: app.ClientID, redirectURI: redirect, user: user, nonce: q.Get("nonce"),
		scope: q.Get("scope"), challenge: q.Get("code_challenge"), method: method, expires: time.Now().Add(codeLifetime)})
	e.log.Info("user signed in", "user", user.UserPrincipalName, "application", app.ClientID)
	u, _ := url.Parse(redirect)
	v := u.Query()
	v.Set("code", code)
	if s := q.Get("state"); s != "" {
		v.Set("state", s)
	}
	v.Set("session_state", derivedUUID("session", user.ObjectID, app.ClientID))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func authorizePage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "<!doctype html><title>Sign in error</title><h1>Sorry, but we're having trouble signing you in.</h1><p id=\"error\">%s</p>\n",
		template.HTMLEscapeString(msg))
}

// idClaims are the claims of a v2.0 ID token.
type idClaims struct {
	Aud               string   `json:"aud"`
	Iss               string   `json:"iss"`
	Iat               int64    `json:"iat"`
	Nbf               int64    `json:"nbf"`
	Exp               int64    `json:"exp"`
	Email             string   `json:"email,omitempty"`
	Groups            []string `json:"groups,omitempty"`
	Name              string   `json:"name"`
	Nonce             string   `json:"nonce,omitempty"`
	Oid               string   `json:"oid"`
	PreferredUsername string   `json:"preferred_username"`
	Sub               string   `json:"sub"`
	Tid               string   `json:"tid"`
	UTI               string   `json:"uti"`
	Ver               string   `json:"ver"`
}

// userAccessClaims are the claims of the access token issued to a user
// (delegated, for Microsoft Graph).
type userAccessClaims struct {
	Aud   string `json:"aud"`
	Iss   string `json:"iss"`
	Iat   int64  `json:"iat"`
	Nbf   int64  `json:"nbf"`
	Exp   int64  `json:"exp"`
	AppID string `json:"appid"`
	Name  string `json:"name"`
	Oid   string `json:"oid"`
	Scp   string `json:"scp"`
	Sub   string `json:"sub"`
	Tid   string `json:"tid"`
	UPN   string `json:"upn"`
	UTI   string `json:"uti"`
	Ver   string `json:"ver"`
}

// serveCodeGrant is the token endpoint's authorization_code grant.
func (e *Emulator) serveCodeGrant(w http.ResponseWriter, r *http.Request, f url.Values, info *reqInfo) {
	clientID, secret := strings.ToLower(f.Get("client_id")), f.Get("client_secret")
	if u, pw, ok := r.BasicAuth(); ok {
		if clientID == "" {
			clientID = strings.ToLower(u)
		}
		if secret == "" {
			secret = pw
		}
	}
	e.mu.RLock()
	var app principal
	if p := e.dir.byClient[clientID]; p != nil {
		app = *p
	}
	e.mu.RUnlock()
	if app.ClientID == "" {
		writeAADError(w, http.StatusBadRequest, "unauthorized_client", 700016, fmt.Sprintf("Application with identifier '%s' was not found in the directory '%s'.", clientID, e.tenantID))
		return
	}
	info.principal = app.ObjectID
	if secret == "" {
		writeAADError(w, http.StatusUnauthorized, "invalid_client", 7000218, "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.")
		return
	}
	if app.Secret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(app.Secret)) != 1 {
		writeAADError(w, http.StatusUnauthorized, "invalid_client", 7000215, "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '"+app.ClientID+"'.")
		return
	}
	c, ok := e.signIns.redeem(f.Get("code"))
	switch {
	case !ok:
		writeAADError(w, http.StatusBadRequest, "invalid_grant", 70008, "The provided authorization code or refresh token has expired due to inactivity or was already redeemed. Send a new interactive authorization request for this user and resource.")
		return
	case c.clientID != app.ClientID:
		writeAADError(w, http.StatusBadRequest, "invalid_grant", 70002, "The authorization code was issued to another application.")
		return
	case c.redirectURI != f.Get("redirect_uri"):
		writeAADError(w, http.StatusBadRequest, "invalid_grant", 500112, fmt.Sprintf("The reply address '%s' does not match the reply address '%s' provided when requesting Authorization code.", f.Get("redirect_uri"), c.redirectURI))
		return
	case !pkceMatches(c.challenge, c.method, f.Get("code_verifier")):
		writeAADError(w, http.StatusBadRequest, "invalid_grant", 501481, "The Code_Verifier does not match the code_challenge supplied in the authorization request.")
		return
	}
	now := time.Now()
	exp := now.Add(idTokenLifetime)
	id := idClaims{
		Aud: app.ClientID, Iss: e.SignInIssuer(), Iat: now.Unix(), Nbf: now.Unix(), Exp: exp.Unix(),
		Email: c.user.UserPrincipalName, Groups: c.user.Groups, Name: c.user.DisplayName, Nonce: c.nonce, Oid: c.user.ObjectID,
		PreferredUsername: c.user.UserPrincipalName, Sub: pairwiseSubject(c.user.ObjectID, app.ClientID), Tid: e.tenantID,
		UTI: newUUID(), Ver: "2.0",
	}
	idTok, err := e.tokens.sign(id)
	if err != nil {
		writeAADError(w, http.StatusInternalServerError, "server_error", 90033, "A transient error has occurred.")
		return
	}
	at, err := e.tokens.sign(userAccessClaims{Aud: graphAudience, Iss: e.issuer(e.tenantID), Iat: now.Unix(), Nbf: now.Unix(), Exp: exp.Unix(),
		AppID: app.ClientID, Name: c.user.DisplayName, Oid: c.user.ObjectID, Scp: "openid profile email User.Read",
		Sub: id.Sub, Tid: e.tenantID, UPN: c.user.UserPrincipalName, UTI: newUUID(), Ver: "1.0"})
	if err != nil {
		writeAADError(w, http.StatusInternalServerError, "server_error", 90033, "A transient error has occurred.")
		return
	}
	e.stats.tokenIssued()
	secs := int64(idTokenLifetime.Seconds())
	w.Header().Set("Cache-Control", "no-store, no-cache")
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "scope": "openid profile email User.Read",
		"expires_in": secs, "ext_expires_in": secs, "access_token": at, "id_token": idTok})
}

// pkceMatches checks a code verifier against the challenge of the
// authorization request (RFC 7636): none asked, none needed.
func pkceMatches(challenge, method, verifier string) bool {
	if challenge == "" {
		return verifier == ""
	}
	if verifier == "" {
		return false
	}
	got := verifier
	if method == "S256" {
		sum := sha256.Sum256([]byte(verifier))
		got = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}

// pairwiseSubject is the sub of a user's ID token for one application:
// Entra's sub is pairwise, a user has a different sub per application.
func pairwiseSubject(oid, clientID string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(oid) + "\x00" + strings.ToLower(clientID)))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:43]
}
