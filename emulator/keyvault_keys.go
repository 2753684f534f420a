package emulator

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" //nolint:gosec // RSA-OAEP (SHA-1) is one of Key Vault's algorithms
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Key Vault's key data plane (https://{vault}.vault.azure.net/keys/...): create, import and get RSA keys, and the
// cryptographic operations encrypt, decrypt, wrapkey and unwrapkey with RSA-OAEP, RSA-OAEP-256 and RSA1_5, as the
// Azure SDK's azkeys client and SOPS's azkv key source call them.
//
// A vault's data plane is the vault's host name under KeyVaultDNSSuffix, served by the emulator's HTTPS server
// (its certificate names *.vault.azure.net): a client reaches it by dialling the emulator's address for that host
// (KeyVaultHTTPClient does it), keeping the real host name for TLS and for the challenge below. The vault must
// exist as a Microsoft.KeyVault/vaults resource (created through ARM); its keys live in memory only (they are not
// written to the data file).
//
// Authentication is Key Vault's: a request without a bearer token answers 401 with the challenge
// `WWW-Authenticate: Bearer authorization="{authority}/{tenant}", resource="https://vault.azure.net"`, and a
// token must have been issued by the emulator for the audience https://vault.azure.net. Authorisation follows the
// vault's properties.enableRbacAuthorization: with RBAC, the caller needs a role assignment on the vault (or a scope
// above it) of a built-in role whose dataActions allow the operation (Key Vault Crypto User for the cryptographic
// operations, Key Vault Crypto Officer or Administrator for create and import); otherwise an access policy of the
// vault for the caller's object ID must hold the key permission (decrypt, unwrapKey, ...).

// KeyVaultDNSSuffix is the DNS suffix of the vaults the emulator serves (Azure's public cloud suffix).
const KeyVaultDNSSuffix = "vault.azure.net"

// KeyVaultResource is the resource (token audience) Key Vault names in its challenge.
const KeyVaultResource = "https://" + KeyVaultDNSSuffix

// keyVaultCertHosts are the names the serving certificate holds for the Key Vault data plane.
var keyVaultCertHosts = []string{"*." + KeyVaultDNSSuffix}

// Key Vault's built-in data roles, under their real GUIDs and with their real dataActions (the Key Vault
// data-plane check reads them; ARM's checks read Actions only).
var keyVaultRoles = []RoleDefinition{
	{GUID: "00482a5a-887f-4fb3-b363-3b7fe8e74483", RoleName: "Key Vault Administrator", Description: "Perform all data plane operations on a key vault and all objects in it, including certificates, keys, and secrets. Cannot manage key vault resources or manage role assignments. Only works for key vaults that use the 'Azure role-based access control' permission model.",
		Permissions: []Permission{{Actions: []string{"Microsoft.Authorization/*/read", "Microsoft.Insights/alertRules/*", "Microsoft.Resources/deployments/*", "Microsoft.Resources/subscriptions/resourceGroups/read", "Microsoft.Support/*", "Microsoft.KeyVault/checkNameAvailability/read", "Microsoft.KeyVault/deletedVaults/read", "Microsoft.KeyVault/locations/*/read", "Microsoft.KeyVault/vaults/*/read", "Microsoft.KeyVault/operations/read"}, DataActions: []string{"Microsoft.KeyVault/vaults/*"}}}},
	{GUID: "14b46e9e-c2b7-41b4-b07b-48a6ebf60603", RoleName: "Key Vault Crypto Officer", Description: "Perform any action on the keys of a key vault, except manage permissions. Only works for key vaults that use the 'Azure role-based access control' permission model.",
		Permissions: []Permission{{Actions: []string{"Microsoft.Authorization/*/read", "Microsoft.Insights/alertRules/*", "Microsoft.Resources/deployments/*", "Microsoft.Resources/subscriptions/resourceGroups/read", "Microsoft.Support/*", "Microsoft.KeyVault/checkNameAvailability/read", "Microsoft.KeyVault/deletedVaults/read", "Microsoft.KeyVault/locations/*/read", "Microsoft.KeyVault/vaults/*/read", "Microsoft.KeyVault/operations/read"}, DataActions: []string{"Microsoft.KeyVault/vaults/keys/*", "Microsoft.KeyVault/vaults/keyrotationpolicies/*"}}}},
	{GUID: "12338af0-0e69-4776-bea7-57ae8d297424", RoleName: "Key Vault Crypto User", Description: "Perform cryptographic operations using keys. Only works for key vaults that use the 'Azure role-based access control' permission model.",
		Permissions: []Permission{{DataActions: []string{"Microsoft.KeyVault/vaults/keys/read", "Microsoft.KeyVault/vaults/keys/update/action", "Microsoft.KeyVault/vaults/keys/backup/action", "Microsoft.KeyVault/vaults/keys/encrypt/action", "Microsoft.KeyVault/vaults/keys/decrypt/action", "Microsoft.KeyVault/vaults/keys/wrap/action", "Microsoft.KeyVault/vaults/keys/unwrap/action", "Microsoft.KeyVault/vaults/keys/sign/action", "Microsoft.KeyVault/vaults/keys/verify/action"}}}},
}

// The Key Vault roles join the built-in roles before rbac.go's init indexes them (package variables are
// initialised before any init function runs).
var _ = func() bool {
	builtinRoles = append(builtinRoles, keyVaultRoles...)
	return true
}()

// kvKeyVersion is one version of a key.
type kvKeyVersion struct {
	version string
	key     *rsa.PrivateKey
	ops     []string
	created time.Time
}

// kvKeys holds the keys of every vault: vault name (lower-cased) → key name (lower-cased) → versions, newest last.
type kvKeys struct {
	mu    sync.Mutex
	names map[string]string // lower-cased key ID → key name as created
	m     map[string]map[string][]*kvKeyVersion
}

var (
	kvStoresMu sync.Mutex
	kvStores   = map[*Emulator]*kvKeys{}
)

// keyVaultKeys returns the emulator's key store (created on first use, dropped by dropKeyVaultKeys).
func (e *Emulator) keyVaultKeys() *kvKeys {
	kvStoresMu.Lock()
	defer kvStoresMu.Unlock()
	k := kvStores[e]
	if k == nil {
		k = &kvKeys{names: map[string]string{}, m: map[string]map[string][]*kvKeyVersion{}}
		kvStores[e] = k
		go func() {
			<-e.done
			kvStoresMu.Lock()
			delete(kvStores, e)
			kvStoresMu.Unlock()
		}()
	}
	return k
}

// KeyVaultURL returns the data-plane URL of a vault ("https://{name}.vault.azure.net"), as vaultUri reads in Azure.
func (e *Emulator) KeyVaultURL(name string) string {
	return "https://" + strings.ToLower(name) + "." + KeyVaultDNSSuffix
}

// KeyVaultHTTPClient returns an HTTP client that trusts the emulator's CA and dials the emulator for every host
// under KeyVaultDNSSuffix and AppConfigDNSSuffix (and for the emulator's own address), so that vault and store URLs
// as Azure writes them reach the emulator's Key Vault and App Configuration data planes. Other hosts are dialled as
// usual.
func (e *Emulator) KeyVaultHTTPClient() *http.Client {
	target := e.ln.Addr().String()
	d := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: e.CertPool(), MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err == nil && (isVaultHost(host) || isAppConfigHost(host)) {
				addr = target
			}
			return d.DialContext(ctx, network, addr)
		},
	}
	return &http.Client{Transport: tr}
}

// isVaultHost reports whether host (no port) is a vault's data-plane host.
func isVaultHost(host string) bool {
	name, ok := vaultNameOf(host)
	return ok && name != ""
}

// vaultNameOf returns the vault name of a data-plane host ("kv1.vault.azure.net:443" → "kv1").
func vaultNameOf(host string) (string, bool) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	name, ok := strings.CutSuffix(host, "."+KeyVaultDNSSuffix)
	if !ok || name == "" || strings.Contains(name, ".") {
		return "", false
	}
	return name, true
}

// kvError writes Key Vault's error body.
func kvError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

// serveKeyVaultData serves a vault's data plane (the request's host is a vault host).
func (e *Emulator) serveKeyVaultData(w http.ResponseWriter, r *http.Request, info *reqInfo) {
	info.typ = "keyvault"
	vaultName, _ := vaultNameOf(r.Host)
	if r.URL.Query().Get("api-version") == "" {
		kvError(w, http.StatusBadRequest, "BadParameter", "The request URI contains an invalid or missing api-version.")
		return
	}
	claims, ok := e.kvAuthenticate(w, r, info)
	if !ok {
		return
	}
	vault, vbody := e.findVault(vaultName)
	if vault == nil {
		// Real Key Vault: the host does not resolve. The emulator answers as a gateway would.
		kvError(w, http.StatusNotFound, "VaultNotFound", fmt.Sprintf("The vault '%s' does not exist.", vaultName))
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) >= 2 && parts[0] == "secrets" { // keyvault_secrets.go
		e.serveKeyVaultSecrets(w, r, claims, vault, vbody, parts, info)
		return
	}
	if len(parts) < 2 || parts[0] != "keys" || parts[1] == "" {
		kvError(w, http.StatusNotFound, "NotFound", "The requested resource or operation is not supported: "+r.URL.Path)
		return
	}
	name := parts[1]
	if !validKeyName(name) {
		kvError(w, http.StatusBadRequest, "BadParameter", "The key name '"+name+"' is invalid: use 1-127 characters, letters, digits and dashes.")
		return
	}
	base := "https://" + r.Host
	if h, p, err := net.SplitHostPort(r.Host); err == nil && p == "443" {
		base = "https://" + h
	}
	keys := e.keyVaultKeys()
	switch {
	case len(parts) == 2 && r.Method == http.MethodPut: // import
		if !e.kvAllowed(w, claims, vault, vbody, "Microsoft.KeyVault/vaults/keys/import/action", "import", info) {
			return
		}
		var body struct {
			Key jsonWebKey `json:"key"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			kvError(w, http.StatusBadRequest, "BadParameter", "The request body is not a valid key import request: "+err.Error())
			return
		}
		priv, err := body.Key.rsaPrivate()
		if err != nil {
			kvError(w, http.StatusBadRequest, "BadParameter", "Invalid key: "+err.Error())
			return
		}
		v := keys.add(vaultName, name, priv, body.Key.KeyOps)
		writeJSON(w, http.StatusOK, keyBundle(base, name, v))
	case len(parts) == 3 && parts[2] == "create" && r.Method == http.MethodPost:
		if !e.kvAllowed(w, claims, vault, vbody, "Microsoft.KeyVault/vaults/keys/create/action", "create", info) {
			return
		}
		var body struct {
			Kty     string   `json:"kty"`
			KeySize int      `json:"key_size"`
			KeyOps  []string `json:"key_ops"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			kvError(w, http.StatusBadRequest, "BadParameter", "The request body is not a valid key create request: "+err.Error())
			return
		}
		if body.Kty != "RSA" && body.Kty != "RSA-HSM" {
			kvError(w, http.StatusBadRequest, "BadParameter", fmt.Sprintf("The emulator creates RSA keys only, not %q.", body.Kty))
			return
		}
		size := body.KeySize
		if size == 0 {
			size = 2048
		}
		if size != 2048 && size != 3072 && size != 4096 {
			kvError(w, http.StatusBadRequest, "BadParameter", fmt.Sprintf("Invalid key size %d: RSA keys are 2048, 3072 or 4096 bits.", size))
			return
		}
		priv, err := rsa.GenerateKey(rand.Reader, size)
		if err != nil {
			kvError(w, http.StatusInternalServerError, "InternalError", err.Error())
			return
		}
		v := keys.add(vaultName, name, priv, body.KeyOps)
		writeJSON(w, http.StatusOK, keyBundle(base, name, v))
	case (len(parts) == 2 || len(parts) == 3) && r.Method == http.MethodGet:
		if !e.kvAllowed(w, claims, vault, vbody, "Microsoft.KeyVault/vaults/keys/read", "get", info) {
			return
		}
		version := ""
		if len(parts) == 3 {
			version = parts[2]
		}
		v, kname := keys.get(vaultName, name, version)
		if v == nil {
			kvKeyNotFound(w, name, version)
			return
		}
		writeJSON(w, http.StatusOK, keyBundle(base, kname, v))
	case (len(parts) == 3 || len(parts) == 4) && r.Method == http.MethodPost:
		op := parts[len(parts)-1]
		version := ""
		if len(parts) == 4 {
			version = parts[2]
		}
		action, perm, encrypt := "", "", false
		switch op {
		case "encrypt":
			action, perm, encrypt = "Microsoft.KeyVault/vaults/keys/encrypt/action", "encrypt", true
		case "decrypt":
			action, perm = "Microsoft.KeyVault/vaults/keys/decrypt/action", "decrypt"
		case "wrapkey":
			action, perm, encrypt = "Microsoft.KeyVault/vaults/keys/wrap/action", "wrapKey", true
		case "unwrapkey":
			action, perm = "Microsoft.KeyVault/vaults/keys/unwrap/action", "unwrapKey"
		default:
			kvError(w, http.StatusNotFound, "NotFound", "The requested operation is not supported by the emulator: "+op)
			return
		}
		if !e.kvAllowed(w, claims, vault, vbody, action, perm, info) {
			return
		}
		v, kname := keys.get(vaultName, name, version)
		if v == nil {
			kvKeyNotFound(w, name, version)
			return
		}
		if len(v.ops) > 0 && !containsFold(v.ops, perm) {
			kvError(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("Operation %s is not permitted on this key.", perm))
			return
		}
		var body struct {
			Alg   string `json:"alg"`
			Value string `json:"value"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			kvError(w, http.StatusBadRequest, "BadParameter", "The request body is not a valid key operation request: "+err.Error())
			return
		}
		in, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(body.Value, "="))
		if err != nil {
			kvError(w, http.StatusBadRequest, "BadParameter", "Property 'value' is not a valid base64url string.")
			return
		}
		out, err := rsaOperation(v.key, body.Alg, in, encrypt)
		if err != nil {
			info.code = "BadParameter"
			kvError(w, http.StatusBadRequest, "BadParameter", err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"kid": base + "/keys/" + kname + "/" + v.version, "value": base64.RawURLEncoding.EncodeToString(out)})
	default:
		kvError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" "+r.URL.Path+" is not supported.")
	}
}

func kvKeyNotFound(w http.ResponseWriter, name, version string) {
	msg := fmt.Sprintf("A key with (name/id) %s was not found in this key vault. If you recently deleted this key you may be able to recover it using the correct recovery command. For help resolving this issue, please see https://go.microsoft.com/fwlink/?linkid=2125182", name)
	if version != "" {
		msg = fmt.Sprintf("A key with (name/id) %s/%s was not found in this key vault. If you recently deleted this key you may be able to recover it using the correct recovery command. For help resolving this issue, please see https://go.microsoft.com/fwlink/?linkid=2125182", name, version)
	}
	kvError(w, http.StatusNotFound, "KeyNotFound", msg)
}

func validKeyName(n string) bool {
	if len(n) == 0 || len(n) > 127 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// kvAuthenticate checks the bearer token as Key Vault does: no token → the 401 challenge; a token must be the
// emulator's, unexpired, of the emulator's tenant and for Key Vault's audience.
func (e *Emulator) kvAuthenticate(w http.ResponseWriter, r *http.Request, info *reqInfo) (*accessClaims, bool) {
	challenge := fmt.Sprintf(`Bearer authorization="%s%s", resource="%s"`, e.AuthorityHost(), e.tenantID, KeyVaultResource)
	fail := func(code, msg string) (*accessClaims, bool) {
		info.code = code
		w.Header().Set("WWW-Authenticate", challenge)
		kvError(w, http.StatusUnauthorized, "Unauthorized", msg)
		return nil, false
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return fail("Unauthorized", "AKV10000: Request is missing a Bearer or PoP token.")
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return fail("Unauthorized", "AKV10001: Unable to parse the Authorization header.")
	}
	c := e.tcache.get(tok)
	if c == nil {
		c = &accessClaims{}
		if err := e.tokens.verify(tok, c); err != nil || c.Iss != e.issuer(c.Tid) {
			return fail("Unauthorized", "AKV10032: Invalid issuer or signature.")
		}
		e.tcache.put(tok, c)
	}
	if c.Exp <= time.Now().Unix() {
		return fail("Unauthorized", "AKV10022: Invalid audience or expired token: the token has expired.")
	}
	if strings.TrimSuffix(c.Aud, "/") != KeyVaultResource {
		return fail("Unauthorized", fmt.Sprintf("AKV10022: Invalid audience. Expected %s, found: %s.", KeyVaultResource, c.Aud))
	}
	if !strings.EqualFold(c.Tid, e.tenantID) {
		return fail("Unauthorized", fmt.Sprintf("AKV10032: Invalid issuer. Expected one of %s, found %s.", e.issuer(e.tenantID), c.Iss))
	}
	info.principal = c.Oid
	return c, true
}

// findVault returns the vault resource of a name (vault names are global) and its decoded body.
func (e *Emulator) findVault(name string) (*resource, map[string]any) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, r := range e.store.ofType(vaultTypeKey, "") {
		if strings.EqualFold(r.Name, name) {
			m, err := r.decode()
			if err != nil {
				return nil, nil
			}
			return r, m
		}
	}
	return nil, nil
}

// kvAllowed checks the caller's right to a data action on the vault: RBAC data actions when the vault uses RBAC,
// its access policies otherwise (perm is the access policy's key permission). It writes Key Vault's 403.
func (e *Emulator) kvAllowed(w http.ResponseWriter, c *accessClaims, vault *resource, body map[string]any, action, perm string, info *reqInfo) bool {
	return e.kvAllowedOn(w, c, vault, body, "keys", action, perm, info)
}

// kvAllowedOn is kvAllowed for the vault's keys or secrets (kind, the access policy's permission list).
func (e *Emulator) kvAllowedOn(w http.ResponseWriter, c *accessClaims, vault *resource, body map[string]any, kind, action, perm string, info *reqInfo) bool {
	rbac, _ := getPath(body, "properties", "enableRbacAuthorization")
	caller := fmt.Sprintf("appid=%s;oid=%s", c.AppID, c.Oid)
	if rbac == true {
		if e.dataActionAllowed(c.Oid, action, vault.key) {
			return true
		}
		info.code = "ForbiddenByRbac"
		writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]any{
			"code": "Forbidden",
			"message": fmt.Sprintf("Caller is not authorized to perform action on resource.\r\nIf role assignments, deny assignments or role definitions were changed recently, please observe propagation time.\r\nCaller: %s\r\nAction: '%s'\r\nResource: '%s'\r\nAssignment: (not found)\r\nDenyAssignmentId: null\r\nDecisionReason: null \r\nVault: %s;location=%s\r\n",
				caller, action, strings.ToLower(vault.ID), vault.Name, normalizeRegion(vault.Location)),
			"innererror": map[string]any{"code": "ForbiddenByRbac"},
		}})
		return false
	}
	policies, _ := getPath(body, "properties", "accessPolicies")
	list, _ := policies.([]any)
	for _, p := range list {
		pm, _ := p.(map[string]any)
		if oid, _ := pm["objectId"].(string); !strings.EqualFold(oid, c.Oid) {
			continue
		}
		keys, _ := getPath(pm, "permissions", kind)
		kl, _ := keys.([]any)
		for _, k := range kl {
			if s, _ := k.(string); strings.EqualFold(s, perm) || strings.EqualFold(s, "all") {
				return true
			}
		}
	}
	info.code = "ForbiddenByPolicy"
	writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]any{
		"code":       "Forbidden",
		"message":    fmt.Sprintf("The user, group or application '%s' does not have %s %s permission on key vault '%s;location=%s'. For help resolving this issue, please see https://go.microsoft.com/fwlink/?linkid=2125287", caller, kind, strings.ToLower(perm), vault.Name, normalizeRegion(vault.Location)),
		"innererror": map[string]any{"code": "ForbiddenByPolicy"},
	}})
	return false
}

// dataActionAllowed reports whether one of the principal's role assignments at or above target grants the data
// action through a built-in role's dataActions (custom roles' data actions are not modelled).
func (e *Emulator) dataActionAllowed(principalID, action, target string) bool {
	action = strings.ToLower(action)
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, a := range e.rbac.byPrincipal[strings.ToLower(principalID)] {
		if !scopeContains(a.scope, target) {
			continue
		}
		rd := builtinByGUID[a.roleGUID]
		if rd == nil {
			continue
		}
		for _, p := range rd.Permissions {
			allowed := false
			for _, d := range p.DataActions {
				if globMatch(strings.ToLower(d), action) {
					allowed = true
				}
			}
			for _, d := range p.NotDataActions {
				if globMatch(strings.ToLower(d), action) {
					allowed = false
				}
			}
			if allowed {
				return true
			}
		}
	}
	return false
}

func (k *kvKeys) add(vault, name string, key *rsa.PrivateKey, ops []string) *kvKeyVersion {
	k.mu.Lock()
	defer k.mu.Unlock()
	vk := k.m[vault]
	if vk == nil {
		vk = map[string][]*kvKeyVersion{}
		k.m[vault] = vk
	}
	ln := strings.ToLower(name)
	if _, ok := k.names[vault+"/"+ln]; !ok {
		k.names[vault+"/"+ln] = name
	}
	v := &kvKeyVersion{version: strings.ReplaceAll(newUUID(), "-", ""), key: key, ops: ops, created: nowUTC()}
	vk[ln] = append(vk[ln], v)
	return v
}

// get returns a version of a key (the newest when version is "") and the key's name as created.
func (k *kvKeys) get(vault, name, version string) (*kvKeyVersion, string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ln := strings.ToLower(name)
	versions := k.m[vault][ln]
	if len(versions) == 0 {
		return nil, ""
	}
	if version == "" {
		return versions[len(versions)-1], k.names[vault+"/"+ln]
	}
	for _, v := range versions {
		if strings.EqualFold(v.version, version) {
			return v, k.names[vault+"/"+ln]
		}
	}
	return nil, ""
}

func keyBundle(base, name string, v *kvKeyVersion) map[string]any {
	ops := v.ops
	if len(ops) == 0 {
		ops = []string{"encrypt", "decrypt", "sign", "verify", "wrapKey", "unwrapKey"}
	}
	b64 := base64.RawURLEncoding.EncodeToString
	return map[string]any{
		"key": map[string]any{
			"kid": base + "/keys/" + name + "/" + v.version, "kty": "RSA", "key_ops": ops,
			"n": b64(v.key.N.Bytes()), "e": b64(big.NewInt(int64(v.key.E)).Bytes()),
		},
		"attributes": map[string]any{
			"enabled": true, "created": v.created.Unix(), "updated": v.created.Unix(),
			"recoveryLevel": "Recoverable+Purgeable", "recoverableDays": 90,
		},
	}
}

// jsonWebKey is the RSA part of Key Vault's JsonWebKey (import).
type jsonWebKey struct {
	Kty    string   `json:"kty"`
	KeyOps []string `json:"key_ops"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	D      string   `json:"d"`
	P      string   `json:"p"`
	Q      string   `json:"q"`
}

func (j jsonWebKey) rsaPrivate() (*rsa.PrivateKey, error) {
	if j.Kty != "RSA" && j.Kty != "RSA-HSM" {
		return nil, fmt.Errorf("the emulator imports RSA keys only, not %q", j.Kty)
	}
	num := func(field, s string) (*big.Int, error) {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("%s is not a base64url number", field)
		}
		return new(big.Int).SetBytes(b), nil
	}
	var vals [5]*big.Int
	for i, f := range []struct{ name, v string }{{"n", j.N}, {"e", j.E}, {"d", j.D}, {"p", j.P}, {"q", j.Q}} {
		v, err := num(f.name, f.v)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	if !vals[1].IsInt64() || vals[1].Int64() > 1<<31 {
		return nil, fmt.Errorf("e is too large")
	}
	k := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: vals[0], E: int(vals[1].Int64())}, D: vals[2], Primes: []*big.Int{vals[3], vals[4]}}
	if err := k.Validate(); err != nil {
		return nil, err
	}
	k.Precompute()
	return k, nil
}

// rsaOperation runs encrypt (or wrap) and decrypt (or unwrap) with Key Vault's RSA algorithms.
func rsaOperation(k *rsa.PrivateKey, alg string, in []byte, encrypt bool) ([]byte, error) {
	var h hash.Hash
	switch alg {
	case "RSA-OAEP-256":
		h = sha256.New()
	case "RSA-OAEP":
		h = sha1.New() //nolint:gosec // Key Vault's RSA-OAEP is SHA-1
	case "RSA1_5":
		if encrypt {
			//lint:ignore SA1019 Key Vault offers RSA1_5 (PKCS #1 v1.5), and the emulator implements it as Key Vault does
			return rsa.EncryptPKCS1v15(rand.Reader, &k.PublicKey, in)
		}
		//lint:ignore SA1019 Key Vault offers RSA1_5 (PKCS #1 v1.5), and the emulator implements it as Key Vault does
		out, err := rsa.DecryptPKCS1v15(nil, k, in)
		if err != nil {
			return nil, kvMessage("Bad Request: the ciphertext does not decrypt with this key and algorithm")
		}
		return out, nil
	default:
		return nil, kvMessage(fmt.Sprintf("Invalid algorithm %q: use RSA-OAEP, RSA-OAEP-256 or RSA1_5", alg))
	}
	if encrypt {
		return rsa.EncryptOAEP(h, rand.Reader, &k.PublicKey, in, nil)
	}
	out, err := rsa.DecryptOAEP(h, nil, k, in, nil)
	if err != nil {
		return nil, kvMessage("Bad Request: the ciphertext does not decrypt with this key and algorithm")
	}
	return out, nil
}

// kvMessage is an error whose text is the message Key Vault answers with,
// written as Key Vault writes it (capitalised).
type kvMessage string

func (m kvMessage) Error() string { return string(m) }
