package emulator

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"sigs.k8s.io/yaml"
)

// Media types of a Helm chart stored in an OCI registry, exactly as `helm push` writes them (helm.sh/helm/v3
// pkg/registry), for chart pushers and pullers that do not import Helm's SDK.
const (
	HelmConfigMediaType     = "application/vnd.cncf.helm.config.v1+json"
	HelmChartLayerMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	HelmProvLayerMediaType  = "application/vnd.cncf.helm.chart.provenance.v1.prov"
	// OCIManifestMediaType is the media type of the manifests PushOCI stores.
	OCIManifestMediaType = "application/vnd.oci.image.manifest.v1+json"
)

// ACRTokenUsername is the user name that tells a registry the password is an ACR refresh token (what
// `az acr login --expose-token` prints as username), the null GUID.
const ACRTokenUsername = "00000000-0000-0000-0000-000000000000"

// ErrNoRegistry is returned when a registry name is not one the emulator serves (see WithRegistry).
var ErrNoRegistry = errors.New("registry is not served by the emulator")

const (
	acrIssuer          = "Azure Container Registry"
	acrRefreshLifetime = 3 * time.Hour
	acrAccessLifetime  = 75 * time.Minute
	acrAuthMessage     = "authentication required, visit https://aka.ms/acr/authorization for more information."
	acrRegistryTypeKey = "microsoft.containerregistry/registries"

	// The RBAC actions ACR checks (AcrPull, AcrPush and AcrDelete carry exactly these).
	acrPullAction   = "Microsoft.ContainerRegistry/registries/pull/read"
	acrPushAction   = "Microsoft.ContainerRegistry/registries/push/write"
	acrDeleteAction = "Microsoft.ContainerRegistry/registries/artifacts/delete"
)

// acrRegistry is one emulated container registry: an OCI distribution registry (go-containerregistry's
// pkg/registry, in memory) behind ACR's token authentication, on its own HTTPS listener.
type acrRegistry struct {
	e     *Emulator
	name  string
	host  string          // login server, "127.0.0.1:PORT"
	hosts map[string]bool // lower-cased host names that reach this registry (the login server and its aliases)
	inner http.Handler
	ln    net.Listener
	srv   *http.Server
}

// acrAccess is one entry of an ACR access token's "access" claim (the Docker token format).
type acrAccess struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// acrClaims are the claims of ACR refresh and access tokens, as ACR issues them (see Azure/acr docs/AAD-OAuth.md),
// plus the principal's object ID in oid. grant_type tells them apart: "refresh_token" for refresh tokens,
// "access_token" for access tokens.
type acrClaims struct {
	Jti       string       `json:"jti"`
	Sub       string       `json:"sub"`
	Nbf       int64        `json:"nbf"`
	Exp       int64        `json:"exp"`
	Iat       int64        `json:"iat"`
	Iss       string       `json:"iss"`
	Aud       string       `json:"aud"`
	Version   string       `json:"version"`
	GrantType string       `json:"grant_type"`
	Tenant    string       `json:"tenant,omitempty"`
	Oid       string       `json:"oid,omitempty"`
	AppID     string       `json:"appid,omitempty"`
	Access    *[]acrAccess `json:"access,omitempty"` // present (possibly empty) in access tokens only
	Roles     []string     `json:"roles"`
}

func (c *acrClaims) access() []acrAccess {
	if c.Access == nil {
		return nil
	}
	return *c.Access
}

// acrSubject is who an ACR credential stands for. limit, when set, caps what can be granted (a credential that is
// itself an access token).
type acrSubject struct {
	oid, appID string
	limit      []acrAccess
	limited    bool
}

// startRegistries starts the listener of every registry given WithRegistry.
func (e *Emulator) startRegistries() error {
	e.registries = map[string]*acrRegistry{}
	for _, name := range e.opts.registries {
		if _, dup := e.registries[strings.ToLower(name)]; dup {
			continue
		}
		reg, err := e.startRegistry(name)
		if err != nil {
			return err
		}
		e.registries[strings.ToLower(name)] = reg
		e.registryOrder = append(e.registryOrder, reg)
	}
	return nil
}

func validRegistryName(name string) bool {
	if len(name) < 5 || len(name) > 50 {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func (e *Emulator) startRegistry(name string) (*acrRegistry, error) {
	if !validRegistryName(name) {
		return nil, fmt.Errorf("registry %q: a registry name has 5 to 50 alphanumeric characters", name)
	}
	alias := strings.ToLower(name) + ".azurecr.io"
	cert, err := e.ca.serverCert(append(append(hostOf(e.opts.addr), e.opts.hostnames...), alias))
	if err != nil {
		return nil, err
	}
	listenHost := "127.0.0.1"
	if h := hostOf(e.opts.addr); len(h) == 1 && h[0] != "" {
		listenHost = h[0]
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(listenHost, "0"))
	if err != nil {
		return nil, fmt.Errorf("registry %q: listen: %w", name, err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	host := "127.0.0.1"
	if listenHost != "0.0.0.0" && listenHost != "::" {
		host = listenHost
	}
	reg := &acrRegistry{
		e: e, name: name, host: net.JoinHostPort(host, port), ln: ln,
		inner: registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)),
	}
	reg.hosts = map[string]bool{strings.ToLower(reg.host): true, "localhost:" + port: true, alias: true, alias + ":" + port: true}
	for _, h := range e.opts.hostnames {
		reg.hosts[strings.ToLower(net.JoinHostPort(h, port))] = true
	}
	reg.srv = &http.Server{
		Handler:           reg,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(e.log.Handler(), slog.LevelDebug),
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := reg.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("registry server stopped", "registry", name, "err", err)
		}
	}()
	e.log.Info("registry started", "registry", name, "loginServer", reg.host)
	return reg, nil
}

// closeRegistries stops every registry listener.
func (e *Emulator) closeRegistries(ctx context.Context) error {
	var errs []error
	for _, reg := range e.registryOrder {
		errs = append(errs, reg.srv.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// registry returns a served registry by name ("" means the first one given WithRegistry).
func (e *Emulator) registry(name string) (*acrRegistry, error) {
	if name == "" {
		if len(e.registryOrder) == 0 {
			return nil, fmt.Errorf("no registry: %w", ErrNoRegistry)
		}
		return e.registryOrder[0], nil
	}
	reg := e.registries[strings.ToLower(name)]
	if reg == nil {
		return nil, fmt.Errorf("%q: %w", name, ErrNoRegistry)
	}
	return reg, nil
}

// RegistryHost is the login server of a registry given WithRegistry ("" means the first one): "127.0.0.1:PORT",
// the host of the registry's own HTTPS listener, which serves /v2/ and ACR's /oauth2/exchange and /oauth2/token
// (its certificate, from the emulator's CA, also names NAME.azurecr.io). It is "" for a registry the emulator does
// not serve.
func (e *Emulator) RegistryHost(name string) string {
	reg, err := e.registry(name)
	if err != nil {
		return ""
	}
	return reg.host
}

// RegistryHosts lists the registries the emulator serves, registry name to login server.
func (e *Emulator) RegistryHosts() map[string]string {
	out := make(map[string]string, len(e.registryOrder))
	for _, reg := range e.registryOrder {
		out[reg.name] = reg.host
	}
	return out
}

// IssueRegistryRefreshToken mints an ACR refresh token of a registry ("" means the first one) for a principal (by
// object ID) with any expiry, what POST /oauth2/exchange returns: for tests that want registry credentials without
// an Entra token (password for ACRTokenUsername) or an expired one.
func (e *Emulator) IssueRegistryRefreshToken(registryName, principalObjectID string, expires time.Time) (string, error) {
	reg, err := e.registry(registryName)
	if err != nil {
		return "", fmt.Errorf("issue registry refresh token: %w", err)
	}
	e.mu.RLock()
	p := e.dir.byObject[strings.ToLower(principalObjectID)]
	var pc principal
	if p != nil {
		pc = *p
	}
	e.mu.RUnlock()
	if p == nil {
		return "", fmt.Errorf("issue registry refresh token: principal %s does not exist", principalObjectID)
	}
	return reg.mint(acrSubject{oid: pc.ObjectID, appID: pc.ClientID}, "refresh_token", nil, expires)
}

func (reg *acrRegistry) mint(s acrSubject, grantType string, access []acrAccess, exp time.Time) (string, error) {
	now := time.Now()
	c := acrClaims{
		Jti: newUUID(), Sub: s.oid, Nbf: now.Add(-5 * time.Minute).Unix(), Exp: exp.Unix(), Iat: now.Unix(),
		Iss: acrIssuer, Aud: reg.host, Version: "1.0", GrantType: grantType, Tenant: reg.e.tenantID,
		Oid: s.oid, AppID: s.appID, Roles: []string{},
	}
	if grantType == "access_token" {
		if access == nil {
			access = []acrAccess{}
		}
		c.Access = &access
	}
	return reg.e.tokens.sign(c)
}

// verifyToken checks an ACR token of this registry: signature, issuer, audience, expiry and kind.
func (reg *acrRegistry) verifyToken(tok, grantType string) (*acrClaims, error) {
	var c acrClaims
	if err := reg.e.tokens.verify(tok, &c); err != nil {
		return nil, err
	}
	if c.Iss != acrIssuer || !strings.EqualFold(c.Aud, reg.host) || c.GrantType != grantType {
		return nil, errors.New("the token was not issued by this registry")
	}
	if c.Exp <= time.Now().Unix() {
		return nil, errors.New("the token has expired")
	}
	return &c, nil
}

// ServeHTTP serves the registry's data plane: ACR's OAuth endpoints and the distribution API.
func (reg *acrRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	info := &reqInfo{typ: "registry"}
	defer func() { reg.e.stats.record(r, rec.status, info, start) }()
	switch p := r.URL.Path; {
	case p == "/oauth2/exchange":
		reg.serveExchange(rec, r, info)
	case p == "/oauth2/token":
		reg.serveToken(rec, r, info)
	case p == "/v2" || strings.HasPrefix(p, "/v2/"):
		reg.serveV2(rec, r, info)
	default:
		http.NotFound(rec, r)
	}
}

// writeACRError writes the distribution error body ACR answers with.
func writeACRError(w http.ResponseWriter, status int, code, msg string, detail any) {
	e := map[string]any{"code": code, "message": msg}
	if detail != nil {
		e["detail"] = detail
	}
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	writeJSON(w, status, map[string]any{"errors": []any{e}})
}

// challengeHost is the host a client used, when it is one of the registry's names, else the login server.
func (reg *acrRegistry) challengeHost(r *http.Request) string {
	if reg.hosts[strings.ToLower(r.Host)] {
		return r.Host
	}
	return reg.host
}

func (reg *acrRegistry) validService(s string) bool { return reg.hosts[strings.ToLower(s)] }

// serveExchange implements POST /oauth2/exchange: an Entra ID access token for ARM, issued by this emulator, for
// an ACR refresh token.
func (reg *acrRegistry) serveExchange(w http.ResponseWriter, r *http.Request, info *reqInfo) {
	if r.Method != http.MethodPost {
		http.NotFound(w, r) // as ACR answers anything but POST
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		writeACRError(w, http.StatusBadRequest, "BAD_REQUEST", "The request body is not a valid form.", nil)
		return
	}
	f := r.PostForm
	switch gt := f.Get("grant_type"); gt {
	case "access_token":
	case "":
		writeACRError(w, http.StatusBadRequest, "BAD_REQUEST", "grant_type is required.", nil)
		return
	default:
		writeACRError(w, http.StatusBadRequest, "UNSUPPORTED", fmt.Sprintf("grant_type '%s' is not supported; use access_token.", gt), nil)
		return
	}
	if s := f.Get("service"); !reg.validService(s) {
		writeACRError(w, http.StatusBadRequest, "BAD_REQUEST", fmt.Sprintf("service '%s' is not this registry ('%s').", s, reg.host), nil)
		return
	}
	if t := f.Get("tenant"); t != "" && !strings.EqualFold(t, reg.e.tenantID) {
		info.code = "UNAUTHORIZED"
		writeACRError(w, http.StatusUnauthorized, "UNAUTHORIZED", fmt.Sprintf("The tenant '%s' is not the tenant of the registry.", t), nil)
		return
	}
	tok := f.Get("access_token")
	if tok == "" {
		writeACRError(w, http.StatusBadRequest, "BAD_REQUEST", "access_token is required.", nil)
		return
	}
	c, msg := reg.e.verifyEntraARMToken(tok)
	if c == nil {
		info.code = "UNAUTHORIZED"
		writeACRError(w, http.StatusUnauthorized, "UNAUTHORIZED", msg, nil)
		return
	}
	info.principal = c.Oid
	refresh, err := reg.mint(acrSubject{oid: c.Oid, appID: c.AppID}, "refresh_token", nil, time.Now().Add(acrRefreshLifetime))
	if err != nil {
		writeACRError(w, http.StatusInternalServerError, "UNKNOWN", "token signing failed", nil)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"refresh_token": refresh})
}

// verifyEntraARMToken checks an Entra ID access token the way ACR does before an exchange: signed by this
// emulator's Entra ID, for this tenant, for ARM's audience, unexpired, of a principal that exists. It returns the
// claims, or nil and the reason.
func (e *Emulator) verifyEntraARMToken(tok string) (*accessClaims, string) {
	var c accessClaims
	if err := e.tokens.verify(tok, &c); err != nil || c.Iss != e.issuer(c.Tid) {
		return nil, "The access token is invalid."
	}
	if c.Exp <= time.Now().Unix() {
		return nil, "The access token has expired."
	}
	if !allowedAudiences[c.Aud] {
		return nil, fmt.Sprintf("The access token has the wrong audience '%s'; it must be for Azure Resource Manager.", c.Aud)
	}
	if !strings.EqualFold(c.Tid, e.tenantID) {
		return nil, fmt.Sprintf("The access token is from the wrong tenant '%s'.", c.Tid)
	}
	e.mu.RLock()
	exists := e.dir.byObject[strings.ToLower(c.Oid)] != nil
	e.mu.RUnlock()
	if !exists {
		return nil, "The principal of the access token does not exist."
	}
	return &c, ""
}

// basicSubject resolves basic credentials: ACRTokenUsername with an ACR refresh (or access) token of this
// registry, or a service principal's client ID and secret.
func (reg *acrRegistry) basicSubject(user, pass string) (acrSubject, bool) {
	if user == ACRTokenUsername {
		if c, err := reg.verifyToken(pass, "refresh_token"); err == nil {
			return acrSubject{oid: c.Oid, appID: c.AppID}, true
		}
		if c, err := reg.verifyToken(pass, "access_token"); err == nil {
			return acrSubject{oid: c.Oid, appID: c.AppID, limit: c.access(), limited: true}, true
		}
		return acrSubject{}, false
	}
	e := reg.e
	e.mu.RLock()
	p := e.dir.byClient[strings.ToLower(user)]
	var pc principal
	if p != nil {
		pc = *p
	}
	e.mu.RUnlock()
	if p == nil || pc.Secret == "" || subtle.ConstantTimeCompare([]byte(pass), []byte(pc.Secret)) != 1 {
		return acrSubject{}, false
	}
	return acrSubject{oid: pc.ObjectID, appID: pc.ClientID}, true
}

// subjectExists reports whether the principal behind a credential still exists.
func (e *Emulator) subjectExists(s acrSubject) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.dir.byObject[strings.ToLower(s.oid)] != nil
}

// serveToken implements /oauth2/token: POST grant_type=refresh_token (refresh_token, service, scope) or
// grant_type=password (username, password), and GET ?service=&scope= with basic credentials.
func (reg *acrRegistry) serveToken(w http.ResponseWriter, r *http.Request, info *reqInfo) {
	var (
		subj    acrSubject
		ok      bool
		service string
		scopes  []string
	)
	unauthorized := func(msg string) {
		info.code = "UNAUTHORIZED"
		writeACRError(w, http.StatusUnauthorized, "UNAUTHORIZED", msg, nil)
	}
	switch r.Method {
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			writeACRError(w, http.StatusBadRequest, "BAD_REQUEST", "The request body is not a valid form.", nil)
			return
		}
		f := r.PostForm
		service, scopes = f.Get("service"), f["scope"]
		switch gt := f.Get("grant_type"); gt {
		case "refresh_token":
			c, err := reg.verifyToken(f.Get("refresh_token"), "refresh_token")
			if err != nil {
				unauthorized("The refresh token is invalid or expired: " + err.Error() + ".")
				return
			}
			subj, ok = acrSubject{oid: c.Oid, appID: c.AppID}, true
		case "password":
			subj, ok = reg.basicSubject(f.Get("username"), f.Get("password"))
			if !ok {
				unauthorized(acrAuthMessage)
				return
			}
		default:
			writeACRError(w, http.StatusBadRequest, "UNSUPPORTED", fmt.Sprintf("grant_type '%s' is not supported; use refresh_token or password.", gt), nil)
			return
		}
	case http.MethodGet:
		q := r.URL.Query()
		service, scopes = q.Get("service"), q["scope"]
		user, pass, has := r.BasicAuth()
		if !has {
			unauthorized(acrAuthMessage) // anonymous pull is not enabled
			return
		}
		if subj, ok = reg.basicSubject(user, pass); !ok {
			unauthorized(acrAuthMessage)
			return
		}
	default:
		http.NotFound(w, r)
		return
	}
	if !reg.validService(service) {
		writeACRError(w, http.StatusBadRequest, "BAD_REQUEST", fmt.Sprintf("service '%s' is not this registry ('%s').", service, reg.host), nil)
		return
	}
	info.principal = subj.oid
	if !reg.e.subjectExists(subj) {
		unauthorized("The principal of the credential does not exist.")
		return
	}
	access := reg.grant(subj, splitScopes(scopes))
	exp := time.Now().Add(acrAccessLifetime)
	tok, err := reg.mint(subj, "access_token", access, exp)
	if err != nil {
		writeACRError(w, http.StatusInternalServerError, "UNKNOWN", "token signing failed", nil)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok})
}

// splitScopes splits scope parameters (repeated, or several in one separated by spaces) into scopes.
func splitScopes(in []string) []acrAccess {
	var out []acrAccess
	for _, s := range in {
		for _, one := range strings.Fields(s) {
			i, j := strings.IndexByte(one, ':'), strings.LastIndexByte(one, ':')
			if i < 0 || j <= i {
				continue
			}
			out = append(out, acrAccess{Type: one[:i], Name: one[i+1 : j], Actions: strings.Split(one[j+1:], ",")})
		}
	}
	return out
}

// rbacScope is the ARM scope ACR authorizes against: the Microsoft.ContainerRegistry/registries resource of the
// registry's name when ARM holds one, else the default subscription. Caller holds e.mu.
func (reg *acrRegistry) rbacScope() string {
	for _, r := range reg.e.store.ofType(acrRegistryTypeKey, "") {
		if strings.EqualFold(r.Name, reg.name) {
			return r.key
		}
	}
	return "/subscriptions/" + strings.ToLower(reg.e.subscriptionID)
}

// acrActions are the repository actions of ACR's scopes and the RBAC actions that grant them.
var acrActions = []struct{ name, rbac string }{{"pull", acrPullAction}, {"push", acrPushAction}, {"delete", acrDeleteAction}}

// grant returns, for each requested scope, the actions the subject holds, as ACR fills an access token's "access"
// claim: pull needs Microsoft.ContainerRegistry/registries/pull/read (AcrPull, AcrPush, Reader, Contributor,
// Owner), push .../push/write (AcrPush, Contributor, Owner), delete .../artifacts/delete (AcrDelete, Contributor,
// Owner), "*" all three; registry:catalog:* needs pull. Role assignments are read when the token is issued.
func (reg *acrRegistry) grant(s acrSubject, want []acrAccess) []acrAccess {
	e := reg.e
	e.mu.RLock()
	target := reg.rbacScope()
	allowed := map[string]bool{}
	for _, a := range acrActions {
		allowed[a.name] = e.rbac.allowed(s.oid, strings.ToLower(a.rbac), target)
	}
	e.mu.RUnlock()
	var out []acrAccess
	for _, w := range want {
		var acts []string
		add := func(a string) {
			if s.limited && !accessAllows(s.limit, w.Type, w.Name, a) {
				return
			}
			for _, have := range acts {
				if have == a {
					return
				}
			}
			acts = append(acts, a)
		}
		switch {
		case w.Type == "repository" && w.Name != "":
			for _, a := range w.Actions {
				switch a {
				case "pull", "push", "delete":
					if allowed[a] {
						add(a)
					}
				case "*":
					for _, x := range acrActions {
						if allowed[x.name] {
							add(x.name)
						}
					}
				}
			}
		case w.Type == "registry" && w.Name == "catalog":
			for _, a := range w.Actions {
				if a == "*" && allowed["pull"] {
					add("*")
				}
			}
		}
		if len(acts) > 0 {
			out = append(out, acrAccess{Type: w.Type, Name: w.Name, Actions: acts})
		}
	}
	return out
}

// accessAllows reports whether an access claim covers action on type:name.
func accessAllows(access []acrAccess, typ, name, action string) bool {
	for _, a := range access {
		if a.Type != typ || a.Name != name {
			continue
		}
		for _, have := range a.Actions {
			if have == action || have == "*" {
				return true
			}
		}
	}
	return false
}

// requiredScope returns the scope a distribution API request needs: type, name and action ("" type for /v2/ itself).
func requiredScope(r *http.Request) (typ, name, action string) {
	p := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v2"), "/")
	if p == "" {
		return "", "", ""
	}
	if p == "/_catalog" {
		return "registry", "catalog", "*"
	}
	p = strings.TrimPrefix(p, "/")
	for _, marker := range []string{"/manifests/", "/blobs/", "/tags/", "/referrers/"} {
		if i := strings.LastIndex(p, marker); i > 0 {
			name = p[:i]
			break
		}
	}
	if name == "" {
		return "repository", p, "pull"
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		action = "pull"
	case http.MethodDelete:
		action = "delete"
		if strings.Contains(p[len(name):], "/blobs/uploads/") {
			action = "push" // cancelling an upload
		}
	default:
		action = "push"
	}
	return "repository", name, action
}

// serveV2 authenticates and authorizes a distribution API request, then hands it to the registry.
func (reg *acrRegistry) serveV2(w http.ResponseWriter, r *http.Request, info *reqInfo) {
	typ, name, action := requiredScope(r)
	host := reg.challengeHost(r)
	challenge := func(errParam string) {
		v := fmt.Sprintf(`Bearer realm="https://%s/oauth2/token",service="%s"`, host, host)
		if typ != "" {
			scopeActions := action
			if action == "push" {
				scopeActions = "push,pull"
			}
			v += fmt.Sprintf(`,scope="%s:%s:%s"`, typ, name, scopeActions)
		}
		if errParam != "" {
			v += fmt.Sprintf(`,error="%s"`, errParam)
		}
		w.Header().Set("WWW-Authenticate", v)
		info.code = "UNAUTHORIZED"
		var detail any
		if typ != "" {
			detail = []map[string]string{{"Type": typ, "Name": name, "Action": action}}
		}
		writeACRError(w, http.StatusUnauthorized, "UNAUTHORIZED", acrAuthMessage, detail)
	}
	// A cross-repository mount (POST .../blobs/uploads/?mount=&from=) also reads the source repository.
	var from string
	if action == "push" && r.URL.Query().Get("mount") != "" {
		from = r.URL.Query().Get("from")
	}
	h := r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(h, " ")
	var access []acrAccess
	switch {
	case h == "":
		challenge("")
		return
	case strings.EqualFold(scheme, "Bearer"):
		c, err := reg.verifyToken(strings.TrimSpace(cred), "access_token")
		if err != nil {
			challenge("invalid_token")
			return
		}
		info.principal = c.Oid
		access = c.access()
	case strings.EqualFold(scheme, "Basic"):
		user, pass, ok := r.BasicAuth()
		if !ok {
			challenge("invalid_token")
			return
		}
		subj, ok := reg.basicSubject(user, pass)
		if !ok || !reg.e.subjectExists(subj) {
			challenge("invalid_token")
			return
		}
		info.principal = subj.oid
		if typ != "" {
			want := []acrAccess{{Type: typ, Name: name, Actions: []string{action}}}
			if from != "" {
				want = append(want, acrAccess{Type: "repository", Name: from, Actions: []string{"pull"}})
			}
			access = reg.grant(subj, want)
		}
	default:
		challenge("invalid_token")
		return
	}
	granted := typ == "" || accessAllows(access, typ, name, action)
	if granted && from != "" {
		granted = accessAllows(access, "repository", from, "pull")
	}
	if !granted {
		challenge("insufficient_scope")
		return
	}
	reg.inner.ServeHTTP(w, r)
}

// OCIBlob is one blob of an artifact: its media type and content.
type OCIBlob struct {
	MediaType string
	Data      []byte
}

// OCIArtifact is what PushOCI stores: an OCI image manifest (OCIManifestMediaType) with its config and layers.
type OCIArtifact struct {
	ArtifactType string // optional (OCI 1.1)
	Config       OCIBlob
	Layers       []OCIBlob
	Annotations  map[string]string
}

type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int    `json:"size"`
}

type ociManifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	ArtifactType  string            `json:"artifactType,omitempty"`
	Config        ociDescriptor     `json:"config"`
	Layers        []ociDescriptor   `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// memResponse is an in-process http.ResponseWriter for requests the emulator sends to its own registries.
type memResponse struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (m *memResponse) Header() http.Header { return m.h }
func (m *memResponse) WriteHeader(code int) {
	if m.status == 0 {
		m.status = code
	}
}
func (m *memResponse) Write(b []byte) (int, error) {
	if m.status == 0 {
		m.status = http.StatusOK
	}
	return m.body.Write(b)
}

// direct sends a distribution API request to the registry's storage, past authentication (as an administrator
// would write it), and fails unless the answer has the wanted status.
func (reg *acrRegistry) direct(ctx context.Context, method, target, contentType string, body []byte, want int) (*memResponse, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp := &memResponse{h: http.Header{}}
	reg.inner.ServeHTTP(resp, req)
	if resp.status == 0 {
		resp.status = http.StatusOK
	}
	if resp.status != want {
		return resp, fmt.Errorf("%s %s: %d %s", method, target, resp.status, strings.TrimSpace(resp.body.String()))
	}
	return resp, nil
}

// PushOCI stores an artifact as repo:tag in a registry ("" means the first one given WithRegistry), past
// authentication, and returns the manifest's digest. Tests use it to put content where production code pulls it
// with its own credentials.
func (e *Emulator) PushOCI(ctx context.Context, registryName, repo, tag string, a OCIArtifact) (string, error) {
	reg, err := e.registry(registryName)
	if err != nil {
		return "", fmt.Errorf("push %s:%s: %w", repo, tag, err)
	}
	if repo == "" || strings.Trim(repo, "/") != repo || tag == "" {
		return "", fmt.Errorf("push %q:%q: a repository and a tag are required", repo, tag)
	}
	if a.Config.MediaType == "" {
		a.Config = OCIBlob{MediaType: "application/vnd.oci.empty.v1+json", Data: []byte("{}")}
	}
	m := ociManifest{SchemaVersion: 2, MediaType: OCIManifestMediaType, ArtifactType: a.ArtifactType,
		Annotations: a.Annotations, Layers: []ociDescriptor{}}
	for i, b := range append([]OCIBlob{a.Config}, a.Layers...) {
		d := ociDescriptor{MediaType: b.MediaType, Digest: sha256Digest(b.Data), Size: len(b.Data)}
		if _, err := reg.direct(ctx, http.MethodPost, "/v2/"+repo+"/blobs/uploads/?digest="+d.Digest, "application/octet-stream", b.Data, http.StatusCreated); err != nil {
			return "", fmt.Errorf("push %s:%s: blob: %w", repo, tag, err)
		}
		if i == 0 {
			m.Config = d
		} else {
			m.Layers = append(m.Layers, d)
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("push %s:%s: encode manifest: %w", repo, tag, err)
	}
	if _, err := reg.direct(ctx, http.MethodPut, "/v2/"+repo+"/manifests/"+tag, OCIManifestMediaType, raw, http.StatusCreated); err != nil {
		return "", fmt.Errorf("push %s:%s: manifest: %w", repo, tag, err)
	}
	return sha256Digest(raw), nil
}

// HelmChartPush is what PushHelmChart stored.
type HelmChartPush struct {
	Ref        string // HOST/NAMESPACE/NAME:TAG, what `helm pull oci://...` takes (without the scheme)
	Repository string // NAMESPACE/NAME
	Tag        string // the chart version, "+" written as "_" as Helm does
	Digest     string // of the manifest
	Name       string
	Version    string
}

// PushHelmChart stores a packaged chart (a .tgz as `helm package` writes it) in a registry ("" means the first one)
// the way `helm push CHART oci://HOST/NAMESPACE` does: repository NAMESPACE/<chart name> (NAMESPACE may be ""), tag
// the chart version, config the chart's metadata as JSON (HelmConfigMediaType), one layer the .tgz
// (HelmChartLayerMediaType), and the org.opencontainers.image annotations Helm sets.
func (e *Emulator) PushHelmChart(ctx context.Context, registryName, namespace string, chart []byte) (HelmChartPush, error) {
	meta, err := helmChartMetadata(chart)
	if err != nil {
		return HelmChartPush{}, fmt.Errorf("push helm chart: %w", err)
	}
	var m struct {
		Name, Version, Description, Home string
		Sources                          []string
		Annotations                      map[string]string
	}
	if err := json.Unmarshal(meta, &m); err != nil || m.Name == "" || m.Version == "" {
		return HelmChartPush{}, fmt.Errorf("push helm chart: Chart.yaml needs a name and a version")
	}
	ann := map[string]string{}
	for k, v := range m.Annotations {
		ann[k] = v
	}
	set := func(k, v string) {
		if v != "" {
			ann[k] = v
		}
	}
	set("org.opencontainers.image.description", m.Description)
	set("org.opencontainers.image.title", m.Name)
	set("org.opencontainers.image.version", m.Version)
	set("org.opencontainers.image.url", m.Home)
	set("org.opencontainers.image.created", time.Now().UTC().Format(time.RFC3339))
	if len(m.Sources) > 0 {
		set("org.opencontainers.image.source", m.Sources[0])
	}
	repo := strings.Trim(path.Join(strings.Trim(namespace, "/"), m.Name), "/")
	tag := strings.ReplaceAll(m.Version, "+", "_")
	dg, err := e.PushOCI(ctx, registryName, repo, tag, OCIArtifact{
		Config:      OCIBlob{MediaType: HelmConfigMediaType, Data: meta},
		Layers:      []OCIBlob{{MediaType: HelmChartLayerMediaType, Data: chart}},
		Annotations: ann,
	})
	if err != nil {
		return HelmChartPush{}, err
	}
	return HelmChartPush{Ref: e.RegistryHost(registryName) + "/" + repo + ":" + tag, Repository: repo, Tag: tag, Digest: dg,
		Name: m.Name, Version: m.Version}, nil
}

// helmChartMetadata returns the Chart.yaml of a packaged chart (NAME/Chart.yaml in the .tgz) as JSON.
func helmChartMetadata(chart []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(chart))
	if err != nil {
		return nil, fmt.Errorf("read chart archive: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the chart archive has no Chart.yaml")
		}
		if err != nil {
			return nil, fmt.Errorf("read chart archive: %w", err)
		}
		parts := strings.Split(strings.TrimPrefix(h.Name, "./"), "/")
		if len(parts) != 2 || parts[1] != "Chart.yaml" || h.Typeflag != tar.TypeReg {
			continue
		}
		y, err := io.ReadAll(io.LimitReader(tr, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("read Chart.yaml: %w", err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			return nil, fmt.Errorf("parse Chart.yaml: %w", err)
		}
		return j, nil
	}
}

// RegistryRepositories lists the repositories of a registry ("" means the first one), sorted.
func (e *Emulator) RegistryRepositories(ctx context.Context, registryName string) ([]string, error) {
	reg, err := e.registry(registryName)
	if err != nil {
		return nil, err
	}
	resp, err := reg.direct(ctx, http.MethodGet, "/v2/_catalog?n=10000", "", nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var out struct {
		Repositories []string `json:"repositories"`
	}
	if err := json.Unmarshal(resp.body.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("decode catalog: %w", err)
	}
	sort.Strings(out.Repositories)
	return out.Repositories, nil
}
