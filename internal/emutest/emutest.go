package emutest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
)

// Env is a running emulator and a client for one principal of it.
type Env struct {
	Emu       *emulator.Emulator
	Cloud     azure.Cloud
	CloudFile string
	Clients   *azure.Clients
	Principal emulator.ServicePrincipal
	Cred      *azure.Credential
	Client    *azure.Client
	Sub       string
}

type config struct {
	roles    []string
	emuOpts  []emulator.Option
	clientFn func(*azure.Options)
}

// Option tunes New.
type Option func(*config)

// Roles are the roles granted to the principal on the default subscription
// (default Owner).
func Roles(r ...string) Option { return func(c *config) { c.roles = r } }

// Emulator passes options to emulator.New.
func Emulator(o ...emulator.Option) Option {
	return func(c *config) { c.emuOpts = append(c.emuOpts, o...) }
}

// ClientOptions adjusts the azure client options (default: production
// options with a 10 ms poll interval).
func ClientOptions(f func(*azure.Options)) Option { return func(c *config) { c.clientFn = f } }

// New starts an emulator, closed when the test ends.
func New(tb testing.TB, opts ...Option) *Env {
	tb.Helper()
	c := &config{roles: []string{"Owner"}}
	for _, o := range opts {
		o(c)
	}
	emu, err := emulator.New(c.emuOpts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = emu.Close() })
	dir := tb.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, emu.CACertPEM(), 0o600); err != nil {
		tb.Fatal(err)
	}
	cloudFile := filepath.Join(dir, "cloud.json")
	if err := os.WriteFile(cloudFile, emu.CloudConfigJSON(caFile), 0o600); err != nil {
		tb.Fatal(err)
	}
	cloud, err := azure.LoadCloud(cloudFile)
	if err != nil {
		tb.Fatal(err)
	}
	e := &Env{Emu: emu, Cloud: cloud, CloudFile: cloudFile, Sub: emu.SubscriptionID()}
	copts := azure.DefaultOptions()
	copts.PollInterval = 10 * time.Millisecond
	if c.clientFn != nil {
		c.clientFn(&copts)
	}
	e.Clients = azure.NewClients(cloud, copts)
	e.Principal, e.Cred = e.AddPrincipal(tb, "platform", c.roles...)
	if e.Client, err = e.Clients.For(e.Cred); err != nil {
		tb.Fatal(err)
	}
	return e
}

// AddPrincipal creates a service principal with roles on the default
// subscription and returns it with its client-secret credential.
func (e *Env) AddPrincipal(tb testing.TB, name string, roles ...string) (emulator.ServicePrincipal, *azure.Credential) {
	tb.Helper()
	sp, err := e.Emu.AddServicePrincipal(name)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range roles {
		if err := e.Emu.AssignRole(sp.ObjectID, r, "/subscriptions/"+e.Sub); err != nil {
			tb.Fatal(err)
		}
	}
	cred, err := azure.CredentialFromSecret(name+"/credential", e.SecretData(sp))
	if err != nil {
		tb.Fatal(err)
	}
	return sp, cred
}

// SecretData is an aso-credential Secret's data for a principal.
func (e *Env) SecretData(sp emulator.ServicePrincipal) map[string]string {
	return map[string]string{
		"AZURE_SUBSCRIPTION_ID": e.Sub, "AZURE_TENANT_ID": e.Emu.TenantID(),
		"AZURE_CLIENT_ID": sp.ClientID, "AZURE_CLIENT_SECRET": sp.Secret,
	}
}
