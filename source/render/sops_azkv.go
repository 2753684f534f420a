package render

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// SOPSKeyVault opens SOPS data keys encrypted by Azure Key Vault keys (a
// sops.azure_kv entry). NewAzureKeyVault is the implementation.
type SOPSKeyVault interface {
	// Decrypt returns the data key that enc (base64url, as SOPS writes it)
	// holds, encrypted with RSA-OAEP-256 by the key.
	Decrypt(ctx context.Context, key AzureKeyVaultKey, enc string) ([]byte, error)
}

// AzureKeyVaultKey names a Key Vault key as a sops.azure_kv entry does.
type AzureKeyVaultKey struct {
	VaultURL string // https://{vault}.vault.azure.net
	Name     string
	Version  string // "" is the newest
}

// DefaultKeyVaultDNSSuffix is Key Vault's DNS suffix in Azure's public cloud.
const DefaultKeyVaultDNSSuffix = "vault.azure.net"

// AzureKeyVaultOptions configure NewAzureKeyVault.
type AzureKeyVaultOptions struct {
	// Credential returns the Azure credential that signs in to Key Vault
	// (gitaso's global credential). It is called on first use only, so a
	// repository without azure_kv keys needs no credential.
	Credential func() (azcore.TokenCredential, error)
	// HTTPClient sends the requests (nil: http.DefaultClient); the cloud's
	// CA is in its TLS roots.
	HTTPClient *http.Client
	// DNSSuffix is the cloud's Key Vault DNS suffix ("" is
	// DefaultKeyVaultDNSSuffix; vault.azure.cn, vault.usgovcloudapi.net in
	// the national clouds). Only vaults under it are called, and the token
	// is for its resource, https://{DNSSuffix}: a vault URL written in Git
	// can never send gitaso's token elsewhere.
	DNSSuffix string
	// APIVersion of the Key Vault data plane ("" is 7.4).
	APIVersion string
}

// NewAzureKeyVault returns a SOPSKeyVault that calls Key Vault's data plane
// (POST {vaultUrl}/keys/{name}/{version}/decrypt, RSA-OAEP-256, as SOPS's
// azkv key source and Flux do) with a token of the credential for
// https://{DNSSuffix}. The caller's identity needs the keys decrypt
// permission: the Key Vault Crypto User role on a vault with RBAC, or an
// access policy with the decrypt key permission. Data keys opened are kept
// in memory for the life of the value, so a file is not sent to Key Vault on
// every render.
func NewAzureKeyVault(o AzureKeyVaultOptions) SOPSKeyVault {
	if o.DNSSuffix == "" {
		o.DNSSuffix = DefaultKeyVaultDNSSuffix
	}
	if o.APIVersion == "" {
		o.APIVersion = "7.4"
	}
	o.DNSSuffix = strings.ToLower(strings.Trim(o.DNSSuffix, "."))
	return &azureKeyVault{opts: o, cache: map[string][]byte{}}
}

type azureKeyVault struct {
	opts AzureKeyVaultOptions

	mu    sync.Mutex
	pl    *runtime.Pipeline
	err   error
	cache map[string][]byte // vault/name/version/enc → data key
}

// pipeline builds the azcore pipeline on first use (the credential is read then).
func (kv *azureKeyVault) pipeline() (runtime.Pipeline, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	if kv.pl != nil || kv.err != nil {
		if kv.err != nil {
			return runtime.Pipeline{}, kv.err
		}
		return *kv.pl, nil
	}
	if kv.opts.Credential == nil {
		kv.err = errors.New("no Azure credential is configured for Key Vault")
		return runtime.Pipeline{}, kv.err
	}
	cred, err := kv.opts.Credential()
	if err != nil {
		kv.err = fmt.Errorf("sign in to Key Vault: %w", err)
		return runtime.Pipeline{}, kv.err
	}
	co := &policy.ClientOptions{
		PerRetryPolicies: []policy.Policy{runtime.NewBearerTokenPolicy(cred, []string{"https://" + kv.opts.DNSSuffix + "/.default"}, nil)},
		Retry:            policy.RetryOptions{MaxRetries: 3},
	}
	if kv.opts.HTTPClient != nil {
		co.Transport = kv.opts.HTTPClient
	}
	pl := runtime.NewPipeline("gitaso-sops", "v1", runtime.PipelineOptions{}, co)
	kv.pl = &pl
	return pl, nil
}

// vaultBase checks a vault URL against the DNS suffix and returns its base
// (scheme and host, no path).
func (kv *azureKeyVault) vaultBase(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", fmt.Errorf("vault_url %q is not a Key Vault URL (https://{vault}.%s)", raw, kv.opts.DNSSuffix)
	}
	host := strings.ToLower(u.Hostname())
	name, ok := strings.CutSuffix(host, "."+kv.opts.DNSSuffix)
	if !ok || name == "" || strings.Contains(name, ".") {
		return "", fmt.Errorf("vault_url %q is not under this cloud's Key Vault DNS suffix %s: gitaso sends its Azure token to %s vaults only", raw, kv.opts.DNSSuffix, kv.opts.DNSSuffix)
	}
	return "https://" + u.Host, nil
}

func (kv *azureKeyVault) Decrypt(ctx context.Context, key AzureKeyVaultKey, enc string) ([]byte, error) {
	base, err := kv.vaultBase(key.VaultURL)
	if err != nil {
		return nil, err
	}
	for _, s := range []string{key.Name, key.Version} {
		if strings.ContainsAny(s, "/?#%") {
			return nil, fmt.Errorf("key name or version %q is not a Key Vault name", s)
		}
	}
	ck := base + "/" + key.Name + "/" + key.Version + "/" + enc
	kv.mu.Lock()
	cached, ok := kv.cache[ck]
	kv.mu.Unlock()
	if ok {
		return cached, nil
	}
	if _, err := base64.RawURLEncoding.DecodeString(enc); err != nil {
		return nil, errors.New("enc is not base64url (SOPS's azure_kv encoding)")
	}
	pl, err := kv.pipeline()
	if err != nil {
		return nil, err
	}
	endpoint := base + "/keys/" + url.PathEscape(key.Name) + "/" + url.PathEscape(key.Version) + "/decrypt?api-version=" + url.QueryEscape(kv.opts.APIVersion)
	req, err := runtime.NewRequest(ctx, http.MethodPost, endpoint)
	if err != nil {
		return nil, err
	}
	if err := runtime.MarshalAsJSON(req, map[string]string{"alg": "RSA-OAEP-256", "value": enc}); err != nil {
		return nil, err
	}
	resp, err := pl.Do(req)
	if err != nil {
		return nil, fmt.Errorf("decrypt with Key Vault: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("decrypt with Key Vault: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		msg := strings.Join(strings.Fields(e.Error.Message), " ")
		if len(msg) > 400 {
			msg = msg[:400] + "…"
		}
		return nil, fmt.Errorf("decrypt with Key Vault: %d %s: %s", resp.StatusCode, e.Error.Code, msg)
	}
	var out struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("decrypt with Key Vault: bad response: %w", err)
	}
	plain, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(out.Value, "="))
	if err != nil {
		return nil, errors.New("decrypt with Key Vault: the result is not base64url")
	}
	kv.mu.Lock()
	if len(kv.cache) >= 4096 {
		clear(kv.cache)
	}
	kv.cache[ck] = plain
	kv.mu.Unlock()
	return plain, nil
}
