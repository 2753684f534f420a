package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

// These tests run the production path against the in-process emulator:
// azidentity credentials and the azcore ARM pipeline, with only the endpoints
// and the trusted CA changed through the cloud configuration file.

type emuEnv struct {
	e       *emulator.Emulator
	cloud   Cloud
	sub     string
	clients *Clients
	owner   *Credential
}

func newEmuEnv(t *testing.T, opts ...emulator.Option) *emuEnv {
	t.Helper()
	e, err := emulator.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, e.CACertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cloud.json")
	if err := os.WriteFile(cfg, e.CloudConfigJSON(caFile), 0o600); err != nil {
		t.Fatal(err)
	}
	clearCloudEnv(t)
	cloud, err := LoadCloud(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cloud.Audience != PublicARMAudience || cloud.ARMEndpoint != e.ARMEndpoint() {
		t.Fatalf("cloud %+v", cloud)
	}
	sp, err := e.AddServicePrincipal("platform")
	if err != nil {
		t.Fatal(err)
	}
	sub := e.SubscriptionID()
	if err := e.AssignRole(sp.ObjectID, "Owner", "/subscriptions/"+sub); err != nil {
		t.Fatal(err)
	}
	owner, err := CredentialFromSecret("platform/aso-credential", map[string]string{
		KeySubscriptionID: sub, KeyTenantID: e.TenantID(), KeyClientID: sp.ClientID, KeyClientSecret: sp.Secret})
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.PollInterval = 20 * time.Millisecond
	o.Retry.RetryDelay = 20 * time.Millisecond
	return &emuEnv{e: e, cloud: cloud, sub: sub, owner: owner, clients: NewClients(cloud, o)}
}

func (env *emuEnv) client(t *testing.T, cred *Credential) *Client {
	t.Helper()
	c, err := env.clients.For(cred)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return m
}

func prop(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

func TestEmulatorCRUD(t *testing.T) {
	env := newEmuEnv(t, emulator.WithDefaultLatency(100*time.Millisecond))
	c := env.client(t, env.owner)
	ctx := context.Background()
	rg := "/subscriptions/" + env.sub + "/resourceGroups/rg-crud"
	sa := rg + "/providers/Microsoft.Storage/storageAccounts/stcrud"

	out, err := c.Put(ctx, rg, "2021-04-01", []byte(`{"location":"westeurope","tags":{"team":"platform"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := decode(t, out); !strings.EqualFold(m["id"].(string), rg) || prop(m, "properties", "provisioningState") != "Succeeded" {
		t.Fatalf("resource group %s", out)
	}
	// A long-running create: PUT answers Accepted, the poller waits, Put returns the final resource.
	out, err = c.Put(ctx, sa, "2023-01-01", []byte(`{"location":"westeurope","kind":"StorageV2","sku":{"name":"Standard_LRS"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := decode(t, out); prop(m, "properties", "provisioningState") != "Succeeded" || m["kind"] != "StorageV2" {
		t.Fatalf("storage account after PUT %s", out)
	}
	// Update.
	out, err = c.Put(ctx, sa, "2023-01-01", []byte(`{"location":"westeurope","kind":"StorageV2","sku":{"name":"Standard_GRS"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := decode(t, out); prop(m, "sku", "name") != "Standard_GRS" {
		t.Fatalf("storage account after update %s", out)
	}
	got, err := c.Get(ctx, sa, "2023-01-01")
	if err != nil || prop(decode(t, got), "sku", "name") != "Standard_GRS" {
		t.Fatalf("GET %s %v", got, err)
	}
	items, err := c.List(ctx, rg+"/providers/Microsoft.Storage/storageAccounts", "2023-01-01")
	if err != nil || len(items) != 1 {
		t.Fatalf("list %d items, %v", len(items), err)
	}
	rows, err := c.Query(ctx, "Resources | where resourceGroup =~ 'rg-crud' | project id, type", []string{env.sub})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || !strings.EqualFold(rows[0]["id"].(string), sa) {
		t.Fatalf("resource graph rows %v", rows)
	}
	// Long-running delete, then 404 is ErrNotFound, and deleting again succeeds.
	if err := c.Delete(ctx, sa, "2023-01-01"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, sa, "2023-01-01"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := c.Delete(ctx, sa, "2023-01-01"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	// Errors carry ARM's code: a missing api-version is impossible through the client,
	// but a missing parent is not.
	_, err = c.Put(ctx, "/subscriptions/"+env.sub+"/resourceGroups/nope/providers/Microsoft.Storage/storageAccounts/x", "2023-01-01",
		[]byte(`{"location":"westeurope","kind":"StorageV2","sku":{"name":"Standard_LRS"}}`))
	var ae *ARMError
	if !errors.As(err, &ae) || ae.Code != "ResourceGroupNotFound" || ae.StatusCode != 404 {
		t.Fatalf("missing resource group: %v", err)
	}
	st := env.e.Stats()
	if st.ByStatus[429] != 0 {
		t.Errorf("429s reached the emulator: %v", st.ByStatus)
	}
}

func TestEmulatorWorkloadIdentityAndRBAC(t *testing.T) {
	env := newEmuEnv(t, emulator.WithDefaultLatency(50*time.Millisecond))
	platform := env.client(t, env.owner)
	ctx := context.Background()
	sub := "/subscriptions/" + env.sub
	teamRG := sub + "/resourceGroups/rg-team-a"
	otherRG := sub + "/resourceGroups/rg-team-b"
	for _, rg := range []string{teamRG, otherRG} {
		if _, err := platform.Put(ctx, rg, "2021-04-01", []byte(`{"location":"westeurope"}`)); err != nil {
			t.Fatal(err)
		}
	}
	// The platform team creates the team's identity, federates it with gitaso's
	// service account and makes it Contributor of the team's resource group.
	uai := teamRG + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-team-a"
	out, err := platform.Put(ctx, uai, "2023-01-31", []byte(`{"location":"westeurope"}`))
	if err != nil {
		t.Fatal(err)
	}
	ident := decode(t, out)
	clientID, _ := prop(ident, "properties", "clientId").(string)
	principalID, _ := prop(ident, "properties", "principalId").(string)
	if clientID == "" || principalID == "" {
		t.Fatalf("identity without clientId/principalId: %s", out)
	}
	const subject = "system:serviceaccount:gitaso:gitaso"
	fic := uai + "/federatedIdentityCredentials/gitaso"
	if _, err := platform.Put(ctx, fic, "2023-01-31", []byte(`{"properties":{"issuer":"`+env.e.OIDCIssuer()+
		`","subject":"`+subject+`","audiences":["api://AzureADTokenExchange"]}}`)); err != nil {
		t.Fatal(err)
	}
	ra := teamRG + "/providers/Microsoft.Authorization/roleAssignments/5b8f5a52-3c8e-4d47-9a5a-2f5f3f0f0c11"
	if _, err := platform.Put(ctx, ra, "2022-04-01", []byte(`{"properties":{"roleDefinitionId":"`+sub+
		`/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c","principalId":"`+principalID+
		`","principalType":"ServicePrincipal"}}`)); err != nil {
		t.Fatal(err)
	}

	// The team's namespace credential: workload identity, no secret material.
	tok, err := env.e.IssueServiceAccountToken("", subject)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "azure-identity")
	if err := os.WriteFile(tokenFile, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.PollInterval = 20 * time.Millisecond
	o.FederatedTokenFile = tokenFile
	clients := NewClients(env.cloud, o)
	teamCred, err := CredentialFromSecret("team-a/aso-credential", map[string]string{
		KeySubscriptionID: env.sub, KeyTenantID: env.e.TenantID(), KeyClientID: clientID})
	if err != nil || teamCred.Kind() != KindWorkloadIdentity {
		t.Fatalf("%v %v", teamCred, err)
	}
	team, err := clients.For(teamCred)
	if err != nil {
		t.Fatal(err)
	}
	sb := teamRG + "/providers/Microsoft.ServiceBus/namespaces/sb-team-a"
	out, err = team.Put(ctx, sb, "2021-11-01", []byte(`{"location":"westeurope","sku":{"name":"Standard"}}`))
	if err != nil {
		t.Fatalf("team PUT in its own resource group: %v", err)
	}
	if prop(decode(t, out), "properties", "provisioningState") != "Succeeded" {
		t.Fatalf("service bus %s", out)
	}
	// The same identity cannot touch another team's resource group: 403 AuthorizationFailed.
	_, err = team.Put(ctx, otherRG+"/providers/Microsoft.ServiceBus/namespaces/sb-intruder", "2021-11-01",
		[]byte(`{"location":"westeurope","sku":{"name":"Standard"}}`))
	var ae *ARMError
	if !errors.As(err, &ae) {
		t.Fatalf("want ARMError, got %v", err)
	}
	if ae.StatusCode != 403 || ae.Code != "AuthorizationFailed" || !ae.Retryable || !strings.Contains(ae.Message, clientID) {
		t.Fatalf("got %+v", ae)
	}
}

func TestEmulatorThrottlingRecovery(t *testing.T) {
	env := newEmuEnv(t)
	c := env.client(t, env.owner)
	ctx := context.Background()
	rg := "/subscriptions/" + env.sub + "/resourceGroups/rg-throttle"
	if _, err := c.Put(ctx, rg, "2021-04-01", []byte(`{"location":"westeurope"}`)); err != nil {
		t.Fatal(err)
	}
	env.e.ResetStats()
	// One try in five fails. A GET fails for good only when all seven of its
	// tries do (DefaultOptions' MaxRetries 6): 0.2^7 × 40 GETs ≈ 1 run in
	// 2,000. At 0.4 it was 0.4^7 × 40 ≈ 1 run in 16, which CI saw.
	env.e.SetFaults(emulator.Faults{Rate429: 0.15, Rate503: 0.05, Methods: []string{"GET"}})
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = c.Get(ctx, rg, "2021-04-01")
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("GET %d: %v", i, err)
		}
	}
	st := env.e.Stats()
	if st.ByStatus[429] == 0 && st.ByStatus[503] == 0 {
		t.Fatalf("no fault was injected (%v); the test proves nothing", st.ByStatus)
	}
	if st.ByStatus[200] < 40 {
		t.Errorf("successful GETs at the emulator = %d, want ≥ 40", st.ByStatus[200])
	}
}

func TestEmulatorManagedIdentity(t *testing.T) {
	env := newEmuEnv(t)
	mi := env.e.HostManagedIdentity()
	if err := env.e.AssignRole(mi.PrincipalID, "Reader", "/subscriptions/"+env.sub); err != nil {
		t.Fatal(err)
	}
	rg := "/subscriptions/" + env.sub + "/resourceGroups/rg-mi"
	if _, err := env.client(t, env.owner).Put(context.Background(), rg, "2021-04-01", []byte(`{"location":"westeurope"}`)); err != nil {
		t.Fatal(err)
	}
	endpoint, header := env.e.ManagedIdentityEndpoint()
	clearCredentialEnv(t)
	t.Setenv("IDENTITY_ENDPOINT", endpoint)
	t.Setenv("IDENTITY_HEADER", header)
	t.Setenv(KeySubscriptionID, env.sub)
	cred, err := CredentialFromEnv()
	if err != nil || cred.Kind() != KindManagedIdentity {
		t.Fatalf("%v %v", cred, err)
	}
	c := env.client(t, cred)
	if _, err := c.Get(context.Background(), rg, "2021-04-01"); err != nil {
		t.Fatalf("reader GET: %v", err)
	}
	_, err = c.Put(context.Background(), rg+"/providers/Microsoft.Storage/storageAccounts/stmi", "2023-01-01",
		[]byte(`{"location":"westeurope","kind":"StorageV2","sku":{"name":"Standard_LRS"}}`))
	var ae *ARMError
	if !errors.As(err, &ae) || ae.Code != "AuthorizationFailed" {
		t.Fatalf("reader PUT: want AuthorizationFailed, got %v", err)
	}
}

// benchEmulator starts an unthrottled emulator and returns an Owner client.
func benchEmulator(b *testing.B) (*emulator.Emulator, *Client, string) {
	e, err := emulator.New(emulator.WithoutThrottling(), emulator.WithRequestLogSize(0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	sp, _ := e.AddServicePrincipal("bench")
	sub := e.SubscriptionID()
	if err := e.AssignRole(sp.ObjectID, "Owner", "/subscriptions/"+sub); err != nil {
		b.Fatal(err)
	}
	cred, _ := CredentialFromSecret("bench/aso-credential", map[string]string{
		KeySubscriptionID: sub, KeyTenantID: e.TenantID(), KeyClientID: sp.ClientID, KeyClientSecret: sp.Secret})
	o := DefaultOptions()
	o.HTTPClient = e.HTTPClient()
	o.Limits = RateLimits{Disabled: true}
	o.PollInterval = 5 * time.Millisecond
	c, err := NewClients(Cloud{ARMEndpoint: e.ARMEndpoint(), AuthorityHost: e.AuthorityHost()}, o).For(cred)
	if err != nil {
		b.Fatal(err)
	}
	rg := "/subscriptions/" + sub + "/resourceGroups/rg-bench"
	if _, err := c.Put(context.Background(), rg, "2021-04-01", []byte(`{"location":"westeurope"}`)); err != nil {
		b.Fatal(err)
	}
	return e, c, rg
}

// BenchmarkEmulatorGet measures GETs through the full pipeline against the emulator.
func BenchmarkEmulatorGet(b *testing.B) {
	_, c, rg := benchEmulator(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Get(ctx, rg, "2021-04-01"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkEmulatorPutLRO measures a long-running PUT (202, one poll, final
// resource) of a storage account with zero operation latency.
func BenchmarkEmulatorPutLRO(b *testing.B) {
	_, c, rg := benchEmulator(b)
	ctx := context.Background()
	var n atomic.Int64
	body := []byte(`{"location":"westeurope","kind":"StorageV2","sku":{"name":"Standard_LRS"}}`)
	b.ReportAllocs()
	b.SetParallelism(16) // each PUT waits for the emulator's poll hint: measure throughput, not latency
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("%s/providers/Microsoft.Storage/storageAccounts/st%d", rg, n.Add(1))
			if _, err := c.Put(ctx, id, "2023-01-01", body); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// With client-side buckets just under the emulator's (ARM's, scaled down),
// no request is ever throttled: gitaso waits instead of collecting 429s.
func TestEmulatorLimiterKeepsUnderARMBuckets(t *testing.T) {
	const scale = 0.2 // emulator reads: 50 burst, 5/s
	env := newEmuEnv(t, emulator.WithThrottleScale(scale))
	o := DefaultOptions()
	o.Limits = RateLimits{
		Reads:   Limit{Burst: int(250 * scale * 0.9), PerSecond: 25 * scale * 0.9},
		Writes:  Limit{Burst: int(200 * scale * 0.9), PerSecond: 10 * scale * 0.9},
		Deletes: Limit{Burst: int(200 * scale * 0.9), PerSecond: 10 * scale * 0.9},
	}
	c, err := NewClients(env.cloud, o).For(env.owner)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rg := "/subscriptions/" + env.sub + "/resourceGroups/rg-limits"
	if _, err := c.Put(ctx, rg, "2021-04-01", []byte(`{"location":"westeurope"}`)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 55 { // 45 from the burst, 10 more at 4.5/s
		wg.Go(func() {
			if _, err := c.Get(ctx, rg, "2021-04-01"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if st := env.e.Stats(); st.ByStatus[429] != 0 || st.Throttled != 0 {
		t.Fatalf("throttled %d times (%v)", st.Throttled, st.ByStatus)
	}
}
