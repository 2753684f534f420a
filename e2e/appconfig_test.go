package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
)

// TestAppConfigPlatformVars: the platform's variables live in Azure App Configuration, as a platform team keeps
// them before writing platform-vars into its cluster. With no cluster, `gitaso plan` and `gitaso apply --flux`
// read the Flux Kustomization's substituteFrom ConfigMap flux-system/platform-vars from the emulator's store
// (--app-config, reached as https://{store}.azconfig.io through the emulator's proxy) with gitaso's own
// credential: without App Configuration Data Reader the Kustomization fails alone (the plan is partial) naming
// the store and the substituteFrom; with it (and Key Vault Secrets User) the resource group is planned and applied with the store's values, the prod
// label's over the unlabelled ones, and a Key Vault reference's secret value reaches Azure but never the plan,
// the log or the state file.
func TestAppConfigPlatformVars(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gitaso")
	}
	env := emutest.New(t)
	e := env.Emu
	ctx := context.Background()
	rg := "/subscriptions/" + env.Sub + "/resourceGroups/rg-platform-config"
	storeID := rg + "/providers/Microsoft.AppConfiguration/configurationStores/platform-cfg"
	vaultID := rg + "/providers/Microsoft.KeyVault/vaults/platform-kv"
	for _, p := range []struct{ id, api, body string }{
		{rg, "2020-06-01", `{"location":"uksouth"}`},
		{storeID, "2024-06-01", `{"location":"uksouth","sku":{"name":"standard"}}`},
		{vaultID, "2024-11-01", `{"location":"uksouth","properties":{"tenantId":"` + e.TenantID() + `","sku":{"family":"A","name":"standard"},"enableRbacAuthorization":true}}`},
	} {
		if _, err := env.Client.Put(ctx, p.id, p.api, []byte(p.body)); err != nil {
			t.Fatal(err)
		}
	}
	const secret = "s3cr3t-PlatformVars-51c7"
	if _, err := e.PutKeyVaultSecret("platform-kv", "team-mi-client-secret", secret); err != nil {
		t.Fatal(err)
	}
	for _, kv := range []emulator.AppConfigKeyValue{
		{Key: "ENVIRONMENT", Value: "snd"},
		{Key: "ENVIRONMENT", Label: "prod", Value: "prd"},
		{Key: "ACR_NAME", Value: "sndadpinfcr1401"},
		{Key: "TEAM_MI_CLIENT_SECRET", Label: "prod", Value: `{"uri":"` + e.KeyVaultURL("platform-kv") + `/secrets/team-mi-client-secret"}`,
			ContentType: emulator.AppConfigKeyVaultRefContentType},
	} {
		if err := e.PutAppConfigKeyValue("platform-cfg", kv); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	files := map[string]string{
		"clusters/snd/platform.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: platform\n  namespace: flux-system\n" +
			"spec:\n  interval: 10m\n  path: ./platform\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n" +
			"  postBuild:\n    substituteFrom:\n    - kind: ConfigMap\n      name: platform-vars\n",
		"clusters/snd/team-a.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: team-a\n  namespace: flux-system\n" +
			"spec:\n  interval: 10m\n  path: ./team-a\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
		"team-a/rg.yaml":              "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: team-a-rg\n  namespace: team-a\nspec:\n  location: uksouth\n",
		"platform/kustomization.yaml": "resources: [rg.yaml]\n",
		"platform/rg.yaml": "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: ${ENVIRONMENT}-platform-rg\n  namespace: platform\n" +
			"spec:\n  location: uksouth\n  tags:\n    acr: ${ACR_NAME}\n    client-secret: ${TEAM_MI_CLIENT_SECRET}\n    mixed: id-${TEAM_MI_CLIENT_SECRET}-end\n",
	}
	for p, c := range files {
		f := filepath.Join(repo, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// gitaso signs in as a principal of its own: Contributor on the subscription, no data role yet.
	sp, _ := env.AddPrincipal(t, "gitaso-appconfig", "Contributor")
	proxy, err := e.StartLoginProxy()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gitaso")
	if out, err := exec.Command("go", "build", "-tags", "kustomize_disable_go_plugin_support", "-o", bin, "../cmd/gitaso").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	state := filepath.Join(dir, "s.db")
	run := func(args ...string) (string, int) {
		t.Helper()
		args = append(args, "--dir", repo, "--flux", "--path", "clusters/snd", "--state", state, "--log-level", "debug",
			"--app-config", `flux-system/platform-vars=https://platform-cfg.azconfig.io?label=\0,prod`)
		cmd := exec.Command(bin, args...)
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
		if strings.Contains(out.String(), secret) {
			t.Errorf("gitaso %s shows the Key Vault secret:\n%s", args[0], out.String())
		}
		return out.String(), code
	}

	// Without the role the platform's unit fails alone (exit code 6, partial), naming the store; team-a is planned.
	out, code := run("plan")
	t.Logf("without a role on the store:\n%s", out)
	for _, want := range []string{"Kustomization/flux-system/platform (ArtifactFailed)", "substitute-from ConfigMap/flux-system/platform-vars",
		"https://platform-cfg.azconfig.io", "403", "keyValues/read", "clusters/snd/platform.yaml", "team-a-rg"} {
		if code != 6 || !strings.Contains(out, want) {
			t.Fatalf("without App Configuration Data Reader: exit %d, want 6 and the output naming %q:\n%s", code, want, out)
		}
	}
	for _, r := range []struct{ role, scope string }{{"App Configuration Data Reader", storeID}, {"Key Vault Secrets User", vaultID}} {
		if err := e.AssignRole(sp.ObjectID, r.role, r.scope); err != nil {
			t.Fatal(err)
		}
	}

	out, code = run("plan")
	const label = "(sensitive value from Key Vault secret platform-kv/team-mi-client-secret)"
	if code != 2 || !strings.Contains(out, "substitute-from flux-system/platform-vars (not in the repository: App Configuration https://platform-cfg.azconfig.io)") ||
		!strings.Contains(out, "prd-platform-rg") || !strings.Contains(out, `"sndadpinfcr1401"`) || !strings.Contains(out, label) {
		t.Fatalf("plan with the roles: exit %d, want the group prd-platform-rg with acr sndadpinfcr1401 and the secret masked:\n%s", code, out)
	}
	// The other forms of the plan, and the saved plan file, hold the label only (run scans their output).
	saved := filepath.Join(dir, "plan.bin")
	for _, args := range [][]string{{"plan", "-o", "json"}, {"plan", "-o", "markdown"}, {"plan", "--out", saved}} {
		if out, code := run(args...); code != 2 || !strings.Contains(out, label) {
			t.Errorf("gitaso %v: exit %d, want the masked value:\n%s", args, code, out)
		}
	}
	if b, err := os.ReadFile(saved); err != nil || bytes.Contains(b, []byte(secret)) {
		t.Errorf("the saved plan file (%v) holds the Key Vault secret", err)
	}
	out, code = run("apply", "--auto-approve")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	b, err := env.Client.Get(ctx, "/subscriptions/"+env.Sub+"/resourceGroups/prd-platform-rg", "2020-06-01")
	if err != nil {
		t.Fatalf("the group was not created: %v\n%s", err, out)
	}
	var doc struct {
		Tags map[string]string `json:"tags"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Tags["client-secret"] != secret || doc.Tags["mixed"] != "id-"+secret+"-end" || doc.Tags["acr"] != "sndadpinfcr1401" {
		t.Errorf("Azure holds tags %v: the PUT must carry the store's values", doc.Tags)
	}
	if out, code = run("plan"); code != 0 {
		t.Errorf("plan after apply: exit %d, want no changes:\n%s", code, out)
	}
	raw, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(secret)) {
		t.Error("the state file holds the Key Vault secret")
	}
	if !bytes.Contains(raw, []byte(label)) {
		t.Error("the state file does not hold the label: the scan would not see the applied body")
	}
}
