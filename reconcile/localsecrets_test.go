package reconcile_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/source"
)

// TestLocalSecretsReadEveryRun: the credentials kept outside Git are read
// again for every run, so a Secret added or rotated there applies on the
// next run without a restart.
func TestLocalSecretsReadEveryRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rg.yaml"), []byte(
		"apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: team-a\nspec:\n  location: westeurope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := map[string]map[string]string{}
	calls := 0
	cfg := reconcile.DefaultConfig()
	cfg.SubscriptionID = "11111111-1111-1111-1111-111111111111"
	cfg.LocalSecrets = func() (map[string]map[string]string, error) {
		calls++
		return local, nil
	}
	rec := reconcile.New(source.NewDir(dir, ""), nil, nil, cfg, nil)
	credential := func() (string, string) {
		t.Helper()
		_, g, err := rec.Build(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n := g.Nodes[0]
		return n.Credential, n.Subscription
	}
	if c, sub := credential(); c != "global" || sub != cfg.SubscriptionID {
		t.Fatalf("first run: %s %s", c, sub)
	}
	local["team-a/aso-credential"] = map[string]string{"AZURE_SUBSCRIPTION_ID": "22222222-2222-2222-2222-222222222222",
		"AZURE_TENANT_ID": "t", "AZURE_CLIENT_ID": "c"}
	if c, sub := credential(); c != "team-a/aso-credential" || sub != "22222222-2222-2222-2222-222222222222" {
		t.Fatalf("after adding the namespace credential: %s %s", c, sub)
	}
	if calls != 2 {
		t.Errorf("LocalSecrets called %d times for 2 runs", calls)
	}
}
