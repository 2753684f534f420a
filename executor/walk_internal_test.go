package executor

import (
	"sync"
	"testing"

	"github.com/gitaso/gitaso/planner"
)

// TestWalkDAG: a resource runs only after those it waits for; edges to
// resources outside the walk are ignored; a cycle (a plan edited by hand)
// still runs everything instead of hanging.
func TestWalkDAG(t *testing.T) {
	res := func(name string, after ...string) *planner.Resource {
		return &planner.Resource{Namespace: "n", Group: "g", Kind: "K", Name: name, DependsOn: after}
	}
	key := func(name string) string { return planner.Key("n", "g", "K", name) }
	for _, tc := range []struct {
		name string
		rs   []*planner.Resource
	}{
		{"chain", []*planner.Resource{res("c", key("b")), res("b", key("a")), res("a", "elsewhere")}},
		{"cycle", []*planner.Resource{res("a", key("b")), res("b", key("a")), res("c", key("a"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var order []string
			walkDAG(tc.rs, func(r *planner.Resource) []string { return r.DependsOn }, func(r *planner.Resource) {
				mu.Lock()
				order = append(order, r.Name)
				mu.Unlock()
			})
			if len(order) != len(tc.rs) {
				t.Fatalf("ran %v", order)
			}
			if tc.name == "chain" && (order[0] != "a" || order[1] != "b" || order[2] != "c") {
				t.Errorf("order %v, want a b c", order)
			}
		})
	}
}

// TestSlotsPerSubscription: with one slot per subscription, a resource of
// one subscription holding its slot does not keep another subscription's
// resource from starting (ARM throttles subscriptions apart).
func TestSlotsPerSubscription(t *testing.T) {
	w := &walk{e: &Executor{opts: Options{Parallelism: 1}}}
	sem := w.slots()
	a1 := &planner.Resource{Name: "a1", Subscription: "AAAA"}
	a2 := &planner.Resource{Name: "a2", Subscription: "aaaa"}
	b1 := &planner.Resource{Name: "b1", Subscription: "bbbb"}
	sem(a1) <- struct{}{} // a1 holds subscription aaaa's only slot
	select {
	case sem(b1) <- struct{}{}:
	default:
		t.Fatal("a resource of another subscription waits for aaaa's slot")
	}
	select {
	case sem(a2) <- struct{}{}:
		t.Fatal("two resources of one subscription ran at once with Parallelism 1")
	default:
	}
}
