package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azkeys"

	"github.com/gitaso/gitaso/internal/emutest"
)

// TestPlanSOPSAzureKeyVault: `gitaso plan` opens a SOPS file whose data key
// is an Azure Key Vault key with gitaso's own credential, through the
// emulator's Key Vault (reached as https://{vault}.vault.azure.net through
// the emulator's proxy, as a user of `gitaso emulator` would): refused with
// Key Vault's 403 before the credential has a role on the vault, planned
// after.
func TestPlanSOPSAzureKeyVault(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gitaso")
	}
	env := emutest.New(t)
	e := env.Emu
	ctx := context.Background()
	rg := "/subscriptions/" + env.Sub + "/resourceGroups/rg-sops"
	vaultID := rg + "/providers/Microsoft.KeyVault/vaults/gitaso-sops-test"
	if _, err := env.Client.Put(ctx, rg, "2020-06-01", []byte(`{"location":"westeurope"}`)); err != nil {
		t.Fatal(err)
	}
	vault := `{"location":"westeurope","properties":{"tenantId":"` + e.TenantID() + `","sku":{"family":"A","name":"standard"},"enableRbacAuthorization":true}}`
	if _, err := env.Client.Put(ctx, vaultID, "2024-11-01", []byte(vault)); err != nil {
		t.Fatal(err)
	}
	// The test-only key the fixture was encrypted with, imported by an
	// administrator of the vault.
	if err := e.AssignRole(env.Principal.ObjectID, "Key Vault Administrator", vaultID); err != nil {
		t.Fatal(err)
	}
	tc, err := env.Clients.TokenCredential(env.Cred)
	if err != nil {
		t.Fatal(err)
	}
	jwkText, err := os.ReadFile("../source/render/testdata/sops/test-only-azkv.jwk.json")
	if err != nil {
		t.Fatal(err)
	}
	var jwk struct {
		Key map[string]string `json:"key"`
	}
	if err := json.Unmarshal(jwkText, &jwk); err != nil {
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
	imp, err := kc.ImportKey(ctx, "sops", azkeys.ImportKeyParameters{Key: &azkeys.JSONWebKey{Kty: to.Ptr(azkeys.KeyTypeRSA),
		N: num("n"), E: num("e"), D: num("d"), P: num("p"), Q: num("q")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile("../source/render/testdata/sops/azkv.sops.yaml")
	if err != nil {
		t.Fatal(err)
	}
	versioned := regexp.MustCompile(`(?m)^(\s+version: )[0-9a-f]{32}$`).ReplaceAll(fixture, []byte("${1}"+imp.Key.KID.Version()))

	// gitaso signs in as a principal of its own, without a role on the vault yet.
	sp, _ := env.AddPrincipal(t, "gitaso-sops", "Reader")
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "app-credentials.sops.yaml"), versioned, 0o644); err != nil {
		t.Fatal(err)
	}
	proxy, err := e.StartLoginProxy()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gitaso")
	if out, err := exec.Command("go", "build", "-tags", "kustomize_disable_go_plugin_support", "-o", bin, "../cmd/gitaso").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	plan := func() (string, int) {
		cmd := exec.Command(bin, "plan", "--dir", repo, "--state", filepath.Join(dir, "s.db"))
		cmd.Env = append(os.Environ(), "GITASO_CLOUD_CONFIG="+env.CloudFile, "HTTPS_PROXY="+proxy, "NO_PROXY=127.0.0.1,localhost",
			"AZURE_TENANT_ID="+e.TenantID(), "AZURE_SUBSCRIPTION_ID="+env.Sub, "AZURE_CLIENT_ID="+sp.ClientID, "AZURE_CLIENT_SECRET="+sp.Secret)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), code
	}
	out, code := plan()
	t.Logf("without a role:\n%s", out)
	if code != 1 || !strings.Contains(out, "403") || !strings.Contains(out, "keys/decrypt/action") || !strings.Contains(out, "app-credentials.sops.yaml") {
		t.Fatalf("without a role on the vault: exit %d\n%s", code, out)
	}
	if err := e.AssignRole(sp.ObjectID, "Key Vault Crypto User", vaultID); err != nil {
		t.Fatal(err)
	}
	out, code = plan()
	if code != 0 && code != 2 {
		t.Fatalf("with Key Vault Crypto User: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "s3cr3t") || strings.Contains(out, "password:") {
		t.Errorf("a decrypted value in the output:\n%s", out)
	}
}
