package emulator

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	kindServicePrincipal = "ServicePrincipal"
	kindManagedIdentity  = "ManagedIdentity"

	// DefaultAssertionAudience is the audience of workload identity tokens (Azure AD token exchange).
	DefaultAssertionAudience = "api://AzureADTokenExchange"
	clientAssertionType      = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// ServicePrincipal is an application identity with a client secret. It implements slog.LogValuer so that the
// secret never reaches a log.
type ServicePrincipal struct {
	DisplayName string `json:"displayName"`
	ClientID    string `json:"clientId"`
	ObjectID    string `json:"objectId"`
	Secret      string `json:"secret,omitempty"`
}

// LogValue hides the secret.
func (sp ServicePrincipal) LogValue() slog.Value {
	return slog.GroupValue(slog.String("displayName", sp.DisplayName), slog.String("clientId", sp.ClientID),
		slog.String("objectId", sp.ObjectID))
}

// principal is a directory object that can obtain tokens: a service principal (client secret) or a managed
// identity (user-assigned through ARM, system-assigned on a resource, or the emulator host's identity).
type principal struct {
	ObjectID    string `json:"objectId"`
	ClientID    string `json:"clientId"`
	DisplayName string `json:"displayName"`
	Kind        string `json:"kind"`
	Secret      string `json:"secret,omitempty"`
	ResourceID  string `json:"resourceId,omitempty"`
	// RedirectURIs are where an application registration that signs people
	// in may receive authorization codes (signin.go).
	RedirectURIs []string `json:"redirectUris,omitempty"`
}

// directory indexes principals by object ID and client ID (lower-cased).
type directory struct {
	byObject map[string]*principal
	byClient map[string]*principal
}

func newDirectory() *directory {
	return &directory{byObject: map[string]*principal{}, byClient: map[string]*principal{}}
}

func (d *directory) add(p *principal) {
	d.byObject[strings.ToLower(p.ObjectID)] = p
	if p.ClientID != "" {
		d.byClient[strings.ToLower(p.ClientID)] = p
	}
}

func (d *directory) remove(objectID string) {
	p := d.byObject[strings.ToLower(objectID)]
	if p == nil {
		return
	}
	delete(d.byObject, strings.ToLower(objectID))
	if p.ClientID != "" && d.byClient[strings.ToLower(p.ClientID)] == p {
		delete(d.byClient, strings.ToLower(p.ClientID))
	}
}

// AddServicePrincipal registers an application with a generated client ID, object ID and secret.
func (e *Emulator) AddServicePrincipal(displayName string) (ServicePrincipal, error) {
	return e.addPrincipal(PrincipalSpec{ServicePrincipal: ServicePrincipal{DisplayName: displayName}})
}

// AddPrincipal registers a service principal with the given IDs and secret (generated when empty) and grants it
// the given roles. An existing principal with the same object ID is replaced.
func (e *Emulator) AddPrincipal(spec PrincipalSpec) (ServicePrincipal, error) {
	return e.addPrincipal(spec)
}

func (e *Emulator) addPrincipal(spec PrincipalSpec) (ServicePrincipal, error) {
	sp := spec.ServicePrincipal
	if sp.ObjectID == "" {
		sp.ObjectID = newUUID()
	}
	if sp.ClientID == "" {
		sp.ClientID = newUUID()
	}
	if sp.Secret == "" {
		sp.Secret = randomSecret(40)
	}
	if sp.DisplayName == "" {
		sp.DisplayName = "sp-" + sp.ClientID[:8]
	}
	if !isGUID(sp.ObjectID) || !isGUID(sp.ClientID) {
		return ServicePrincipal{}, fmt.Errorf("add principal %q: object and client IDs must be GUIDs", sp.DisplayName)
	}
	sp.ObjectID, sp.ClientID = strings.ToLower(sp.ObjectID), strings.ToLower(sp.ClientID)
	e.mu.Lock()
	if old := e.dir.byClient[sp.ClientID]; old != nil && !strings.EqualFold(old.ObjectID, sp.ObjectID) {
		e.mu.Unlock()
		return ServicePrincipal{}, fmt.Errorf("add principal %q: client ID %s is already in use", sp.DisplayName, sp.ClientID)
	}
	e.dir.remove(sp.ObjectID)
	e.dir.add(&principal{ObjectID: sp.ObjectID, ClientID: sp.ClientID, DisplayName: sp.DisplayName, Kind: kindServicePrincipal, Secret: sp.Secret})
	e.mu.Unlock()
	e.markDirty()
	for _, g := range spec.Roles {
		if err := e.AssignRole(sp.ObjectID, g.Role, g.Scope); err != nil {
			return ServicePrincipal{}, fmt.Errorf("add principal %q: %w", sp.DisplayName, err)
		}
	}
	e.log.Debug("service principal added", "principal", sp)
	return sp, nil
}

// ServicePrincipalByName returns a service principal (with its secret) by display name.
func (e *Emulator) ServicePrincipalByName(displayName string) (ServicePrincipal, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, p := range e.dir.byObject {
		if p.Kind == kindServicePrincipal && p.DisplayName == displayName {
			return ServicePrincipal{DisplayName: p.DisplayName, ClientID: p.ClientID, ObjectID: p.ObjectID, Secret: p.Secret}, true
		}
	}
	return ServicePrincipal{}, false
}

// ManagedIdentity describes a managed identity known to the directory.
type ManagedIdentity struct {
	ClientID, PrincipalID, ResourceID string
}

// HostManagedIdentity is the identity the managed identity endpoint serves when no identity is selected
// (like a VM's system-assigned identity). It has no roles unless assigned.
func (e *Emulator) HostManagedIdentity() ManagedIdentity {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return ManagedIdentity{ClientID: e.hostMI.ClientID, PrincipalID: e.hostMI.ObjectID}
}

// accessClaims are the claims of an emulator access token (a v1 Entra ID token as ARM receives it).
type accessClaims struct {
	Aud      string `json:"aud"`
	Iss      string `json:"iss"`
	Iat      int64  `json:"iat"`
	Nbf      int64  `json:"nbf"`
	Exp      int64  `json:"exp"`
	AppID    string `json:"appid"`
	Azp      string `json:"azp,omitempty"`
	AppIDAcr string `json:"appidacr,omitempty"`
	IDType   string `json:"idtyp"`
	Oid      string `json:"oid"`
	Sub      string `json:"sub"`
	Tid      string `json:"tid"`
	UTI      string `json:"uti"`
	Ver      string `json:"ver"`
	MIRID    string `json:"xms_mirid,omitempty"`
}

func (e *Emulator) issuer(tenant string) string { return "https://sts.windows.net/" + tenant + "/" }

func (e *Emulator) mintToken(p *principal, audience string, exp time.Time) (string, error) {
	now := time.Now()
	c := accessClaims{
		Aud: audience, Iss: e.issuer(e.tenantID), Iat: now.Unix(), Nbf: now.Add(-5 * time.Minute).Unix(), Exp: exp.Unix(),
		AppID: p.ClientID, Azp: p.ClientID, AppIDAcr: "1", IDType: "app", Oid: p.ObjectID, Sub: p.ObjectID,
		Tid: e.tenantID, UTI: newUUID(), Ver: "1.0", MIRID: p.ResourceID,
	}
	if p.Kind == kindManagedIdentity {
		c.AppIDAcr = "2"
	}
	tok, err := e.tokens.sign(c)
	if err != nil {
		return "", err
	}
	e.stats.tokenIssued()
	return tok, nil
}

// IssueAccessToken mints an access token for a principal (by object ID) with any audience and expiry, for tests
// of ARM's token checks (expired tokens, wrong audiences).
func (e *Emulator) IssueAccessToken(principalObjectID, audience string, expires time.Time) (string, error) {
	e.mu.RLock()
	p := e.dir.byObject[strings.ToLower(principalObjectID)]
	e.mu.RUnlock()
	if p == nil {
		return "", fmt.Errorf("issue access token: principal %s does not exist", principalObjectID)
	}
	return e.mintToken(p, audience, expires)
}

// saClaims are the claims of a service-account (workload identity) token.
type saClaims struct {
	Iss string   `json:"iss"`
	Sub string   `json:"sub"`
	Aud []string `json:"aud"`
	Iat int64    `json:"iat"`
	Nbf int64    `json:"nbf"`
	Exp int64    `json:"exp"`
	JTI string   `json:"jti"`
}

// IssueServiceAccountToken mints a workload identity token (what a Kubernetes cluster projects into a pod) with the
// given issuer (OIDCIssuer() when empty), subject (e.g. "system:serviceaccount:team-a:default") and audiences
// (DefaultAssertionAudience when none). The emulator acts as the OIDC issuer of every federated credential: the token
// endpoint accepts a client assertion signed with the emulator's service-account key whose iss/sub/aud match a
// federatedIdentityCredentials child of the user-assigned identity named by client_id.
func (e *Emulator) IssueServiceAccountToken(issuer, subject string, audiences ...string) (string, error) {
	return e.issueSAToken(issuer, subject, audiences, time.Hour)
}

func (e *Emulator) issueSAToken(issuer, subject string, audiences []string, lifetime time.Duration) (string, error) {
	if subject == "" {
		return "", errors.New("issue service account token: subject is required")
	}
	if issuer == "" {
		issuer = e.OIDCIssuer()
	}
	if len(audiences) == 0 {
		audiences = []string{DefaultAssertionAudience}
	}
	if lifetime <= 0 {
		lifetime = time.Hour
	}
	now := time.Now()
	return e.saKeys.sign(saClaims{Iss: issuer, Sub: subject, Aud: audiences, Iat: now.Unix(), Nbf: now.Unix(),
		Exp: now.Add(lifetime).Unix(), JTI: newUUID()})
}

// writeAADError writes an Entra ID style error.
func writeAADError(w http.ResponseWriter, status int, errCode string, aadsts int, desc string) {
	now := nowUTC()
	trace := newUUID()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error":             errCode,
		"error_description": fmt.Sprintf("AADSTS%d: %s Trace ID: %s Correlation ID: %s Timestamp: %s", aadsts, desc, trace, newUUID(), now.Format("2006-01-02 15:04:05Z")),
		"error_codes":       []int{aadsts},
		"timestamp":         now.Format("2006-01-02 15:04:05Z"),
		"trace_id":          trace,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// serveADFS serves the emulator's identity as a disconnected Azure Stack Hub
// serves it, an ADFS authority at /adfs (its discovery document and token
// endpoint, the emulator's one tenant). The cloud metadata names it as the
// login endpoint, so a client that configures itself from ARM alone (the
// Azure CLI: `az cloud register --endpoint-resource-manager`) signs in with
// no call to login.microsoftonline.com: MSAL validates no ADFS authority.
func (e *Emulator) serveADFS(w http.ResponseWriter, r *http.Request, rest string, info *reqInfo) {
	switch rest {
	case ".well-known/openid-configuration":
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                e.base + "/adfs",
			"token_endpoint":                        e.base + "/adfs/oauth2/token",
			"authorization_endpoint":                e.base + "/adfs/oauth2/authorize",
			"device_authorization_endpoint":         e.base + "/adfs/oauth2/devicecode",
			"jwks_uri":                              e.base + "/adfs/discovery/keys",
			"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic", "private_key_jwt"},
			"response_types_supported":              []string{"code", "id_token", "code id_token", "id_token token"},
			"subject_types_supported":               []string{"pairwise"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"scopes_supported":                      []string{"openid", "profile", "email", "offline_access"},
		})
	case "discovery/keys":
		writeJSON(w, http.StatusOK, e.tokens.jwks())
	case "oauth2/token":
		// ADFS takes a v2 request (scope) as MSAL sends it, or a v1 one (resource).
		v1 := r.Method == http.MethodPost && r.ParseForm() == nil && r.PostForm.Get("scope") == "" && r.PostForm.Get("resource") != ""
		e.serveToken(w, r, e.tenantID, v1, info)
	default:
		http.NotFound(w, r)
	}
}

// serveEntra serves /{tenant}/v2.0/.well-known/openid-configuration, /{tenant}/oauth2/v2.0/token,
// /{tenant}/oauth2/token (v1, resource=), /{tenant}/discovery/v2.0/keys and /common/discovery/instance.
func (e *Emulator) serveEntra(w http.ResponseWriter, r *http.Request, info *reqInfo) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(segs) < 2 {
		http.NotFound(w, r)
		return
	}
	tenant, rest := segs[0], strings.Join(segs[1:], "/")
	if strings.EqualFold(tenant, "adfs") {
		e.serveADFS(w, r, rest, info)
		return
	}
	switch rest {
	case "v2.0/.well-known/openid-configuration", ".well-known/openid-configuration":
		if !e.knownTenant(tenant) {
			writeAADError(w, http.StatusBadRequest, "invalid_tenant", 90002, fmt.Sprintf("Tenant '%s' not found.", tenant))
			return
		}
		t := tenant
		if strings.EqualFold(t, "organizations") || strings.EqualFold(t, "common") {
			t = "{tenant}"
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                e.base + "/" + t + "/v2.0",
			"token_endpoint":                        e.base + "/" + tenant + "/oauth2/v2.0/token",
			"authorization_endpoint":                e.base + "/" + tenant + "/oauth2/v2.0/authorize",
			"device_authorization_endpoint":         e.base + "/" + tenant + "/oauth2/v2.0/devicecode",
			"jwks_uri":                              e.base + "/" + tenant + "/discovery/v2.0/keys",
			"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
			"response_types_supported":              []string{"code", "id_token", "code id_token", "id_token token"},
			"subject_types_supported":               []string{"pairwise"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"scopes_supported":                      []string{"openid", "profile", "email", "offline_access"},
			"tenant_region_scope":                   "WW",
			"cloud_instance_name":                   "gitaso.emulator",
		})
	case "discovery/v2.0/keys", "discovery/keys":
		writeJSON(w, http.StatusOK, e.tokens.jwks())
	case "discovery/instance":
		// MSAL asks {host}/common/discovery/instance?authorization_endpoint=https://{host}/{tenant}/oauth2/v2.0/authorize
		// and reads the tenant's discovery document from the answer: the tenant is the authorization endpoint's.
		if t := tenantOfAuthorizationEndpoint(r.URL.Query().Get("authorization_endpoint")); t != "" {
			tenant = t
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"tenant_discovery_endpoint": e.base + "/" + tenant + "/v2.0/.well-known/openid-configuration",
			"api-version":               "1.1",
			"metadata":                  []any{map[string]any{"preferred_network": r.Host, "preferred_cache": r.Host, "aliases": []string{r.Host}}},
		})
	case "oauth2/v2.0/token", "oauth2/token":
		e.serveToken(w, r, tenant, rest == "oauth2/token", info)
	case "oauth2/v2.0/authorize":
		e.serveAuthorize(w, r, tenant) // signin.go
	default:
		http.NotFound(w, r)
	}
}

// tenantOfAuthorizationEndpoint returns the tenant segment of an authorization endpoint URL
// ("https://host/{tenant}/oauth2/v2.0/authorize"), or "".
func tenantOfAuthorizationEndpoint(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(segs) < 2 || segs[0] == "" || !strings.EqualFold(segs[1], "oauth2") {
		return ""
	}
	return segs[0]
}

func (e *Emulator) knownTenant(t string) bool {
	return strings.EqualFold(t, e.tenantID) || strings.EqualFold(t, "organizations") || strings.EqualFold(t, "common")
}

func (e *Emulator) serveToken(w http.ResponseWriter, r *http.Request, tenant string, v1 bool, info *reqInfo) {
	if r.Method != http.MethodPost {
		writeAADError(w, http.StatusMethodNotAllowed, "invalid_request", 900561, "The endpoint only accepts POST requests.")
		return
	}
	if !strings.EqualFold(tenant, e.tenantID) {
		writeAADError(w, http.StatusBadRequest, "invalid_request", 90002, fmt.Sprintf("Tenant '%s' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.", tenant))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		writeAADError(w, http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'grant_type'.")
		return
	}
	f := r.PostForm
	if f.Get("grant_type") == "authorization_code" && !v1 {
		e.serveCodeGrant(w, r, f, info) // signin.go
		return
	}
	if gt := f.Get("grant_type"); gt != "client_credentials" {
		writeAADError(w, http.StatusBadRequest, "unsupported_grant_type", 70003, fmt.Sprintf("The app requested an unsupported grant type '%s'.", gt))
		return
	}
	clientID := strings.ToLower(f.Get("client_id"))
	if clientID == "" {
		if u, _, ok := r.BasicAuth(); ok {
			clientID = strings.ToLower(u)
		}
	}
	var audience string
	if v1 {
		audience = f.Get("resource")
	} else {
		var res []string
		for _, sc := range strings.Fields(f.Get("scope")) {
			switch sc {
			case "openid", "profile", "offline_access", "email":
			default:
				res = append(res, sc)
			}
		}
		scope := strings.Join(res, " ")
		if len(res) != 1 || !strings.HasSuffix(scope, "/.default") {
			writeAADError(w, http.StatusBadRequest, "invalid_scope", 1002012, fmt.Sprintf("The provided value for scope %s is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).", scope))
			return
		}
		audience = strings.TrimSuffix(scope, "/.default")
	}
	if audience == "" {
		writeAADError(w, http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'scope'.")
		return
	}
	e.mu.RLock()
	p := e.dir.byClient[clientID]
	var pc principal
	if p != nil {
		pc = *p
	}
	e.mu.RUnlock()
	if p == nil {
		writeAADError(w, http.StatusBadRequest, "unauthorized_client", 700016, fmt.Sprintf("Application with identifier '%s' was not found in the directory '%s'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant.", clientID, e.tenantID))
		return
	}
	info.principal = pc.ObjectID
	secret := f.Get("client_secret")
	if secret == "" {
		if _, pw, ok := r.BasicAuth(); ok {
			secret = pw
		}
	}
	switch {
	case secret != "":
		if pc.Secret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(pc.Secret)) != 1 {
			writeAADError(w, http.StatusUnauthorized, "invalid_client", 7000215, "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '"+pc.ClientID+"'.")
			return
		}
	case f.Get("client_assertion") != "":
		if f.Get("client_assertion_type") != clientAssertionType {
			writeAADError(w, http.StatusBadRequest, "invalid_request", 700010, "The client_assertion_type is not supported.")
			return
		}
		if code, msg := e.checkAssertion(&pc, f.Get("client_assertion")); code != 0 {
			writeAADError(w, http.StatusBadRequest, "invalid_client", code, msg)
			return
		}
	default:
		writeAADError(w, http.StatusUnauthorized, "invalid_client", 7000216, "'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type.")
		return
	}
	exp := time.Now().Add(e.opts.tokenLifetime)
	tok, err := e.mintToken(&pc, audience, exp)
	if err != nil {
		writeAADError(w, http.StatusInternalServerError, "server_error", 90033, "A transient error has occurred.")
		return
	}
	secs := int64(time.Until(exp).Seconds())
	resp := map[string]any{"token_type": "Bearer", "expires_in": secs, "ext_expires_in": secs, "access_token": tok}
	if v1 {
		resp["expires_on"] = strconv.FormatInt(exp.Unix(), 10)
		resp["resource"] = audience
	}
	w.Header().Set("Cache-Control", "no-store, no-cache")
	writeJSON(w, http.StatusOK, resp)
}

// checkAssertion validates a workload identity client assertion for p. It returns an AADSTS code and message on
// failure, 0 on success.
func (e *Emulator) checkAssertion(p *principal, assertion string) (int, string) {
	var c saClaims
	if err := e.saKeys.verify(assertion, &c); err != nil {
		var uc struct {
			Iss string `json:"iss"`
		}
		_ = unverifiedClaims(assertion, &uc)
		return 700211, fmt.Sprintf("No matching federated identity record found for presented assertion issuer '%s'. Please check your federated identity credential Subject, Audience and Issuer against the presented assertion. (signature: %v)", uc.Iss, err)
	}
	now := time.Now().Unix()
	if c.Exp != 0 && c.Exp < now {
		return 700024, "Client assertion is not within its valid time range."
	}
	if c.Nbf != 0 && c.Nbf > now+300 {
		return 700024, "Client assertion is not within its valid time range."
	}
	if p.Kind != kindManagedIdentity || p.ResourceID == "" {
		return 70021, fmt.Sprintf("No matching federated identity record found for presented assertion. Assertion Issuer: '%s'. Assertion Subject: '%s'. Assertion Audience: '%s'.", c.Iss, c.Sub, strings.Join(c.Aud, ","))
	}
	e.mu.RLock()
	fics := e.store.childrenOf(strings.ToLower(p.ResourceID), ficTypeKey)
	var bodies [][]byte
	for _, f := range fics {
		bodies = append(bodies, f.body)
	}
	e.mu.RUnlock()
	for _, b := range bodies {
		var fic struct {
			Properties struct {
				Issuer    string   `json:"issuer"`
				Subject   string   `json:"subject"`
				Audiences []string `json:"audiences"`
			} `json:"properties"`
		}
		if json.Unmarshal(b, &fic) != nil {
			continue
		}
		if fic.Properties.Issuer != c.Iss || fic.Properties.Subject != c.Sub {
			continue
		}
		for _, a := range fic.Properties.Audiences {
			for _, ca := range c.Aud {
				if a == ca {
					return 0, ""
				}
			}
		}
	}
	return 70021, fmt.Sprintf("No matching federated identity record found for presented assertion. Assertion Issuer: '%s'. Assertion Subject: '%s'. Assertion Audience: '%s'.", c.Iss, c.Sub, strings.Join(c.Aud, ","))
}

// serveMSI implements the App Service managed identity protocol (IDENTITY_ENDPOINT + X-IDENTITY-HEADER).
func (e *Emulator) serveMSI(w http.ResponseWriter, r *http.Request, info *reqInfo) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-IDENTITY-HEADER")), []byte(e.identityHeader)) != 1 {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"statusCode": 401, "message": "The X-IDENTITY-HEADER header is missing or invalid."})
		return
	}
	q := r.URL.Query()
	resource := q.Get("resource")
	if resource == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"statusCode": 400, "message": "The resource parameter is required."})
		return
	}
	audience := strings.TrimSuffix(resource, "/.default")
	e.mu.RLock()
	var p *principal
	switch {
	case q.Get("client_id") != "":
		p = e.dir.byClient[strings.ToLower(q.Get("client_id"))]
	case q.Get("object_id") != "" || q.Get("principal_id") != "":
		id := q.Get("object_id")
		if id == "" {
			id = q.Get("principal_id")
		}
		p = e.dir.byObject[strings.ToLower(id)]
	case q.Get("mi_res_id") != "" || q.Get("msi_res_id") != "":
		id := q.Get("mi_res_id")
		if id == "" {
			id = q.Get("msi_res_id")
		}
		for _, c := range e.dir.byObject {
			if strings.EqualFold(c.ResourceID, id) {
				p = c
				break
			}
		}
	default:
		p = e.hostMI
	}
	var pc principal
	if p != nil {
		pc = *p
	}
	e.mu.RUnlock()
	if p == nil || pc.Kind != kindManagedIdentity {
		writeJSON(w, http.StatusBadRequest, map[string]any{"statusCode": 400, "message": "No managed identity found for the specified identity selector.", "correlationId": newUUID()})
		return
	}
	info.principal = pc.ObjectID
	exp := time.Now().Add(e.opts.tokenLifetime)
	tok, err := e.mintToken(&pc, audience, exp)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"statusCode": 500, "message": "token signing failed"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok, "expires_on": strconv.FormatInt(exp.Unix(), 10), "resource": resource,
		"token_type": "Bearer", "client_id": pc.ClientID,
	})
}

// serveOIDC serves the discovery document and keys of the emulator's own service-account issuer.
func (e *Emulator) serveOIDC(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/oidc/.well-known/openid-configuration":
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": e.OIDCIssuer(), "jwks_uri": e.OIDCIssuer() + "/openid/v1/jwks",
			"response_types_supported": []string{"id_token"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	case "/oidc/openid/v1/jwks":
		writeJSON(w, http.StatusOK, e.saKeys.jwks())
	default:
		http.NotFound(w, r)
	}
}

// tokenCache remembers verified access tokens so that signature checks are not repeated on every request.
type tokenCache struct {
	mu sync.RWMutex
	m  map[string]*accessClaims
}

func newTokenCache() *tokenCache { return &tokenCache{m: map[string]*accessClaims{}} }

func (c *tokenCache) get(tok string) *accessClaims {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[tok]
}

func (c *tokenCache) put(tok string, claims *accessClaims) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= 4096 {
		c.m = map[string]*accessClaims{}
	}
	c.m[tok] = claims
}

var allowedAudiences = map[string]bool{
	"https://management.azure.com": true, "https://management.azure.com/": true,
	"https://management.core.windows.net": true, "https://management.core.windows.net/": true,
}

// authenticate checks the bearer token of an ARM request, writing ARM's 401 on failure.
func (e *Emulator) authenticate(w http.ResponseWriter, r *http.Request, info *reqInfo) (*accessClaims, bool) {
	h := r.Header.Get("Authorization")
	fail := func(code, msg string) (*accessClaims, bool) {
		info.code = code
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer authorization_uri="%s%s", error="invalid_token", error_description="%s"`, e.AuthorityHost(), e.tenantID, strings.ReplaceAll(msg, `"`, "'")))
		w.Header().Set("x-ms-failure-cause", "gateway")
		writeARMError(w, http.StatusUnauthorized, code, msg)
		return nil, false
	}
	if h == "" {
		return fail("AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing.")
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return fail("AuthenticationFailedInvalidHeader", "Authentication failed. The 'Authorization' header is provided in an invalid format.")
	}
	c := e.tcache.get(tok)
	if c == nil {
		c = &accessClaims{}
		if err := e.tokens.verify(tok, c); err != nil {
			return fail("InvalidAuthenticationToken", "The access token is invalid.")
		}
		if c.Iss != e.issuer(c.Tid) {
			return fail("InvalidAuthenticationToken", "The access token is invalid.")
		}
		e.tcache.put(tok, c)
	}
	now := time.Now()
	if c.Exp <= now.Unix() {
		return fail("ExpiredAuthenticationToken", fmt.Sprintf("The access token expiry UTC time '%s' is earlier than current UTC time '%s'.",
			time.Unix(c.Exp, 0).UTC().Format("1/2/2006 3:04:05 PM"), now.UTC().Format("1/2/2006 3:04:05 PM")))
	}
	if !allowedAudiences[c.Aud] {
		return fail("InvalidAuthenticationTokenAudience", fmt.Sprintf("The access token has been obtained for wrong audience or resource '%s'. It should exactly match with one of the allowed audiences 'https://management.core.windows.net/','https://management.core.windows.net','https://management.azure.com/','https://management.azure.com'.", c.Aud))
	}
	if !strings.EqualFold(c.Tid, e.tenantID) {
		return fail("InvalidAuthenticationTokenTenant", fmt.Sprintf("The access token is from the wrong issuer '%s'. It must match the tenant '%s' associated with this subscription. Please use the authority (URL) '%s%s' to get the token.", c.Iss, e.issuer(e.tenantID), e.AuthorityHost(), e.tenantID))
	}
	info.principal = c.Oid
	return c, true
}
