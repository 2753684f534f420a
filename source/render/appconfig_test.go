package render

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

func TestParseAppConfigSource(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want AppConfigSource
		err  string
	}{
		{in: "flux-system/platform-vars=https://Platform.azconfig.io",
			want: AppConfigSource{Ref: Ref{Namespace: "flux-system", Name: "platform-vars"}, Endpoint: "https://platform.azconfig.io"}},
		{in: `ConfigMap/flux-system/platform-vars=https://p.azconfig.io/?key=platform/*&label=\0,prod&trim=platform/`,
			want: AppConfigSource{Ref: Ref{Kind: "ConfigMap", Namespace: "flux-system", Name: "platform-vars"}, Endpoint: "https://p.azconfig.io",
				Key: "platform/*", Labels: []string{"", "prod"}, Trim: []string{"platform/"}}},
		{in: "Secret/ops/creds=https://p.azconfig.io?label=%00", want: AppConfigSource{Ref: Ref{Kind: "Secret", Namespace: "ops", Name: "creds"},
			Endpoint: "https://p.azconfig.io", Labels: []string{""}}},
		{in: "flux-system/platform-vars", err: "want [ConfigMap/|Secret/]namespace/name=https://"},
		{in: "flux-system/platform-vars=http://p.azconfig.io", err: "is not a store endpoint"},
		{in: "flux-system/platform-vars,optional=https://p.azconfig.io", err: "belongs to the substituteFrom"},
		{in: "a/b=https://p.azconfig.io?labels=prod", err: `unknown parameter "labels"`},
		{in: "a/b=https://p.azconfig.io?label=pr*", err: "labels are exact"},
	} {
		got, err := ParseAppConfigSource(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
		if again, err := ParseAppConfigSource(got.String()); err != nil || !cmp.Equal(again, got) {
			t.Errorf("%s: String %q reads back as %+v, %v", tc.in, got.String(), again, err)
		}
	}
	if _, err := NewAppConfig([]AppConfigSource{{Ref: Ref{Name: "x"}, Endpoint: "https://p.example.com"}}, AppConfigOptions{}); err == nil ||
		!strings.Contains(err.Error(), "not under this cloud's App Configuration DNS suffix") {
		t.Errorf("a store outside azconfig.io: %v", err)
	}
}

// acFixture is the emulator with a store (platform-cfg) and an RBAC vault (platform-kv) holding the platform's
// variables, and gitaso's principal without a role on either yet.
type acFixture struct {
	env     *emutest.Env
	storeID string
	vaultID string
	gitaso  emulator.ServicePrincipal
	cred    azcore.TokenCredential
}

const acSecretValue = "s3cr3t-AppConfig-9d1e"

func newACFixture(t *testing.T) *acFixture {
	t.Helper()
	env := emutest.New(t)
	e := env.Emu
	ctx := context.Background()
	rg := "/subscriptions/" + env.Sub + "/resourceGroups/rg-platform"
	f := &acFixture{env: env, storeID: rg + "/providers/Microsoft.AppConfiguration/configurationStores/platform-cfg",
		vaultID: rg + "/providers/Microsoft.KeyVault/vaults/platform-kv"}
	for _, p := range []struct{ id, api, body string }{
		{rg, "2020-06-01", `{"location":"uksouth"}`},
		{f.storeID, "2024-06-01", `{"location":"uksouth","sku":{"name":"standard"}}`},
		{f.vaultID, "2024-11-01", `{"location":"uksouth","properties":{"tenantId":"` + e.TenantID() + `","sku":{"family":"A","name":"standard"},"enableRbacAuthorization":true}}`},
	} {
		if _, err := env.Client.Put(ctx, p.id, p.api, []byte(p.body)); err != nil {
			t.Fatal(err)
		}
	}
	secretID, err := e.PutKeyVaultSecret("platform-kv", "db-password", acSecretValue)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []emulator.AppConfigKeyValue{
		{Key: "ENVIRONMENT", Value: "snd"},
		{Key: "ENVIRONMENT", Label: "prod", Value: "prd"},
		{Key: "ACR_NAME", Value: "sndadpinfcr1401"},
		{Key: "DB_PASSWORD", Label: "prod", Value: `{"uri":"` + strings.TrimSuffix(secretID, "/"+lastSegment(secretID)) + `"}`, ContentType: emulator.AppConfigKeyVaultRefContentType},
		{Key: ".appconfig.featureflag/beta", Value: `{"id":"beta","enabled":true}`, ContentType: "application/vnd.microsoft.appconfig.ff+json;charset=utf-8"},
		{Key: "teams/a:NAME", Label: "prod", Value: "team-a"},
	} {
		if err := e.PutAppConfigKeyValue("platform-cfg", kv); err != nil {
			t.Fatal(err)
		}
	}
	sp, cred := env.AddPrincipal(t, "gitaso")
	tc, err := env.Clients.TokenCredential(cred)
	if err != nil {
		t.Fatal(err)
	}
	f.gitaso, f.cred = sp, tc
	return f
}

func lastSegment(s string) string { return s[strings.LastIndexByte(s, '/')+1:] }

func (f *acFixture) grant(t *testing.T, role, scope string) {
	t.Helper()
	if err := f.env.Emu.AssignRole(f.gitaso.ObjectID, role, scope); err != nil {
		t.Fatal(err)
	}
}

// appConfig returns the reader of sources with gitaso's credential, through the emulator (or client).
func (f *acFixture) appConfig(t *testing.T, client *http.Client, sources ...string) *AppConfig {
	t.Helper()
	var srcs []AppConfigSource
	for _, s := range sources {
		src, err := ParseAppConfigSource(s)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src)
	}
	if client == nil {
		client = f.env.Emu.KeyVaultHTTPClient()
	}
	ac, err := NewAppConfig(srcs, AppConfigOptions{Credential: func() (azcore.TokenCredential, error) { return f.cred, nil }, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	return ac
}

// acRepo is a Flux repository whose platform Kustomization substitutes from platform-vars, which no file holds.
func acRepo(t *testing.T) string {
	t.Helper()
	return writeRepo(t, map[string]string{
		"clusters/snd/platform.yaml": fluxKustomizationDoc("platform", "./platform",
			"  postBuild:\n    substituteFrom:\n    - kind: ConfigMap\n      name: platform-vars\n"),
		"platform/kustomization.yaml": "resources: [rg.yaml]\n",
		"platform/rg.yaml": "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: platform-rg\n  namespace: platform\n" +
			"spec:\n  location: uksouth\n  tags:\n    env: ${ENVIRONMENT}\n    acr: ${ACR_NAME}\n    db: pw-${DB_PASSWORD}\n",
	})
}

// TestAppConfigSubstituteFrom: a Flux Kustomization's substituteFrom platform-vars is read from an App
// Configuration store: the no-label values, then the prod label's over them, a Key Vault reference resolved and
// recorded as secret (the object's Secrets name the vault), a feature flag skipped; the store's content is an
// external of the revision. Before gitaso's identity has App Configuration Data Reader, and then Key Vault
// Secrets User, the Kustomization fails alone (ArtifactFailed, retried without a commit) with an error naming the
// store, the substituteFrom and the Kustomization's file, one that lies outside the commit (source.ErrUnavailable).
func TestAppConfigSubstituteFrom(t *testing.T) {
	f := newACFixture(t)
	root := acRepo(t)
	ac := f.appConfig(t, nil, `ConfigMap/flux-system/platform-vars=https://platform-cfg.azconfig.io?key=*&label=\0,prod&trim=teams/a:`)

	render := func() (*manifest.Snapshot, error) {
		t.Helper()
		return fluxFetch(t, root, "clusters/snd", Options{Strict: true, AppConfig: ac})
	}
	const unit = "Kustomization/flux-system/platform"
	snap, err := render()
	u, err := failedUnit(t, snap, err, unit, manifest.ReasonArtifactFailed)
	for _, want := range []string{"clusters/snd/platform.yaml", "substitute-from ConfigMap/flux-system/platform-vars", "https://platform-cfg.azconfig.io", "403", "keyValues/read", "Flux Kustomization flux-system/platform"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("without a role on the store: unit error %v, want it to name %q", err, want)
		}
	}
	if !errors.Is(err, source.ErrUnavailable) || !u.Retry {
		t.Errorf("a store that refuses is not source.ErrUnavailable, retried without a commit (retry %v): %v", u.Retry, err)
	}

	f.grant(t, "App Configuration Data Reader", f.storeID)
	snap, err = render()
	_, err = failedUnit(t, snap, err, unit, manifest.ReasonArtifactFailed)
	for _, want := range []string{"DB_PASSWORD", "Key Vault reference", "403", "secrets/getSecret/action", "https://platform-cfg.azconfig.io"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("without a role on the vault: error %v, want it to name %q", err, want)
		}
	}

	f.grant(t, "Key Vault Secrets User", f.vaultID)
	snap, err = render()
	if err != nil {
		t.Fatal(err)
	}
	rg := find(t, snap, "platform/ResourceGroup/platform-rg")
	tags := field(rg, "spec", "tags").(map[string]any)
	if diff := cmp.Diff(map[string]any{"env": "prd", "acr": "sndadpinfcr1401", "db": "pw-" + acSecretValue}, tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	if len(rg.Secrets) != 1 || rg.Secrets[0].Value() != acSecretValue || rg.Secrets[0].From != "Key Vault secret platform-kv/db-password" {
		t.Errorf("the object's secret values %v, want the Key Vault secret platform-kv/db-password", rg.Secrets)
	}
	var ext []manifest.External
	for _, x := range snap.External {
		if x.Kind == "AppConfiguration" {
			ext = append(ext, x)
		}
	}
	if len(ext) != 1 || ext[0].User != "flux-system/platform-vars" || ext[0].Name != "https://platform-cfg.azconfig.io" || strings.Contains(ext[0].Digest, acSecretValue) {
		t.Errorf("externals %+v, want the store read for flux-system/platform-vars", snap.External)
	}

	// --substitute-from without Flux reads the store the same way.
	plain, err := fetch(t, root, "platform", Options{Kustomize: true, Substitute: true, Strict: true, AppConfig: ac,
		SubstituteFrom: []Ref{{Namespace: "flux-system", Name: "platform-vars"}}})
	if err != nil {
		t.Fatal(err)
	}
	if rg := find(t, plain, "platform/ResourceGroup/platform-rg"); field(rg, "spec", "tags", "env") != "prd" || len(rg.Secrets) != 1 {
		t.Errorf("--substitute-from: tags %v, secrets %v", field(rg, "spec", "tags"), rg.Secrets)
	}

	// Read as a Secret, every value of the store is secret.
	either := f.appConfig(t, nil, `flux-system/platform-vars=https://platform-cfg.azconfig.io?label=\0,prod&trim=teams/a:`)
	asSecret, err := fetch(t, root, "platform", Options{Kustomize: true, Substitute: true, Strict: true, AppConfig: either,
		SubstituteFrom: []Ref{{Kind: "Secret", Namespace: "flux-system", Name: "platform-vars"}}})
	if err != nil {
		t.Fatal(err)
	}
	froms := map[string]string{}
	for _, sv := range find(t, asSecret, "platform/ResourceGroup/platform-rg").Secrets {
		froms[sv.Value()] = sv.From
	}
	if diff := cmp.Diff(map[string]string{"prd": "Secret flux-system/platform-vars", "sndadpinfcr1401": "Secret flux-system/platform-vars",
		acSecretValue: "Key Vault secret platform-kv/db-password"}, froms); diff != "" {
		t.Errorf("secret values read as a Secret (-want +got):\n%s", diff)
	}

	// A changed key-value is a new revision.
	before := snap.Revision
	if err := f.env.Emu.PutAppConfigKeyValue("platform-cfg", emulator.AppConfigKeyValue{Key: "ACR_NAME", Value: "sndadpinfcr1402"}); err != nil {
		t.Fatal(err)
	}
	if snap, err = render(); err != nil {
		t.Fatal(err)
	}
	if snap.Revision == before {
		t.Errorf("a changed key-value left the revision %s as it was", before)
	}

	// A key that is no variable name (without trim=) names the store and the key.
	ac = f.appConfig(t, nil, `flux-system/platform-vars=https://platform-cfg.azconfig.io?label=prod`)
	snap, err = fluxFetch(t, root, "clusters/snd", Options{Strict: true, AppConfig: ac})
	_, err = failedUnit(t, snap, err, unit, manifest.ReasonArtifactFailed)
	if err == nil || !strings.Contains(err.Error(), `key "teams/a:NAME"`) || !strings.Contains(err.Error(), "platform-cfg.azconfig.io") {
		t.Errorf("an invalid variable name: %v", err)
	}
}

// TestAppConfigUnreachable: a store that does not answer fails the Kustomization that reads it (ArtifactFailed)
// with an error naming the store and the substituteFrom, which the loop retries (source.ErrUnavailable), not a
// refusal of the commit.
func TestAppConfigUnreachable(t *testing.T) {
	f := newACFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	client := f.env.Emu.KeyVaultHTTPClient()
	tr := client.Transport.(*http.Transport).Clone()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasSuffix(strings.Split(addr, ":")[0], ".azconfig.io") {
			addr = dead
		}
		return dial(ctx, network, addr)
	}
	ac := f.appConfig(t, &http.Client{Transport: tr}, "flux-system/platform-vars=https://platform-cfg.azconfig.io")
	snap, err := fluxFetch(t, acRepo(t), "clusters/snd", Options{AppConfig: ac})
	_, err = failedUnit(t, snap, err, "Kustomization/flux-system/platform", manifest.ReasonArtifactFailed)
	for _, want := range []string{"clusters/snd/platform.yaml", "substitute-from ConfigMap/flux-system/platform-vars", "App Configuration store https://platform-cfg.azconfig.io", "connection refused"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("an unreachable store: error %v, want it to name %q", err, want)
		}
	}
	if !errors.Is(err, source.ErrUnavailable) {
		t.Errorf("an unreachable store is not source.ErrUnavailable: %v", err)
	}
}

// TestAppConfigPages: a store answering in several pages (the emulator's pages hold emulator.AppConfigPageSize
// items) is read to its last page through the Link headers.
func TestAppConfigPages(t *testing.T) {
	f := newACFixture(t)
	f.grant(t, "App Configuration Data Reader", f.storeID)
	n := 2*emulator.AppConfigPageSize + 7
	for i := range n {
		if err := f.env.Emu.PutAppConfigKeyValue("platform-cfg", emulator.AppConfigKeyValue{Key: fmt.Sprintf("BULK_%04d", i), Label: "bulk", Value: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	ac := f.appConfig(t, nil, "flux-system/platform-vars=https://platform-cfg.azconfig.io?label=bulk&key=BULK_*")
	src, _ := ac.source(Ref{Namespace: "flux-system", Name: "platform-vars"})
	sv, err := ac.read(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if len(sv.vars) != n || sv.vars["BULK_0000"] != "0" || sv.vars[fmt.Sprintf("BULK_%04d", n-1)] != strconv.Itoa(n-1) || len(sv.secret) != 0 {
		t.Errorf("read %d variables (first %q, last %q), want %d", len(sv.vars), sv.vars["BULK_0000"], sv.vars[fmt.Sprintf("BULK_%04d", n-1)], n)
	}
}
