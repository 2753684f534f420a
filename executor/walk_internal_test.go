package executor

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

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
			walkDAG(tc.rs, func(r *planner.Resource) []string { return r.DependsOn }, nil, nil, func(r *planner.Resource, _ *slot) {
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

// TestSlotHandedBackWhileWaiting: a slot given back while its operation
// waits lets another resource of the subscription start; taking it back
// waits for a free one; done gives it back once.
func TestSlotHandedBackWhileWaiting(t *testing.T) {
	ch := make(chan struct{}, 1)
	a := takeSlot(ch)
	a.Release() // a's operation waits for ARM
	b := takeSlot(ch)
	taken := make(chan error, 1)
	go func() { taken <- a.Acquire(context.Background()) }()
	select {
	case <-taken:
		t.Fatal("a took its slot back while b held the only one")
	case <-time.After(50 * time.Millisecond):
	}
	b.done()
	if err := <-taken; err != nil {
		t.Fatal(err)
	}
	a.done()
	a.done() // idempotent
	select {
	case ch <- struct{}{}:
	default:
		t.Fatal("the slot was not given back")
	}
	// A context that ends while waiting for a slot leaves it free.
	c := takeSlot(make(chan struct{}, 1))
	c.Release()
	c.ch <- struct{}{} // someone else takes it
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Acquire(ctx); err == nil {
		t.Fatal("Acquire with an ended context returned no error")
	}
	c.done() // must not take the other holder's slot
	if len(c.ch) != 1 {
		t.Fatalf("done took another holder's slot: %d in use, want 1", len(c.ch))
	}
}

// TestWalkDAGQueuesForSlots: resources that wait for a slot wait in their
// subscription's queue, first in first out, not each on a goroutine of its
// own; a resource skip deals with never takes a slot; every slot comes back.
func TestWalkDAGQueuesForSlots(t *testing.T) {
	const n = 200
	rs := make([]*planner.Resource, n)
	for i := range rs {
		rs[i] = &planner.Resource{Namespace: "n", Group: "g", Kind: "K", Name: fmt.Sprintf("r%03d", i), Subscription: "aaaa"}
	}
	w := &walk{e: &Executor{opts: Options{Parallelism: 1}}}
	slotOf := w.slots()
	release := make(chan struct{})
	first := make(chan struct{})
	base := runtime.NumGoroutine()
	var mu sync.Mutex
	var order []string
	running, most := 0, 0
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		walkDAG(rs, func(*planner.Resource) []string { return nil }, slotOf,
			func(r *planner.Resource) bool { return r.Name == "r007" },
			func(r *planner.Resource, s *slot) {
				if s == nil {
					t.Errorf("%s ran without a slot", r.Name)
				}
				mu.Lock()
				running++
				most = max(most, running)
				order = append(order, r.Name)
				mu.Unlock()
				if r.Name == "r000" {
					close(first)
					<-release
				}
				mu.Lock()
				running--
				mu.Unlock()
			})
	}()
	<-first
	time.Sleep(50 * time.Millisecond) // let anything that would start a goroutine per resource do so
	if g := runtime.NumGoroutine() - base; g > 10 {
		t.Errorf("%d goroutines while %d resources wait for one slot; want a queue, not a goroutine each", g, n-1)
	}
	close(release)
	<-finished
	if most != 1 {
		t.Errorf("%d ran at once with one slot", most)
	}
	if len(order) != n-1 {
		t.Fatalf("ran %d, want %d (one skipped)", len(order), n-1)
	}
	for i, name := range order {
		want := i
		if i >= 7 {
			want = i + 1 // r007 was skipped
		}
		if name != fmt.Sprintf("r%03d", want) {
			t.Fatalf("order %v: want plan order", order)
		}
	}
	select {
	case slotOf(rs[0]) <- struct{}{}:
	default:
		t.Error("the slot was not handed back")
	}
}
