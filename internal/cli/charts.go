package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/spf13/pflag"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/source/charts"
	"github.com/gitaso/gitaso/source/render"
)

// registerCharts adds the chart fetcher's flags (HelmReleases' charts from
// Helm repositories and OCI registries, with --flux).
func (s *settings) registerCharts(fs *pflag.FlagSet) {
	fs.StringVar(&s.chartCache, "chart-cache", "", "with --flux, keep the charts HelmReleases take from Helm repositories and OCI registries in `DIR`, by digest, with the last index and tag lists (default: <state>.charts for serve and apply; memory only for plan and validate, but <state>.charts for plan --charts-offline)")
	fs.StringArrayVar(&s.skipReleases, "skip-release", nil, "a HelmRelease (`NAMESPACE/NAME`, globs as cert-manager/*) gitaso neither fetches nor renders, as the annotation gitaso.io/skip: \"true\" does; repeatable")
	fs.BoolVar(&s.chartsOffline, "charts-offline", false, "fetch no chart: every HelmRelease's chart and version come from --chart-cache only (air-gapped sites; a chart not cached is an error naming the release)")
}

// chartCacheDir is where the command keeps charts: --chart-cache, else
// "<state>.charts" for serve and apply (and for an offline plan, which
// reads what they cached), else "" (memory only: plan and validate keep
// nothing).
func (s *settings) chartCacheDir() (string, error) {
	dir := s.chartCache
	switch {
	case dir != "":
	case s.persistCharts || s.chartsOffline:
		if s.stateFile == "" {
			return "", errors.New("--charts-offline needs --chart-cache DIR, the directory of the cached charts")
		}
		dir = s.stateFile + ".charts"
	default:
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--chart-cache %s: %w", dir, err)
	}
	return abs, nil
}

// chartFetcher builds the fetcher of the charts HelmReleases take from
// outside the repository (only with --flux). It trusts the system's CAs and
// the cloud configuration's CA (a custom cloud's registries, the emulator's),
// and signs in to Azure Container Registries (provider: azure) with gitaso's
// global credential, read when a registry first asks for it.
func (s *settings) chartFetcher(log *slog.Logger) (render.ChartFetcher, error) {
	if !s.flux {
		return nil, nil
	}
	dir, err := s.chartCacheDir()
	if err != nil {
		return nil, err
	}
	// The cloud configuration is read (a file, no request) for its CA and
	// ARM audience; Azure itself is reached only when a registry asks for a
	// token.
	cloud, err := azure.LoadCloud(s.cloudConfig)
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if cloud.CAFile != "" {
		pem, err := os.ReadFile(cloud.CAFile)
		if err != nil {
			return nil, fmt.Errorf("cloud CA: %w", err)
		}
		roots.AppendCertsFromPEM(pem)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	opts := charts.Options{
		CacheDir: dir, Offline: s.chartsOffline, Logger: log,
		HTTPClient: &http.Client{Transport: tr},
		Azure:      &azureTokens{cloud: cloud},
	}
	if s.gitCA != "" {
		// --git-ca-file: for the GitRepositories charts come from too, as
		// for those of Kustomizations and --repo.
		if opts.CABundle, err = os.ReadFile(s.gitCA); err != nil {
			return nil, fmt.Errorf("read --git-ca-file: %w", err)
		}
	}
	if cloud.Name != azure.PublicCloud().Name && cloud.Audience != "" {
		// A custom cloud (sovereign, Azure Stack, the emulator): its
		// registries take tokens for its ARM audience.
		opts.AzureScope = strings.TrimSuffix(cloud.Audience, "/") + "/.default"
	}
	f, err := charts.New(opts)
	if err != nil {
		return nil, fmt.Errorf("chart fetcher: %w", err)
	}
	return render.ChartsFetcher(f), nil
}

// azureTokens gives the chart fetcher Entra tokens of gitaso's global
// credential (the environment's, as ASO reads it) for Azure Container
// Registry's token exchange. The credential is read on first use, so a
// repository without provider: azure needs none.
type azureTokens struct {
	cloud azure.Cloud

	mu  sync.Mutex
	tc  azcore.TokenCredential
	err error
}

func (a *azureTokens) credential() (azcore.TokenCredential, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tc != nil || a.err != nil {
		return a.tc, a.err
	}
	cred, err := azure.CredentialFromEnv()
	if err != nil {
		a.err = fmt.Errorf("gitaso's global Azure credential: %w", err)
		return nil, a.err
	}
	a.tc, a.err = azure.NewClients(a.cloud, azure.DefaultOptions()).TokenCredential(cred)
	return a.tc, a.err
}

// Token implements charts.TokenSource.
func (a *azureTokens) Token(ctx context.Context, scopes []string) (string, error) {
	tc, err := a.credential()
	if err != nil {
		return "", err
	}
	return charts.AzureTokenSource(tc).Token(ctx, scopes)
}
