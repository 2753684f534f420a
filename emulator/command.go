package emulator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// BootstrapPrincipalName is the display name of the service principal RunCommand creates with Owner on the default
// subscription (reused across restarts with a data file).
const BootstrapPrincipalName = "gitaso-bootstrap"

// CommandOptions configure RunCommand (`gitaso emulator`).
type CommandOptions struct {
	Addr           string        // listen address (default "127.0.0.1:8443")
	DataFile       string        // keep state across restarts ("" = in memory)
	Dir            string        // where ca.pem and cloud.json are written (default ".gitaso-emulator")
	Latency        time.Duration // default LRO duration
	ThrottleScale  float64       // 0 means 1 (ARM's real limits); see NoThrottle
	NoThrottle     bool          // disable throttling
	TenantID       string        // default DefaultTenantID
	SubscriptionID string        // default DefaultSubscriptionID
	Hostnames      []string      // extra names for the serving certificate
	// Registries are the Azure Container Registries served (WithRegistry), by name; their login servers are
	// printed.
	Registries []string
	// Faults are injected from the start (WithFaults); PUT /_admin/faults replaces them while it runs.
	Faults Faults
	Logger *slog.Logger
	// Users can sign in through the tenant's authorization endpoint
	// (WithUsers).
	Users []User
	// SignInRedirectURIs, when set, register the application
	// SignInApplicationName with these redirect URIs; its issuer, client ID
	// and secret are printed (GITASO_OIDC_*).
	SignInRedirectURIs []string
	// OnReady, when set, is called once the emulator serves and the files are written.
	OnReady func(*Emulator)
}

// DefaultCommandOptions returns the defaults of `gitaso emulator`.
func DefaultCommandOptions() CommandOptions {
	return CommandOptions{Addr: "127.0.0.1:8443", Dir: ".gitaso-emulator"}
}

// RunCommand runs the emulator until ctx is done: it writes ca.pem and cloud.json into opts.Dir, ensures the
// bootstrap service principal (Owner on the default subscription) and prints `export KEY=value` lines for a shell
// (`eval "$(gitaso emulator)"`) to stdout. The printed client secret is the only secret output; nothing secret is
// logged.
func RunCommand(ctx context.Context, opts CommandOptions, stdout io.Writer) error {
	def := DefaultCommandOptions()
	if opts.Addr == "" {
		opts.Addr = def.Addr
	}
	if opts.Dir == "" {
		opts.Dir = def.Dir
	}
	if err := opts.Faults.check(); err != nil {
		return fmt.Errorf("emulator: %w", err)
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return fmt.Errorf("emulator: resolve dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("emulator: create dir: %w", err)
	}
	eopts := []Option{WithAddr(opts.Addr), WithDefaultLatency(opts.Latency), WithHostnames(opts.Hostnames...), WithFaults(opts.Faults)}
	if opts.Logger != nil {
		eopts = append(eopts, WithLogger(opts.Logger))
	}
	for _, r := range opts.Registries {
		eopts = append(eopts, WithRegistry(r))
	}
	if len(opts.Users) > 0 {
		eopts = append(eopts, WithUsers(opts.Users...))
	}
	if opts.TenantID != "" {
		eopts = append(eopts, WithTenantID(opts.TenantID))
	}
	if opts.SubscriptionID != "" {
		eopts = append(eopts, WithSubscriptionID(opts.SubscriptionID))
	}
	switch {
	case opts.NoThrottle:
		eopts = append(eopts, WithoutThrottling())
	case opts.ThrottleScale > 0:
		eopts = append(eopts, WithThrottleScale(opts.ThrottleScale))
	}
	if opts.DataFile != "" {
		df, err := filepath.Abs(opts.DataFile)
		if err != nil {
			return fmt.Errorf("emulator: resolve data file: %w", err)
		}
		eopts = append(eopts, WithDataFile(df))
	}
	e, err := New(eopts...)
	if err != nil {
		return fmt.Errorf("emulator: start: %w", err)
	}
	defer e.Close()
	caFile := filepath.Join(dir, "ca.pem")
	cloudFile := filepath.Join(dir, "cloud.json")
	if err := writeFileAtomic(caFile, e.CACertPEM(), 0o644); err != nil {
		return fmt.Errorf("emulator: %w", err)
	}
	if err := writeFileAtomic(cloudFile, e.CloudConfigJSON(caFile), 0o644); err != nil {
		return fmt.Errorf("emulator: %w", err)
	}
	sp, ok := e.ServicePrincipalByName(BootstrapPrincipalName)
	if !ok {
		if sp, err = e.AddPrincipal(PrincipalSpec{ServicePrincipal: ServicePrincipal{DisplayName: BootstrapPrincipalName},
			Roles: []RoleGrant{{Role: "Owner", Scope: "/subscriptions/" + e.SubscriptionID()}}}); err != nil {
			return fmt.Errorf("emulator: bootstrap principal: %w", err)
		}
	}
	idEndpoint, idHeader := e.ManagedIdentityEndpoint()
	proxyURL, err := e.StartLoginProxy()
	if err != nil {
		return fmt.Errorf("emulator: %w", err)
	}
	lines := []string{
		"# gitaso emulator: ARM " + e.ARMEndpoint() + ", tenant " + e.TenantID(),
		"export AZURE_TENANT_ID=" + e.TenantID(),
		"export AZURE_SUBSCRIPTION_ID=" + e.SubscriptionID(),
		"export AZURE_CLIENT_ID=" + sp.ClientID,
		"export AZURE_CLIENT_SECRET=" + sp.Secret,
		"export GITASO_CLOUD_CONFIG=" + cloudFile,
		"export AZURE_AUTHORITY_HOST=" + e.AuthorityHost(),
		"export GITASO_ARM_ENDPOINT=" + e.ARMEndpoint(),
		"export GITASO_CA_FILE=" + caFile,
		"export GITASO_EMULATOR_ADMIN_TOKEN=" + e.AdminToken(),
		"# Tools that do not read GITASO_CA_FILE can trust the emulator with (this replaces the system roots):",
		"# export SSL_CERT_FILE=" + caFile,
		"# Managed identity (App Service protocol), for experiments:",
		"# export IDENTITY_ENDPOINT=" + idEndpoint + " IDENTITY_HEADER=" + idHeader,
		"# Azure CLI (the cloud signs in at the emulator's ADFS authority; --cloud-config adds Key Vault's suffix):",
		"# export REQUESTS_CA_BUNDLE=" + caFile + " AZURE_CONFIG_DIR=$PWD/.azure",
		"# az cloud register -n gitaso --cloud-config '" + AzureCLICloudConfig(e.ARMEndpoint()) + "' && az cloud set -n gitaso",
		"# az login --service-principal -u $AZURE_CLIENT_ID -p $AZURE_CLIENT_SECRET --tenant $AZURE_TENANT_ID",
		"# Tools that must reach {vault}.vault.azure.net, {store}.azconfig.io, {registry}.azurecr.io or Entra's public host names: export HTTPS_PROXY=" + proxyURL,
	}
	for _, name := range opts.Registries {
		host := e.RegistryHost(name)
		lines = append(lines, fmt.Sprintf("# Azure Container Registry %s: login server %s (helm registry login %s -u $AZURE_CLIENT_ID "+
			"-p $AZURE_CLIENT_SECRET --ca-file %s; helm push CHART.tgz oci://%s/helm --ca-file %s)", name, host, host, caFile, host, caFile))
	}
	if len(opts.SignInRedirectURIs) > 0 {
		app, err := e.AddSignInApplication(SignInApplicationName, opts.SignInRedirectURIs...)
		if err != nil {
			return fmt.Errorf("emulator: %w", err)
		}
		lines = append(lines,
			"# Sign-in (OpenID Connect): application "+SignInApplicationName+", redirect URIs "+strings.Join(opts.SignInRedirectURIs, " "),
			"export GITASO_OIDC_ISSUER="+e.SignInIssuer(),
			"export GITASO_OIDC_CLIENT_ID="+app.ClientID,
			"export GITASO_OIDC_CLIENT_SECRET="+app.Secret)
		for _, u := range e.Users() {
			lines = append(lines, fmt.Sprintf("# user %s (groups: %s)", u.UserPrincipalName, strings.Join(u.Groups, ", ")))
		}
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(stdout, l); err != nil {
			return fmt.Errorf("emulator: write settings: %w", err)
		}
	}
	if opts.Logger != nil {
		opts.Logger.Info("emulator ready", "arm", e.ARMEndpoint(), "cloudConfig", cloudFile, "caFile", caFile, "bootstrap", sp)
	}
	if opts.OnReady != nil {
		opts.OnReady(e)
	}
	<-ctx.Done()
	if err := e.Close(); err != nil {
		return fmt.Errorf("emulator: close: %w", err)
	}
	return nil
}
