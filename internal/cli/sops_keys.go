package cli

import (
	"fmt"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/source/render"
)

// sopsKeys gives the renderer the SOPS keys besides age: the PGP keys of
// --sops-pgp-keys and, unless the command runs offline, Azure Key Vault
// through gitaso's global credential (read on the first azure_kv file, so a
// repository without one needs no credential) and the cloud configuration
// (its CA and Key Vault DNS suffix).
func (s *settings) sopsKeys(o *render.Options) error {
	if s.sopsPGPKeys != "" {
		keys, err := render.LoadPGPKeys(s.sopsPGPKeys)
		if err != nil {
			return fmt.Errorf("--sops-pgp-keys: %w", err)
		}
		o.PGPKeys = keys
	}
	if s.offline {
		return nil
	}
	cloud, err := azure.LoadCloud(s.cloudConfig)
	if err != nil {
		return err
	}
	hc, err := cloud.HTTPClient()
	if err != nil {
		return err
	}
	var (
		once sync.Once
		tc   azcore.TokenCredential
		terr error
	)
	o.KeyVault = render.NewAzureKeyVault(render.AzureKeyVaultOptions{
		Credential: func() (azcore.TokenCredential, error) {
			once.Do(func() {
				cred, err := azure.CredentialFromEnv()
				if err != nil {
					terr = fmt.Errorf("gitaso's global Azure credential: %w", err)
					return
				}
				tc, terr = azure.NewClients(cloud, azure.DefaultOptions()).TokenCredential(cred)
			})
			return tc, terr
		},
		HTTPClient: hc,
		DNSSuffix:  cloud.KeyVaultDNSSuffix,
	})
	return nil
}
