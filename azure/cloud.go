package azure

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
)

// Environment variables read by LoadCloud.
const (
	EnvCloudConfig   = "GITASO_CLOUD_CONFIG"
	EnvARMEndpoint   = "GITASO_ARM_ENDPOINT"
	EnvAuthorityHost = "AZURE_AUTHORITY_HOST"
	EnvARMAudience   = "GITASO_ARM_AUDIENCE"
	EnvCAFile        = "GITASO_CA_FILE"
)

// Public cloud endpoints.
const (
	PublicARMEndpoint   = "https://management.azure.com"
	PublicAuthorityHost = "https://login.microsoftonline.com/"
	PublicARMAudience   = "https://management.azure.com"
	// PublicKeyVaultDNSSuffix is Key Vault's DNS suffix in the public cloud.
	PublicKeyVaultDNSSuffix = "vault.azure.net"
)

// Cloud names the endpoints gitaso talks to and the CA it trusts. Its JSON form
// is the cloud configuration file that `gitaso emulator` writes.
type Cloud struct {
	Name           string `json:"name,omitempty"`
	ARMEndpoint    string `json:"armEndpoint"`
	AuthorityHost  string `json:"authorityHost"`
	Audience       string `json:"audience,omitempty"`
	CAFile         string `json:"caFile,omitempty"`
	TenantID       string `json:"tenantId,omitempty"`
	SubscriptionID string `json:"subscriptionId,omitempty"`
	// KeyVaultDNSSuffix is the cloud's Key Vault DNS suffix (vault.azure.net
	// in the public cloud, vault.azure.cn, vault.usgovcloudapi.net); SOPS
	// files' azure_kv vaults must lie under it, and gitaso's Key Vault token
	// is for https://{suffix}. Empty in a configuration file: the public
	// cloud's.
	KeyVaultDNSSuffix string `json:"keyVaultDnsSuffix,omitempty"`
}

// PublicCloud returns Azure's public cloud.
func PublicCloud() Cloud {
	return Cloud{
		Name:          "AzurePublicCloud",
		ARMEndpoint:   PublicARMEndpoint,
		AuthorityHost: PublicAuthorityHost,
		Audience:      PublicARMAudience,

		KeyVaultDNSSuffix: PublicKeyVaultDNSSuffix,
	}
}

// LoadCloud reads the cloud configuration file at path (GITASO_CLOUD_CONFIG
// when path is empty; the public cloud when both are empty) and then applies
// the environment overrides GITASO_ARM_ENDPOINT, AZURE_AUTHORITY_HOST,
// GITASO_ARM_AUDIENCE and GITASO_CA_FILE. A relative caFile in the file is
// resolved against the file's directory. The result is validated: endpoints
// must be absolute https URLs and the CA file must hold at least one PEM
// certificate.
func LoadCloud(path string) (Cloud, error) {
	if path == "" {
		path = os.Getenv(EnvCloudConfig)
	}
	c := PublicCloud()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Cloud{}, fmt.Errorf("reading cloud configuration: %w", err)
		}
		var fc Cloud
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fc); err != nil {
			return Cloud{}, fmt.Errorf("parsing cloud configuration %s: %w", path, err)
		}
		if fc.CAFile != "" && !filepath.IsAbs(fc.CAFile) {
			fc.CAFile = filepath.Join(filepath.Dir(path), fc.CAFile)
		}
		c = fc
		if c.Audience == "" {
			c.Audience = PublicARMAudience
		}
		if c.Name == "" {
			c.Name = path
		}
	}
	if v := os.Getenv(EnvARMEndpoint); v != "" {
		c.ARMEndpoint = v
	}
	if v := os.Getenv(EnvAuthorityHost); v != "" {
		c.AuthorityHost = v
	}
	if v := os.Getenv(EnvARMAudience); v != "" {
		c.Audience = v
	}
	if v := os.Getenv(EnvCAFile); v != "" {
		c.CAFile = v
	}
	if err := c.Validate(); err != nil {
		return Cloud{}, err
	}
	return c, nil
}

// Validate reports whether the endpoints are absolute https URLs and the CA
// file, when set, is readable PEM.
func (c Cloud) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"armEndpoint", c.ARMEndpoint}, {"authorityHost", c.AuthorityHost}, {"audience", c.Audience},
	} {
		u, err := url.Parse(f.v)
		if err != nil || u.Host == "" {
			return fmt.Errorf("cloud configuration: %s %q is not an absolute URL", f.name, f.v)
		}
		if f.name != "audience" && u.Scheme != "https" {
			// azidentity refuses non-TLS authorities and the bearer policy refuses to send tokens over http.
			return fmt.Errorf("cloud configuration: %s %q must use https", f.name, f.v)
		}
	}
	if c.CAFile != "" {
		if _, err := c.CertPool(); err != nil {
			return err
		}
	}
	return nil
}

// azcoreCloud is the azcore view of c: the authority host for azidentity and
// the ARM endpoint and audience for the ARM pipeline.
func (c Cloud) azcoreCloud() cloud.Configuration {
	return cloud.Configuration{
		ActiveDirectoryAuthorityHost: c.AuthorityHost,
		Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Endpoint: strings.TrimRight(c.ARMEndpoint, "/"), Audience: c.Audience},
		},
	}
}

// CertPool returns the system roots plus the certificates in CAFile (just the
// system roots when CAFile is empty).
func (c Cloud) CertPool() (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if c.CAFile == "" {
		return pool, nil
	}
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("cloud configuration: reading CA file: %w", err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cloud configuration: CA file %s holds no PEM certificate", c.CAFile)
	}
	return pool, nil
}

// HTTPClient returns an HTTP client trusting the cloud's CA, tuned for many
// concurrent requests to one ARM host. azidentity and the ARM pipelines share it.
func (c Cloud) HTTPClient() (*http.Client, error) {
	pool, err := c.CertPool()
	if err != nil {
		return nil, err
	}
	return newHTTPClient(pool), nil
}

func newHTTPClient(pool *x509.CertPool) *http.Client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: DefaultTryTimeout,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}
	return &http.Client{Transport: tr}
}
