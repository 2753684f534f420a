package reconcile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/benchdata"
	"github.com/gitaso/gitaso/planner"
)

// BenchmarkPlan100k20Subscriptions is issue 12's scale past one
// subscription: 100,000 generated resources in 5,000 namespaces spread over
// 20 subscriptions (each namespace's aso-credential names its subscription),
// with state (every resource applied before) and no ARM reads. Target: plan
// ≤ 5 s, memory ≤ 1 GB on 2 cores.
func BenchmarkPlan100k20Subscriptions(b *testing.B) {
	const namespaces, perNamespace, subscriptions = 5000, 20, 20
	dir := b.TempDir()
	if err := benchdata.Generate(dir, namespaces, perNamespace, benchSub); err != nil {
		b.Fatal(err)
	}
	subs := make([]string, subscriptions)
	for i := range subs {
		subs[i] = fmt.Sprintf("5b4e6ad4-0000-4000-8000-%012d", i+1)
	}
	spreadOverSubscriptions(b, dir, subs, "72f988bf-0000-4000-8000-00000000e001", "6fda62a0-e1df-4c02-b666-5ce31b1ce7c1", "not-a-secret")
	benchPlan(b, dir, func(p *planner.Plan) {
		perSub := map[string]int{}
		for _, r := range p.Resources {
			perSub[r.Subscription]++
		}
		if len(perSub) != subscriptions {
			b.Fatalf("resources in %d subscriptions, want %d", len(perSub), subscriptions)
		}
	})
}

// spreadOverSubscriptions puts the generated namespaces of dir in the
// subscriptions in turn: each namespace's manifests name its subscription
// and its aso-credential signs in as the client to it.
func spreadOverSubscriptions(b *testing.B, dir string, subs []string, tenant, clientID, secret string) {
	b.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub := subs[i%len(subs)]
		i++
		nsDir := filepath.Join(dir, e.Name())
		files, _ := filepath.Glob(filepath.Join(nsDir, "*.yaml"))
		ns := ""
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			text := strings.ReplaceAll(string(data), benchSub, sub)
			if ns == "" {
				if j := strings.Index(text, "namespace: "); j >= 0 {
					ns = strings.TrimSpace(strings.SplitN(text[j+len("namespace: "):], "\n", 2)[0])
				}
			}
			if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		cred := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: aso-credential\n  namespace: %s\nstringData:\n  AZURE_SUBSCRIPTION_ID: %q\n  AZURE_TENANT_ID: %q\n  AZURE_CLIENT_ID: %q\n  AZURE_CLIENT_SECRET: %q\n",
			ns, sub, tenant, clientID, secret)
		if err := os.WriteFile(filepath.Join(nsDir, "aso-credential.yaml"), []byte(cred), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
