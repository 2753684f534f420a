package cli

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/spf13/pflag"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/source/render"
)

// registerAppConfig adds --app-config: substitution sources kept in Azure App Configuration
// (render/appconfig.go).
func (s *settings) registerAppConfig(fs *pflag.FlagSet) {
	fs.StringArrayVar(&s.appConfig, "app-config", nil, "read the ConfigMap or Secret a substituteFrom (or --substitute-from) names from an Azure App Configuration store instead of the cluster, with gitaso's Azure credential: [ConfigMap/|Secret/]NAMESPACE/NAME=https://STORE.azconfig.io[?key=FILTER&label=LABEL[,LABEL]&trim=PREFIX] (repeatable; default every key, no label; Key Vault references are resolved and secret; see docs/appconfig.md)")
}

// appConfigDNSSuffixes are App Configuration's DNS suffixes by the cloud's Key Vault suffix.
var appConfigDNSSuffixes = map[string]string{
	"vault.azure.net":         "azconfig.io",
	"vault.azure.cn":          "azconfig.azure.cn",
	"vault.usgovcloudapi.net": "azconfig.azure.us",
	"vault.microsoftazure.de": "azconfig.azure.de",
}

// appConfigStores gives the renderer the App Configuration sources of --app-config, read with gitaso's global
// credential (signed in on the first read) through the cloud's HTTP client.
func (s *settings) appConfigStores(o *render.Options) error {
	if len(s.appConfig) == 0 {
		return nil
	}
	if s.offline {
		return errors.New("--app-config reads Azure App Configuration: it cannot be used with --offline")
	}
	var sources []render.AppConfigSource
	for _, a := range s.appConfig {
		src, err := render.ParseAppConfigSource(a)
		if err != nil {
			return fmt.Errorf("--app-config: %w", err)
		}
		sources = append(sources, src)
	}
	cloud, err := azure.LoadCloud(s.cloudConfig)
	if err != nil {
		return err
	}
	hc, err := cloud.HTTPClient()
	if err != nil {
		return err
	}
	kvSuffix := strings.ToLower(strings.Trim(cloud.KeyVaultDNSSuffix, "."))
	if kvSuffix == "" {
		kvSuffix = azure.PublicKeyVaultDNSSuffix
	}
	var (
		once sync.Once
		tc   azcore.TokenCredential
		terr error
	)
	ac, err := render.NewAppConfig(sources, render.AppConfigOptions{
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
		HTTPClient:        hc,
		DNSSuffix:         appConfigDNSSuffixes[kvSuffix],
		KeyVaultDNSSuffix: kvSuffix,
	})
	if err != nil {
		return fmt.Errorf("--app-config: %w", err)
	}
	o.AppConfig = ac
	return nil
}
