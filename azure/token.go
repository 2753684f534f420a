package azure

import (
	"crypto"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

func parseCertificates(data, password []byte) ([]*x509.Certificate, crypto.PrivateKey, error) {
	return azidentity.ParseCertificates(data, password)
}

// tokenCredential builds the azidentity credential for cred. Every credential
// uses the cloud's authority host with instance discovery disabled (MSAL would
// otherwise ask the public cloud about the authority) and the shared HTTP
// client that trusts the cloud's CA.
func (cs *Clients) tokenCredential(cred *Credential, hc *http.Client) (azcore.TokenCredential, error) {
	co := azcore.ClientOptions{
		Cloud:     cs.cloud.azcoreCloud(),
		Transport: hc,
		Retry:     cs.tokenRetry(),
		Telemetry: policy.TelemetryOptions{ApplicationID: cs.opts.ApplicationID},
	}
	s := cred.material()
	if s == nil {
		return nil, fmt.Errorf("%w: credential has no material (build it with CredentialFromEnv or CredentialFromSecret)", ErrInvalidCredential)
	}
	switch cred.kind {
	case KindClientSecret:
		return azidentity.NewClientSecretCredential(cred.TenantID, cred.ClientID, s.clientSecret,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: true})
	case KindClientCertificate:
		return azidentity.NewClientCertificateCredential(cred.TenantID, cred.ClientID, s.certs, s.key,
			&azidentity.ClientCertificateCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: true, SendCertificateChain: true})
	case KindWorkloadIdentity:
		file := s.tokenFile
		if file == "" {
			file = cs.opts.FederatedTokenFile
		}
		if file == "" {
			file = os.Getenv(EnvFederatedTokenFile)
		}
		if file == "" {
			file = DefaultFederatedTokenFile
		}
		return azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
			ClientOptions: co, ClientID: cred.ClientID, TenantID: cred.TenantID, TokenFilePath: file,
			DisableInstanceDiscovery: true,
		})
	case KindManagedIdentity:
		// MSAL picks the managed identity source from IDENTITY_ENDPOINT/IDENTITY_HEADER
		// (App Service protocol) and falls back to IMDS only when they are unset.
		o := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: co}
		if cred.ClientID != "" {
			o.ID = azidentity.ClientID(cred.ClientID)
		}
		return azidentity.NewManagedIdentityCredential(o)
	default:
		return nil, fmt.Errorf("%w: unknown credential kind %q", ErrInvalidCredential, cred.kind)
	}
}

// tokenRetry is the ARM retry policy with at most 3 retries: a token endpoint
// that keeps failing should surface quickly.
func (cs *Clients) tokenRetry() policy.RetryOptions {
	r := cs.opts.Retry
	if r.MaxRetries > 3 || r.MaxRetries == 0 {
		r.MaxRetries = 3
	}
	return r
}

// TokenCredential returns the azcore credential of cred (the cloud's authority, CA and retries), for callers
// that need a raw Entra token, such as Azure Container Registry's token exchange.
func (cs *Clients) TokenCredential(cred *Credential) (azcore.TokenCredential, error) {
	hc, err := cs.httpClient()
	if err != nil {
		return nil, err
	}
	return cs.tokenCredential(cred, hc)
}
