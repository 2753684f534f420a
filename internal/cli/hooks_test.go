package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOfflinePlanShowsVaultCreateMode: validate accepts ASO's createMode values and plan --offline shows what ARM
// will receive (default for purgeThenCreate), or known after apply where only the apply's look-up of a
// soft-deleted vault can tell (createOrRecover: default or recover). executor's
// TestVaultCreateModePlanAgreesWithApply checks the apply against the emulator.
func TestOfflinePlanShowsVaultCreateMode(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "rg.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: n\nspec:\n  location: westeurope\n")
	vault := func(name, mode string) string {
		return "apiVersion: keyvault.azure.com/v1api20230701\nkind: Vault\nmetadata:\n  name: " + name + "\n  namespace: n\nspec:\n  location: westeurope\n  owner: {name: rg}\n  properties:\n    createMode: " + mode + "\n    tenantId: 00000000-0000-0000-0000-000000000001\n    sku: {family: A, name: standard}\n"
	}
	write(t, dir, "kv1.yaml", vault("kv-recover", "createOrRecover"))
	write(t, dir, "kv2.yaml", vault("kv-purge", "purgeThenCreate"))
	if out, stderr, err := run(t, "validate", "--dir", dir); err != nil || !strings.Contains(out, "3 resources valid") {
		t.Fatalf("validate: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err := run(t, "plan", "--offline", "--subscription", "22222222-2222-2222-2222-222222222222", "--dir", dir, "-o", "json")
	if exitCode(err) != 2 {
		t.Fatalf("exit code %d (%v)\n%s", exitCode(err), err, stderr)
	}
	var p struct {
		Resources []struct {
			Name            string
			KnownAfterApply []string
			Request         struct {
				Body struct {
					Properties struct{ CreateMode string }
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, r := range p.Resources {
		got[r.Name] = r.Request.Body.Properties.CreateMode + " " + strings.Join(r.KnownAfterApply, ",")
	}
	if got["kv-recover"] != "(known after apply) /properties/createMode" || got["kv-purge"] != "default " {
		t.Errorf("createMode in the offline plan: %q", got)
	}
}
