package azure

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/gitaso/gitaso/aso"
)

// Credential scopes, from least to most specific.
const (
	ScopeGlobal    = "global"
	ScopeNamespace = "namespace"
	ScopeResource  = "resource"
)

// Credential kinds.
const (
	KindClientSecret      = "ClientSecret"
	KindClientCertificate = "ClientCertificate"
	KindWorkloadIdentity  = "WorkloadIdentity"
	KindManagedIdentity   = "ManagedIdentity"
)

// Keys of ASO's credential Secrets and of the global environment.
const (
	KeySubscriptionID            = "AZURE_SUBSCRIPTION_ID"
	KeyTenantID                  = "AZURE_TENANT_ID"
	KeyClientID                  = "AZURE_CLIENT_ID"
	KeyClientSecret              = "AZURE_CLIENT_SECRET"
	KeyClientCertificate         = "AZURE_CLIENT_CERTIFICATE"
	KeyClientCertificatePassword = "AZURE_CLIENT_CERTIFICATE_PASSWORD"
	KeyUseWorkloadIdentityAuth   = "USE_WORKLOAD_IDENTITY_AUTH"
	KeyUsePodIdentityAuth        = "USE_AZURE_POD_IDENTITY_AUTH"
	// Environment only.
	EnvClientCertificatePath = "AZURE_CLIENT_CERTIFICATE_PATH"
	EnvFederatedTokenFile    = "AZURE_FEDERATED_TOKEN_FILE"
	EnvAuthMode              = "AUTH_MODE"
	EnvUseManagedIdentity    = "USE_MANAGED_IDENTITY"
	EnvIdentityEndpoint      = "IDENTITY_ENDPOINT"
)

// DefaultFederatedTokenFile is where ASO reads the operator's service account
// token for workload identity; gitaso uses it when neither the options nor
// AZURE_FEDERATED_TOKEN_FILE name another file.
const DefaultFederatedTokenFile = "/var/run/secrets/tokens/azure-identity"

// ErrNoCredential is returned by CredentialFromEnv when the environment names
// no global credential (AZURE_SUBSCRIPTION_ID is unset).
var ErrNoCredential = errors.New("no Azure credential configured")

// ErrInvalidCredential is returned (wrapped) when credential settings are
// incomplete or malformed. The message names keys, never values.
var ErrInvalidCredential = errors.New("invalid Azure credential")

// Credential is one Azure identity and the subscription it manages. Secret
// material is unexported and never printed: fmt shows a one-line summary for
// every verb (including %+v and %#v) and slog shows the non-secret fields.
type Credential struct {
	Scope          string // ScopeGlobal | ScopeNamespace | ScopeResource
	Source         string // "env", or "namespace/secret-name"
	SubscriptionID string
	TenantID       string
	ClientID       string

	kind string
	// secret returns the secret material. A closure, not a field holding the
	// material: fmt and other reflection-based printers never call functions,
	// so even a Credential nested by value in an unexported field of another
	// struct prints only a function address.
	secret func() *secretMaterial
}

func (c *Credential) material() *secretMaterial {
	if c.secret == nil {
		return nil
	}
	return c.secret()
}

func withSecret(m *secretMaterial) func() *secretMaterial { return func() *secretMaterial { return m } }

// secretMaterial holds what must never leave the process. It redacts itself
// in every printer it can be handed to.
type secretMaterial struct {
	clientSecret string
	certs        []*x509.Certificate
	key          crypto.PrivateKey
	digest       string // sha256 over the raw secret inputs; identifies the material without revealing it
	tokenFile    string // workload identity; "" = resolved by Clients
}

const redacted = "[REDACTED]"

func (*secretMaterial) String() string               { return redacted }
func (*secretMaterial) GoString() string             { return redacted }
func (*secretMaterial) Format(f fmt.State, _ rune)   { _, _ = io.WriteString(f, redacted) }
func (*secretMaterial) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (*secretMaterial) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (*secretMaterial) MarshalText() ([]byte, error) { return []byte(redacted), nil }
func (c Credential) MarshalText() ([]byte, error)    { return []byte(c.String()), nil }
func (c Credential) GoString() string                { return c.String() }
func (c Credential) Format(f fmt.State, _ rune)      { _, _ = io.WriteString(f, c.String()) }
func (c *Credential) secretDigest() string           { return c.material().digestOrEmpty() }
func (s *secretMaterial) digestOrEmpty() string {
	if s == nil {
		return ""
	}
	return s.digest
}

// Kind is KindClientSecret, KindClientCertificate, KindWorkloadIdentity or KindManagedIdentity.
func (c Credential) Kind() string { return c.kind }

// String describes the credential without secret material.
func (c Credential) String() string {
	return fmt.Sprintf("%s credential %s (%s, client %s, tenant %s, subscription %s)",
		c.Scope, c.Source, c.kind, c.ClientID, c.TenantID, c.SubscriptionID)
}

// LogValue implements slog.LogValuer with the non-secret fields only.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("scope", c.Scope),
		slog.String("source", c.Source),
		slog.String("kind", c.kind),
		slog.String("subscriptionId", c.SubscriptionID),
		slog.String("tenantId", c.TenantID),
		slog.String("clientId", c.ClientID),
	)
}

// key identifies the credential's content (including a digest of its secret
// material) for the client cache: equal content shares a pipeline, a rotated
// secret gets a new one.
func (c *Credential) key() string {
	h := sha256.New()
	for _, s := range []string{c.kind, c.SubscriptionID, c.TenantID, c.ClientID, c.secretDigest(), c.tokenFile()} {
		_, _ = io.WriteString(h, s)
		_, _ = h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Credential) tokenFile() string {
	if m := c.material(); m != nil {
		return m.tokenFile
	}
	return ""
}

// CredentialFromEnv builds the global credential from the process
// environment, as ASO builds its global credential from
// aso-controller-settings: AZURE_SUBSCRIPTION_ID, AZURE_TENANT_ID and
// AZURE_CLIENT_ID, then the first of
//
//   - USE_WORKLOAD_IDENTITY_AUTH=true or AUTH_MODE=workloadidentity: workload identity;
//   - AZURE_CLIENT_SECRET: client secret;
//   - AZURE_CLIENT_CERTIFICATE (PEM or PKCS#12 content) or
//     AZURE_CLIENT_CERTIFICATE_PATH, with AZURE_CLIENT_CERTIFICATE_PASSWORD: client certificate;
//   - AZURE_FEDERATED_TOKEN_FILE: workload identity with that token file;
//   - USE_AZURE_POD_IDENTITY_AUTH=true, USE_MANAGED_IDENTITY=true,
//     AUTH_MODE=managedidentity|podidentity, or IDENTITY_ENDPOINT set: managed
//     identity (user-assigned when AZURE_CLIENT_ID is set).
//
// ErrNoCredential is returned when AZURE_SUBSCRIPTION_ID is unset.
func CredentialFromEnv() (*Credential, error) {
	get := func(k string) string { return strings.TrimSpace(os.Getenv(k)) }
	c := &Credential{
		Scope:          ScopeGlobal,
		Source:         "env",
		SubscriptionID: get(KeySubscriptionID),
		TenantID:       get(KeyTenantID),
		ClientID:       get(KeyClientID),
	}
	if c.SubscriptionID == "" {
		return nil, fmt.Errorf("%w: %s is not set", ErrNoCredential, KeySubscriptionID)
	}
	authMode := strings.ToLower(get(EnvAuthMode))
	needTenant := func() error {
		var missing []string
		if c.TenantID == "" {
			missing = append(missing, KeyTenantID)
		}
		if c.ClientID == "" {
			missing = append(missing, KeyClientID)
		}
		if len(missing) > 0 {
			return fmt.Errorf("%w: environment: %s credential needs %s", ErrInvalidCredential, c.kind, strings.Join(missing, ", "))
		}
		return nil
	}
	switch {
	case isTrue(get(KeyUseWorkloadIdentityAuth)) || authMode == "workloadidentity":
		c.kind = KindWorkloadIdentity
		c.secret = withSecret(&secretMaterial{tokenFile: get(EnvFederatedTokenFile)})
	case get(KeyClientSecret) != "":
		c.kind = KindClientSecret
		c.secret = withSecret(newSecretMaterial(get(KeyClientSecret)))
	case get(KeyClientCertificate) != "" || get(EnvClientCertificatePath) != "":
		c.kind = KindClientCertificate
		data := []byte(os.Getenv(KeyClientCertificate))
		if len(data) == 0 {
			var err error
			if data, err = os.ReadFile(get(EnvClientCertificatePath)); err != nil {
				return nil, fmt.Errorf("%w: reading %s: %w", ErrInvalidCredential, EnvClientCertificatePath, err)
			}
		}
		m, err := certificateMaterial(data, []byte(os.Getenv(KeyClientCertificatePassword)))
		if err != nil {
			return nil, fmt.Errorf("%w: environment: %w", ErrInvalidCredential, err)
		}
		c.secret = withSecret(m)
	case get(EnvFederatedTokenFile) != "":
		c.kind = KindWorkloadIdentity
		c.secret = withSecret(&secretMaterial{tokenFile: get(EnvFederatedTokenFile)})
	case isTrue(get(KeyUsePodIdentityAuth)) || isTrue(get(EnvUseManagedIdentity)) ||
		authMode == "managedidentity" || authMode == "podidentity" || get(EnvIdentityEndpoint) != "":
		c.kind = KindManagedIdentity
		c.secret = withSecret(&secretMaterial{})
		return c, nil // tenant and client are optional for managed identity
	default:
		return nil, fmt.Errorf("%w: environment sets %s but no way to authenticate: set %s, %s or %s, "+
			"%s=true with %s, or %s=true for a managed identity",
			ErrInvalidCredential, KeySubscriptionID, KeyClientSecret, KeyClientCertificate, EnvClientCertificatePath,
			KeyUseWorkloadIdentityAuth, EnvFederatedTokenFile, KeyUsePodIdentityAuth)
	}
	if err := needTenant(); err != nil {
		return nil, err
	}
	return c, nil
}

// CredentialFromSecret builds a credential from the data of an ASO credential
// Secret (the namespace's aso-credential or a per-resource Secret named by
// serviceoperator.azure.com/credential-from), exactly as ASO reads it:
// AZURE_SUBSCRIPTION_ID, AZURE_TENANT_ID and AZURE_CLIENT_ID are required,
// then AZURE_CLIENT_SECRET, else AZURE_CLIENT_CERTIFICATE (PEM or PKCS#12,
// with AZURE_CLIENT_CERTIFICATE_PASSWORD), else USE_AZURE_POD_IDENTITY_AUTH=true
// (managed identity), else workload identity (the Secret carries no secret
// material; the federated token file comes from the Clients options, the
// environment, or ASO's default path). source is "namespace/name"; the scope
// is ScopeNamespace for aso-credential and ScopeResource otherwise.
func CredentialFromSecret(source string, data map[string]string) (*Credential, error) {
	scope := ScopeResource
	if _, name, ok := strings.Cut(source, "/"); ok && name == aso.NamespaceCredentialSecret {
		scope = ScopeNamespace
	}
	get := func(k string) string { return strings.TrimSpace(data[k]) }
	c := &Credential{
		Scope:          scope,
		Source:         source,
		SubscriptionID: get(KeySubscriptionID),
		TenantID:       get(KeyTenantID),
		ClientID:       get(KeyClientID),
	}
	var missing []string
	for _, k := range []string{KeySubscriptionID, KeyTenantID, KeyClientID} {
		if get(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: credential secret %s does not contain %s", ErrInvalidCredential, source, strings.Join(missing, ", "))
	}
	switch {
	case data[KeyClientSecret] != "":
		c.kind = KindClientSecret
		c.secret = withSecret(newSecretMaterial(data[KeyClientSecret]))
	case data[KeyClientCertificate] != "":
		c.kind = KindClientCertificate
		m, err := certificateMaterial([]byte(data[KeyClientCertificate]), []byte(data[KeyClientCertificatePassword]))
		if err != nil {
			return nil, fmt.Errorf("%w: credential secret %s: %w", ErrInvalidCredential, source, err)
		}
		c.secret = withSecret(m)
	case isTrue(get(KeyUsePodIdentityAuth)):
		c.kind = KindManagedIdentity
		c.secret = withSecret(&secretMaterial{})
	default:
		if v := get(KeyUseWorkloadIdentityAuth); v != "" && !isTrue(v) {
			return nil, fmt.Errorf("%w: credential secret %s sets %s=%s but has no %s or %s",
				ErrInvalidCredential, source, KeyUseWorkloadIdentityAuth, v, KeyClientSecret, KeyClientCertificate)
		}
		c.kind = KindWorkloadIdentity
		c.secret = withSecret(&secretMaterial{})
	}
	return c, nil
}

func newSecretMaterial(secret string) *secretMaterial {
	sum := sha256.Sum256([]byte("secret\x00" + secret))
	return &secretMaterial{clientSecret: secret, digest: hex.EncodeToString(sum[:])}
}

func certificateMaterial(data, password []byte) (*secretMaterial, error) {
	certs, key, err := parseCertificates(data, password)
	if err != nil {
		// azidentity's parse errors do not include key material, but keep ours generic anyway.
		return nil, fmt.Errorf("%s is not a PEM or PKCS#12 certificate with a private key (wrong %s?)",
			KeyClientCertificate, KeyClientCertificatePassword)
	}
	h := sha256.New()
	_, _ = h.Write([]byte("cert\x00"))
	_, _ = h.Write(data)
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(password)
	return &secretMaterial{certs: certs, key: key, digest: hex.EncodeToString(h.Sum(nil))}, nil
}

func isTrue(s string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	return err == nil && b
}
