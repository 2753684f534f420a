package reconcile_test

import (
	"fmt"
	"testing"

	"github.com/gitaso/gitaso/harness/benchdata"
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
	if err := benchdata.SpreadOverSubscriptions(dir, benchSub, subs, "72f988bf-0000-4000-8000-00000000e001", "6fda62a0-e1df-4c02-b666-5ce31b1ce7c1", "not-a-secret"); err != nil {
		b.Fatal(err)
	}
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
