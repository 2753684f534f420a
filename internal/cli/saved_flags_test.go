package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/emutest"
)

// TestApplySavedPlanNeedsNoFlags: `gitaso apply FILE` runs with no source flag at all, from another directory:
// the saved plan carries the flags `gitaso plan` was given (relative paths made absolute, --substitute values
// too: the plan shows them anyway) and apply says which it took. A flag given to apply wins. Before, apply with
// no flags had no source.
func TestApplySavedPlanNeedsNoFlags(t *testing.T) {
	em := emutest.New(t)
	t.Setenv("GITASO_CLOUD_CONFIG", em.CloudFile)
	t.Setenv("AZURE_TENANT_ID", em.Emu.TenantID())
	t.Setenv("AZURE_CLIENT_ID", em.Principal.ClientID)
	t.Setenv("AZURE_CLIENT_SECRET", em.Principal.Secret)
	t.Setenv("AZURE_SUBSCRIPTION_ID", em.Sub)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	const owner = "team-owner-7"
	rg := "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg-saved\n  namespace: team\n" +
		"spec:\n  location: westeurope\n  tags:\n    owner: ${OWNER}\n"
	if err := os.WriteFile(filepath.Join(dir, "repo", "rg.yaml"), []byte(rg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	out, errOut, err := run(t, "plan", "--dir", "repo", "--state", "s.db", "--substitute-strict",
		"--substitute", "OWNER="+owner, "--out", "plan.json")
	if exitCode(err) != 2 {
		t.Fatalf("plan: exit %d (%v), want 2\n%s%s", exitCode(err), err, out, errOut)
	}
	// A plan only reads: it leaves no state file behind (issue 26: it created one).
	if _, err := os.Stat(filepath.Join(dir, "s.db")); !os.IsNotExist(err) {
		t.Errorf("plan left a state file behind: %v", err)
	}
	saved, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"dir": [`, filepath.Join(dir, "repo"), filepath.Join(dir, "s.db"), `"substitute-strict"`, "OWNER=" + owner} {
		if !strings.Contains(string(saved), want) {
			t.Errorf("the saved plan's flags lack %s:\n%s", want, saved)
		}
	}

	t.Chdir(t.TempDir())
	out, errOut, err = run(t, "apply", filepath.Join(dir, "plan.json"))
	if code := exitCode(err); code != 0 {
		t.Fatalf("apply FILE with no source flag: exit %d (%v), want 0\n%s%s", code, err, out, errOut)
	}
	if !strings.Contains(errOut, "settings from the saved plan: --dir="+filepath.Join(dir, "repo")) {
		t.Errorf("apply did not say which settings it took from the plan:\n%s", errOut)
	}
	body, err := em.Client.Get(context.Background(), "/subscriptions/"+em.Sub+"/resourceGroups/rg-saved", "2020-06-01")
	if err != nil || !strings.Contains(string(body), owner) {
		t.Fatalf("rg-saved after apply: %v %s", err, body)
	}
	// A flag given to apply wins over the plan's: another state file is not the plan's state, so the plan is stale.
	out, errOut, err = run(t, "apply", filepath.Join(dir, "plan.json"), "--state", filepath.Join(t.TempDir(), "other.db"))
	if code := exitCode(err); code == 0 {
		t.Errorf("apply with another --state than the plan's: exit 0, want a refusal\n%s%s", out, errOut)
	}
}
