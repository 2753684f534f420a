package render

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azkeys"
	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
)

func testPGPKeys(t testing.TB, name string) openpgp.EntityList {
	t.Helper()
	l, err := LoadPGPKeys(filepath.Join(sopsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkSecret asserts out is plain/secret.yaml's values with no SOPS left.
func checkSecret(t *testing.T, out string) {
	t.Helper()
	if strings.Contains(out, "ENC[") || strings.Contains(out, "sops") {
		t.Errorf("encrypted text or metadata left:\n%s", out)
	}
	var got any
	if err := yaml.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not YAML: %v\n%s", err, out)
	}
	if d := cmp.Diff(plainValues(t, "secret.yaml"), got); d != "" {
		t.Errorf("values differ (-want +got):\n%s", d)
	}
}

func noSecretIn(t *testing.T, msg string) {
	t.Helper()
	for _, v := range secretValues {
		if strings.Contains(msg, v) {
			t.Errorf("error shows the secret value %q: %s", v, msg)
		}
	}
}

// TestDecryptPGP: a file SOPS encrypted for a PGP key opens with the
// armored private key (a file or a directory of *.asc, as Flux's sops-gpg
// Secret), in process; another key is refused naming both fingerprints.
func TestDecryptPGP(t *testing.T) {
	in := readFixture(t, "pgp.sops.yaml")
	ctx := context.Background()
	for _, keys := range []openpgp.EntityList{testPGPKeys(t, "test-only-pgp.asc"), pgpDir(t, "test-only-other-pgp.asc", "test-only-pgp.asc")} {
		out, ok, derr := decryptSOPSWith(ctx, in, &sopsKeys{pgp: keys})
		if derr != nil || !ok {
			t.Fatalf("decrypt: ok=%v %v", ok, derr)
		}
		checkSecret(t, out)
	}

	other := testPGPKeys(t, "test-only-other-pgp.asc")
	_, _, derr := decryptSOPSWith(ctx, in, &sopsKeys{pgp: other, age: testIdentities(t, "test-only.agekey")})
	if derr == nil || !errors.Is(derr, ErrSOPSNoKey) {
		t.Fatalf("other key: %v, want ErrSOPSNoKey", derr)
	}
	msg := derr.Error()
	var fileFP string
	for _, l := range strings.Split(in, "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(l), "fp: "); ok {
			fileFP = s
		}
	}
	for _, want := range []string{"the file's keys: pgp " + fileFP, "PGP keys " + pgpFingerprint(other[0].PrimaryKey.Fingerprint), "1 age identities"} {
		if fileFP == "" || !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	noSecretIn(t, msg)
	if want := sopsLine(t, in); derr.Line != want {
		t.Errorf("line %d, want %d", derr.Line, want)
	}
	// No key at all: the same error, saying gitaso has none.
	if _, _, derr := decryptSOPSWith(ctx, in, &sopsKeys{}); derr == nil || !strings.Contains(derr.Error(), "gitaso's keys: none") {
		t.Errorf("no keys: %v", derr)
	}
}

func pgpDir(t *testing.T, names ...string) openpgp.EntityList {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(readFixture(t, n)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := LoadPGPKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != len(names) {
		t.Fatalf("%d keys from %d files", len(l), len(names))
	}
	return l
}

// TestDecryptMultiRecipient: a file encrypted for an age recipient, a PGP
// key and a Key Vault key opens with the age identity alone and with the PGP
// key alone (no Key Vault configured, none called); a tampered value still
// fails the MAC check.
func TestDecryptMultiRecipient(t *testing.T) {
	in := readFixture(t, "multi.sops.yaml")
	ctx := context.Background()
	for name, keys := range map[string]*sopsKeys{
		"age":                  {age: testIdentities(t, "test-only.agekey")},
		"pgp":                  {pgp: testPGPKeys(t, "test-only-pgp.asc")},
		"age wrong, pgp right": {age: testIdentities(t, "test-only-other.agekey"), pgp: testPGPKeys(t, "test-only-pgp.asc")},
	} {
		out, ok, derr := decryptSOPSWith(ctx, in, keys)
		if derr != nil || !ok {
			t.Fatalf("%s: ok=%v %v", name, ok, derr)
		}
		checkSecret(t, out)
	}
	_, _, derr := decryptSOPSWith(ctx, in, &sopsKeys{age: testIdentities(t, "test-only-other.agekey")})
	if derr == nil || !errors.Is(derr, ErrSOPSNoKey) {
		t.Fatalf("wrong keys: %v", derr)
	}
	for _, want := range []string{"the file's keys: age age1", "; pgp ", "; azure_kv https://gitaso-sops-test.vault.azure.net/keys/sops/"} {
		if !strings.Contains(derr.Error(), want) {
			t.Errorf("error %q lacks %q", derr, want)
		}
	}
	tampered := tamperFirstValue(t, in)
	if _, _, derr := decryptSOPSWith(ctx, tampered, &sopsKeys{pgp: testPGPKeys(t, "test-only-pgp.asc")}); derr == nil {
		t.Error("a tampered value decrypted")
	}
}

// tamperFirstValue swaps the first two encrypted values of the file: each
// still decrypts with the data key... except that its key path (the AES-GCM
// additional data) differs, so decryption or the MAC fails.
func tamperFirstValue(t *testing.T, in string) string {
	t.Helper()
	lines := strings.Split(in, "\n")
	var idx []int
	for i, l := range lines {
		if strings.Contains(l, "ENC[AES256_GCM") && !strings.HasPrefix(strings.TrimSpace(l), "mac:") {
			idx = append(idx, i)
		}
	}
	if len(idx) < 2 {
		t.Fatal("fixture has fewer than two encrypted values")
	}
	a, b := lines[idx[0]], lines[idx[1]]
	ka, va, _ := strings.Cut(a, ": ")
	kb, vb, _ := strings.Cut(b, ": ")
	lines[idx[0]], lines[idx[1]] = ka+": "+vb, kb+": "+va
	return strings.Join(lines, "\n")
}

// kvFixture serves the fixtures' Key Vault: the emulator with the vault
// gitaso-sops-test holding the test-only key, imported again (so with a new
// version, which is written into the returned fixture text: the sops stanza
// is not under the MAC).
type kvFixture struct {
	e       *emulator.Emulator
	vaultID string
	version string
}

func newKVFixture(t testing.TB) *kvFixture {
	t.Helper()
	e, err := emulator.New(emulator.WithoutThrottling())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	admin, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "kv-admin"},
		Roles: []emulator.RoleGrant{{Role: "Owner"}, {Role: "Key Vault Administrator"}}})
	if err != nil {
		t.Fatal(err)
	}
	tc := emulatorCredential(t, e, func() {
		t.Setenv(azure.KeyClientSecret, admin.Secret)
		t.Setenv(azure.KeyClientID, admin.ClientID)
	})
	f := &kvFixture{e: e}
	rg := "/subscriptions/" + e.SubscriptionID() + "/resourceGroups/rg-sops"
	f.vaultID = rg + "/providers/Microsoft.KeyVault/vaults/gitaso-sops-test"
	armPut(t, e, tc, rg, "2020-06-01", map[string]any{"location": "westeurope"})
	armPut(t, e, tc, f.vaultID, "2024-11-01", map[string]any{"location": "westeurope", "properties": map[string]any{
		"tenantId": e.TenantID(), "sku": map[string]any{"family": "A", "name": "standard"}, "enableRbacAuthorization": true}})

	var jwk struct {
		Key map[string]string `json:"key"`
	}
	if err := json.Unmarshal([]byte(readFixture(t, "test-only-azkv.jwk.json")), &jwk); err != nil {
		t.Fatal(err)
	}
	num := func(k string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(jwk.Key[k])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	kc, err := azkeys.NewClient(e.KeyVaultURL("gitaso-sops-test"), tc, &azkeys.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: e.KeyVaultHTTPClient()}})
	if err != nil {
		t.Fatal(err)
	}
	imp, err := kc.ImportKey(context.Background(), "sops", azkeys.ImportKeyParameters{Key: &azkeys.JSONWebKey{Kty: to.Ptr(azkeys.KeyTypeRSA),
		N: num("n"), E: num("e"), D: num("d"), P: num("p"), Q: num("q")}}, nil)
	if err != nil {
		t.Fatalf("import the test-only key: %v", err)
	}
	f.version = imp.Key.KID.Version()
	return f
}

// azkvVersionRE is the version line of an azure_kv entry (a Key Vault key
// version is 32 hex digits).
var azkvVersionRE = regexp.MustCompile(`^(\s+version: )[0-9a-f]{32}$`)

// fixture returns a fixture with the key version the emulator gave.
func (f *kvFixture) fixture(t testing.TB, name string) string {
	t.Helper()
	in := readFixture(t, name)
	lines := strings.Split(in, "\n")
	n := 0
	for i, l := range lines {
		if m := azkvVersionRE.FindStringSubmatch(l); m != nil {
			lines[i] = m[1] + f.version
			n++
		}
	}
	if n == 0 {
		t.Fatalf("%s: no azure_kv version line", name)
	}
	return strings.Join(lines, "\n")
}

// TestDecryptAzureKeyVault: files SOPS encrypted with a Key Vault key (its
// azkv key source, through the emulator) open through Key Vault's data plane
// with gitaso's own credential — workload identity here: a managed
// identity's federated credential, the token file of AZURE_FEDERATED_TOKEN_FILE
// — given Key Vault Crypto User on the vault. Without the role, the error is
// Key Vault's 403; a vault outside the cloud's Key Vault suffix is never
// called; the MAC is still checked.
func TestDecryptAzureKeyVault(t *testing.T) {
	f := newKVFixture(t)
	e := f.e
	ctx := context.Background()

	// A user-assigned identity with a federated credential for a service account.
	mi := emulatorWorkloadIdentity(t, e)
	wi := emulatorCredential(t, e, func() {
		t.Setenv("AZURE_CLIENT_SECRET", "")
		t.Setenv(azure.KeyClientID, mi.clientID)
		t.Setenv("USE_WORKLOAD_IDENTITY_AUTH", "true")
		t.Setenv(azure.EnvFederatedTokenFile, mi.tokenFile)
	})
	kv := NewAzureKeyVault(AzureKeyVaultOptions{Credential: func() (azcore.TokenCredential, error) { return wi, nil }, HTTPClient: e.KeyVaultHTTPClient()})

	in := f.fixture(t, "azkv.sops.yaml")
	// Before the role: Key Vault's 403, the file's key named, no secret.
	_, _, derr := decryptSOPSWith(ctx, in, &sopsKeys{kv: kv})
	if derr == nil || !strings.Contains(derr.Error(), "403 Forbidden") || !strings.Contains(derr.Error(), "keys/decrypt/action") || !strings.Contains(derr.Error(), "azure_kv https://gitaso-sops-test.vault.azure.net/keys/sops/"+f.version) {
		t.Fatalf("without a role: %v", derr)
	}
	noSecretIn(t, derr.Error())

	if err := e.AssignRole(mi.principalID, "Key Vault Crypto User", f.vaultID); err != nil {
		t.Fatal(err)
	}
	kv = NewAzureKeyVault(AzureKeyVaultOptions{Credential: func() (azcore.TokenCredential, error) { return wi, nil }, HTTPClient: e.KeyVaultHTTPClient()})
	for _, name := range []string{"azkv.sops.yaml", "multi.sops.yaml"} {
		out, ok, derr := decryptSOPSWith(ctx, f.fixture(t, name), &sopsKeys{kv: kv, age: testIdentities(t, "test-only-other.agekey")})
		if derr != nil || !ok {
			t.Fatalf("%s: ok=%v %v", name, ok, derr)
		}
		checkSecret(t, out)
	}
	// The MAC is checked on what Key Vault opened.
	if _, _, derr := decryptSOPSWith(ctx, strings.Replace(in, "mac: ENC[AES256_GCM,data:", "mac: ENC[AES256_GCM,data:AA", 1), &sopsKeys{kv: kv}); derr == nil || !errors.Is(derr, ErrSOPSMACMismatch) {
		t.Errorf("tampered MAC: %v", derr)
	}
	// A vault URL outside vault.azure.net: refused before any request (the
	// emulator would answer, so a call would show as success).
	evil := strings.ReplaceAll(in, "https://gitaso-sops-test.vault.azure.net", "https://gitaso-sops-test.vault.azure.net.example.com")
	if _, _, derr := decryptSOPSWith(ctx, evil, &sopsKeys{kv: kv}); derr == nil || !strings.Contains(derr.Error(), "not under this cloud's Key Vault DNS suffix vault.azure.net") {
		t.Errorf("foreign vault: %v", derr)
	}
	// An unknown key version: Key Vault's 404 KeyNotFound.
	gone := strings.ReplaceAll(in, f.version, "0123456789abcdef0123456789abcdef")
	if _, _, derr := decryptSOPSWith(ctx, gone, &sopsKeys{kv: kv}); derr == nil || !strings.Contains(derr.Error(), "404 KeyNotFound") {
		t.Errorf("unknown version: %v", derr)
	}
	// Through the renderer: a Secret in a directory source.
	root := writeTree(t, map[string]string{"secrets/app.sops.yaml": in})
	snap, err := fetch(t, root, "", Options{KeyVault: kv})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if len(snap.Objects) != 1 || snap.Objects[0].Content["sops"] != nil {
		t.Fatalf("render: %+v", snap.Objects)
	}
	if got := snap.Objects[0].Content["stringData"].(map[string]any)["password"]; got != plainValues(t, "secret.yaml").(map[string]any)["stringData"].(map[string]any)["password"] {
		t.Errorf("rendered password differs")
	}
}

// emulatorCloud is the emulator's cloud configuration, its CA in a file.
func emulatorCloud(t testing.TB, e *emulator.Emulator) azure.Cloud {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, e.CACertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	return azure.Cloud{Name: "emulator", ARMEndpoint: e.ARMEndpoint(), AuthorityHost: e.AuthorityHost(), Audience: emulator.ARMAudience, CAFile: ca}
}

// emulatorCredential is gitaso's global credential read from the
// environment that env sets (as gitaso builds it: azure.CredentialFromEnv).
func emulatorCredential(t testing.TB, e *emulator.Emulator, env func()) azcore.TokenCredential {
	t.Helper()
	t.Setenv(azure.KeySubscriptionID, e.SubscriptionID())
	t.Setenv(azure.KeyTenantID, e.TenantID())
	env()
	cred, err := azure.CredentialFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := azure.NewClients(emulatorCloud(t, e), azure.DefaultOptions()).TokenCredential(cred)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

type workloadIdentity struct{ clientID, principalID, tokenFile string }

// emulatorWorkloadIdentity creates a user-assigned identity with a federated
// credential for a Kubernetes service account and writes that account's
// projected token.
func emulatorWorkloadIdentity(t *testing.T, e *emulator.Emulator) workloadIdentity {
	t.Helper()
	admin, ok := e.ServicePrincipalByName("kv-admin")
	if !ok {
		t.Fatal("no kv-admin")
	}
	tc := emulatorCredential(t, e, func() {
		t.Setenv(azure.KeyClientSecret, admin.Secret)
		t.Setenv(azure.KeyClientID, admin.ClientID)
	})
	uai := "/subscriptions/" + e.SubscriptionID() + "/resourceGroups/rg-sops/providers/Microsoft.ManagedIdentity/userAssignedIdentities/gitaso"
	body := armPut(t, e, tc, uai, "2023-01-31", map[string]any{"location": "westeurope"})
	props, _ := body["properties"].(map[string]any)
	clientID, _ := props["clientId"].(string)
	principalID, _ := props["principalId"].(string)
	issuer, subject := "https://oidc.example.com/cluster/", "system:serviceaccount:gitaso:gitaso"
	armPut(t, e, tc, uai+"/federatedIdentityCredentials/gitaso", "2023-01-31", map[string]any{"properties": map[string]any{
		"issuer": issuer, "subject": subject, "audiences": []any{"api://AzureADTokenExchange"}}})
	sa, err := e.IssueServiceAccountToken(issuer, subject)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(sa), 0o600); err != nil {
		t.Fatal(err)
	}
	return workloadIdentity{clientID: clientID, principalID: principalID, tokenFile: file}
}

// armPut PUTs an ARM resource with a bearer token of tc and returns its body.
func armPut(t testing.TB, e *emulator.Emulator, tc azcore.TokenCredential, id, api string, body any) map[string]any {
	t.Helper()
	tok, err := tc.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{emulator.ARMAudience + "/.default"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPut, e.ARMEndpoint()+id+"?api-version="+api, strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode >= 300 {
		t.Fatalf("PUT %s: %d %v", id, resp.StatusCode, out)
	}
	return out
}

func BenchmarkDecryptSOPSPGP(b *testing.B) {
	keys := &sopsKeys{pgp: testPGPKeys(b, "test-only-pgp.asc")}
	in := readFixture(b, "pgp.sops.yaml")
	for b.Loop() {
		if _, _, derr := decryptSOPSWith(context.Background(), in, keys); derr != nil {
			b.Fatal(derr)
		}
	}
}

// BenchmarkDecryptSOPSKeyVault: a Key Vault file, the data key opened by the
// emulator's Key Vault (uncached: a new client each time, so one HTTPS
// decrypt call with a cached token) or from the client's cache.
func BenchmarkDecryptSOPSKeyVault(b *testing.B) {
	f := newKVFixture(b)
	admin, _ := f.e.ServicePrincipalByName("kv-admin")
	tc := emulatorCredential(b, f.e, func() {
		b.Setenv(azure.KeyClientSecret, admin.Secret)
		b.Setenv(azure.KeyClientID, admin.ClientID)
	})
	in := f.fixture(b, "azkv.sops.yaml")
	newKV := func() SOPSKeyVault {
		return NewAzureKeyVault(AzureKeyVaultOptions{Credential: func() (azcore.TokenCredential, error) { return tc, nil }, HTTPClient: f.e.KeyVaultHTTPClient()})
	}
	b.Run("uncached", func(b *testing.B) {
		for b.Loop() {
			if _, _, derr := decryptSOPSWith(context.Background(), in, &sopsKeys{kv: newKV()}); derr != nil {
				b.Fatal(derr)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		keys := &sopsKeys{kv: newKV()}
		for b.Loop() {
			if _, _, derr := decryptSOPSWith(context.Background(), in, keys); derr != nil {
				b.Fatal(derr)
			}
		}
	})
}

// TestAzureKeyVaultRefusals: no request is made for a vault URL that is not
// an https URL under the Key Vault suffix, and a credential that cannot be
// built is reported as such (once, then every time).
func TestAzureKeyVaultRefusals(t *testing.T) {
	calls := 0
	kv := NewAzureKeyVault(AzureKeyVaultOptions{Credential: func() (azcore.TokenCredential, error) {
		calls++
		return nil, errors.New("AZURE_SUBSCRIPTION_ID is not set")
	}})
	ctx := context.Background()
	for _, u := range []string{"http://kv.vault.azure.net", "https://kv.vault.azure.net/keys", "https://a.b.vault.azure.net", "https://vault.azure.net", "https://kv.vault.azure.net.evil.example", "https://user@kv.vault.azure.net"} {
		if _, err := kv.Decrypt(ctx, AzureKeyVaultKey{VaultURL: u, Name: "k", Version: "v"}, "AAAA"); err == nil || !strings.Contains(err.Error(), "vault_url") {
			t.Errorf("%s: %v, want a vault_url refusal", u, err)
		}
	}
	if _, err := kv.Decrypt(ctx, AzureKeyVaultKey{VaultURL: "https://kv.vault.azure.net", Name: "k/../x", Version: "v"}, "AAAA"); err == nil {
		t.Error("a key name with a slash was accepted")
	}
	if calls != 0 {
		t.Errorf("the credential was read %d times for refused URLs", calls)
	}
	for range 2 {
		if _, err := kv.Decrypt(ctx, AzureKeyVaultKey{VaultURL: "https://kv.vault.azure.net/", Name: "k", Version: "v"}, "AAAA"); err == nil || !strings.Contains(err.Error(), "sign in to Key Vault: AZURE_SUBSCRIPTION_ID is not set") {
			t.Errorf("no credential: %v", err)
		}
	}
	if calls != 1 {
		t.Errorf("the credential was read %d times, want 1", calls)
	}
	// A national cloud's suffix.
	cn := NewAzureKeyVault(AzureKeyVaultOptions{DNSSuffix: "vault.azure.cn"})
	if _, err := cn.Decrypt(ctx, AzureKeyVaultKey{VaultURL: "https://kv.vault.azure.net", Name: "k"}, "AAAA"); err == nil || !strings.Contains(err.Error(), "vault.azure.cn") {
		t.Errorf("public vault in the China cloud: %v", err)
	}
}
