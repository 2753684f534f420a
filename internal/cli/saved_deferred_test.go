package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/emutest"
)

// deferredRepo is an identity exporting its clientId into the ConfigMap
// platform/team-vars, and a resource group whose tag substitutes it: the
// group is known after apply until the identity exists.
const deferredRepo = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: platform-rg
  namespace: platform
spec:
  location: westeurope
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: team-identity
  namespace: platform
spec:
  location: westeurope
  owner:
    name: platform-rg
  operatorSpec:
    configMaps:
      clientId:
        name: team-vars
        key: TEAM_CLIENT_ID
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: team-rg
  namespace: team
spec:
  location: westeurope
  tags:
    client: ${TEAM_CLIENT_ID}
`

// TestApplySavedPlanWithDeferredObjects: a saved plan whose objects are
// known after apply is applied whole, those objects included, and exits
// 0; a script can tell that from a failure. Before, the apply succeeded,
// left the objects out and exited 1 ("still known after apply").
func TestApplySavedPlanWithDeferredObjects(t *testing.T) {
	em := emutest.New(t)
	t.Setenv("GITASO_CLOUD_CONFIG", em.CloudFile)
	t.Setenv("AZURE_TENANT_ID", em.Emu.TenantID())
	t.Setenv("AZURE_CLIENT_ID", em.Principal.ClientID)
	t.Setenv("AZURE_CLIENT_SECRET", em.Principal.Secret)
	t.Setenv("AZURE_SUBSCRIPTION_ID", em.Sub)
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "all.yaml"), []byte(deferredRepo), 0o644); err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(dir, "plan.json")
	flags := []string{"--dir", repo, "--state", filepath.Join(dir, "s.db"),
		"--substitute-from", "ConfigMap/platform/team-vars", "--substitute-strict"}

	out, errOut, err := run(t, append([]string{"plan", "--out", planFile}, flags...)...)
	if exitCode(err) != 2 || !strings.Contains(out, "known after apply") {
		t.Fatalf("plan: exit %d (%v), want 2 with objects known after apply\n%s%s", exitCode(err), err, out, errOut)
	}
	out, errOut, err = run(t, append([]string{"apply", planFile}, flags...)...)
	if code := exitCode(err); code != 0 {
		t.Fatalf("apply the saved plan: exit %d (%v), want 0\n%s%s", code, err, out, errOut)
	}
	body, err := em.Client.Get(context.Background(), "/subscriptions/"+em.Sub+"/resourceGroups/team-rg", "2020-06-01")
	if err != nil {
		t.Fatalf("the object known after apply was not applied: %v\n%s", err, out)
	}
	if strings.Contains(string(body), "${") || !strings.Contains(string(body), `"client":"`) {
		t.Errorf("team-rg's tag: %s", body)
	}
	// Nothing is left to do: plan exits 0.
	if out, errOut, err = run(t, append([]string{"plan"}, flags...)...); exitCode(err) != 0 {
		t.Errorf("plan after the apply: exit %d (%v), want 0\n%s%s", exitCode(err), err, out, errOut)
	}
}
