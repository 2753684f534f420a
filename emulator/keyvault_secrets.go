package emulator

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Key Vault's secret data plane (https://{vault}.vault.azure.net/secrets/...): set a secret (PUT /secrets/{name})
// and get a version of it (GET /secrets/{name}[/{version}]), as the Azure SDK's azsecrets client and App
// Configuration's Key Vault references read them. Authentication is the keys' (kvAuthenticate); authorisation the
// vault's: with RBAC, Key Vault Secrets User reads and Key Vault Secrets Officer (or Administrator) writes; with
// access policies, the secrets permissions get and set. Secrets live in memory only, like keys.

// Key Vault's built-in secret roles, under their real GUIDs and with their real dataActions.
var keyVaultSecretRoles = []RoleDefinition{
	{GUID: "b86a8fe4-44ce-4948-aee5-eccb2c155cd7", RoleName: "Key Vault Secrets Officer", Description: "Perform any action on the secrets of a key vault, except manage permissions. Only works for key vaults that use the 'Azure role-based access control' permission model.",
		Permissions: []Permission{{Actions: []string{"Microsoft.Authorization/*/read", "Microsoft.Insights/alertRules/*", "Microsoft.Resources/deployments/*", "Microsoft.Resources/subscriptions/resourceGroups/read", "Microsoft.Support/*", "Microsoft.KeyVault/checkNameAvailability/read", "Microsoft.KeyVault/deletedVaults/read", "Microsoft.KeyVault/locations/*/read", "Microsoft.KeyVault/vaults/*/read", "Microsoft.KeyVault/operations/read"}, DataActions: []string{"Microsoft.KeyVault/vaults/secrets/*"}}}},
	{GUID: "4633458b-17de-408a-b874-0445c86b69e6", RoleName: "Key Vault Secrets User", Description: "Read secret contents. Only works for key vaults that use the 'Azure role-based access control' permission model.",
		Permissions: []Permission{{DataActions: []string{"Microsoft.KeyVault/vaults/secrets/getSecret/action", "Microsoft.KeyVault/vaults/secrets/readMetadata/action"}}}},
}

var _ = func() bool {
	builtinRoles = append(builtinRoles, keyVaultSecretRoles...)
	return true
}()

// kvSecretVersion is one version of a secret.
type kvSecretVersion struct {
	version     string
	value       string
	contentType string
	tags        map[string]string
	created     time.Time
}

// kvSecrets holds the secrets of every vault: "vault/name" (lower-cased) → versions, newest last.
type kvSecrets struct {
	mu    sync.Mutex
	names map[string]string
	m     map[string][]*kvSecretVersion
}

var (
	kvSecretStoresMu sync.Mutex
	kvSecretStores   = map[*Emulator]*kvSecrets{}
)

func (e *Emulator) keyVaultSecrets() *kvSecrets {
	kvSecretStoresMu.Lock()
	defer kvSecretStoresMu.Unlock()
	s := kvSecretStores[e]
	if s == nil {
		s = &kvSecrets{names: map[string]string{}, m: map[string][]*kvSecretVersion{}}
		kvSecretStores[e] = s
		go func() {
			<-e.done
			kvSecretStoresMu.Lock()
			delete(kvSecretStores, e)
			kvSecretStoresMu.Unlock()
		}()
	}
	return s
}

func (s *kvSecrets) add(vault, name string, v *kvSecretVersion) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := strings.ToLower(vault + "/" + name)
	if _, ok := s.names[k]; !ok {
		s.names[k] = name
	}
	v.version = strings.ReplaceAll(newUUID(), "-", "")
	v.created = nowUTC()
	s.m[k] = append(s.m[k], v)
}

func (s *kvSecrets) get(vault, name, version string) (*kvSecretVersion, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := strings.ToLower(vault + "/" + name)
	vs := s.m[k]
	if len(vs) == 0 {
		return nil, ""
	}
	if version == "" {
		return vs[len(vs)-1], s.names[k]
	}
	for _, v := range vs {
		if strings.EqualFold(v.version, version) {
			return v, s.names[k]
		}
	}
	return nil, ""
}

// PutKeyVaultSecret sets a new version of a secret of a vault created through ARM (for tests and seeding) and
// returns the secret's identifier, https://{vault}.vault.azure.net/secrets/{name}/{version}.
func (e *Emulator) PutKeyVaultSecret(vault, name, value string) (string, error) {
	if v, _ := e.findVault(vault); v == nil {
		return "", fmt.Errorf("vault %q does not exist (create it through ARM first)", vault)
	}
	if !validKeyName(name) {
		return "", fmt.Errorf("secret name %q is invalid: use 1-127 characters, letters, digits and dashes", name)
	}
	v := &kvSecretVersion{value: value}
	e.keyVaultSecrets().add(strings.ToLower(vault), name, v)
	return e.KeyVaultURL(vault) + "/secrets/" + name + "/" + v.version, nil
}

func secretBundle(base, name string, v *kvSecretVersion) map[string]any {
	b := map[string]any{
		"value": v.value, "id": base + "/secrets/" + name + "/" + v.version,
		"attributes": map[string]any{"enabled": true, "created": v.created.Unix(), "updated": v.created.Unix(),
			"recoveryLevel": "Recoverable+Purgeable", "recoverableDays": 90},
	}
	if v.contentType != "" {
		b["contentType"] = v.contentType
	}
	if len(v.tags) > 0 {
		b["tags"] = v.tags
	}
	return b
}

// serveKeyVaultSecrets serves /secrets/{name}[/{version}] of a vault (authenticated by serveKeyVaultData).
func (e *Emulator) serveKeyVaultSecrets(w http.ResponseWriter, r *http.Request, c *accessClaims, vault *resource, vbody map[string]any, parts []string, info *reqInfo) {
	name := parts[1]
	if !validKeyName(name) {
		kvError(w, http.StatusBadRequest, "BadParameter", "The secret name '"+name+"' is invalid: use 1-127 characters, letters, digits and dashes.")
		return
	}
	base := "https://" + r.Host
	if h, p, err := net.SplitHostPort(r.Host); err == nil && p == "443" {
		base = "https://" + h
	}
	vaultName := strings.ToLower(vault.Name)
	secrets := e.keyVaultSecrets()
	switch {
	case len(parts) == 2 && r.Method == http.MethodPut:
		if !e.kvAllowedOn(w, c, vault, vbody, "secrets", "Microsoft.KeyVault/vaults/secrets/setSecret/action", "set", info) {
			return
		}
		var body struct {
			Value       *string           `json:"value"`
			ContentType string            `json:"contentType"`
			Tags        map[string]string `json:"tags"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil || body.Value == nil {
			kvError(w, http.StatusBadRequest, "BadParameter", "The request body is not a valid secret set request: it needs a value.")
			return
		}
		v := &kvSecretVersion{value: *body.Value, contentType: body.ContentType, tags: body.Tags}
		secrets.add(vaultName, name, v)
		writeJSON(w, http.StatusOK, secretBundle(base, name, v))
	case (len(parts) == 2 || len(parts) == 3) && r.Method == http.MethodGet:
		if !e.kvAllowedOn(w, c, vault, vbody, "secrets", "Microsoft.KeyVault/vaults/secrets/getSecret/action", "get", info) {
			return
		}
		version := ""
		if len(parts) == 3 {
			version = parts[2]
		}
		v, sname := secrets.get(vaultName, name, version)
		if v == nil {
			msg := fmt.Sprintf("A secret with (name/id) %s was not found in this key vault. If you recently deleted this secret you may be able to recover it using the correct recovery command. For help resolving this issue, please see https://go.microsoft.com/fwlink/?linkid=2125182", strings.TrimSuffix(name+"/"+version, "/"))
			kvError(w, http.StatusNotFound, "SecretNotFound", msg)
			return
		}
		writeJSON(w, http.StatusOK, secretBundle(base, sname, v))
	default:
		kvError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" "+r.URL.Path+" is not supported.")
	}
}
