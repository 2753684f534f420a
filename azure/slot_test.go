package azure

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

// countingSlot records how a call used the slot its client was given, and whether
// it was held when each request went out.
type countingSlot struct {
	mu                 sync.Mutex
	held               bool
	releases, acquires int
}

func (s *countingSlot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = false
	s.releases++
}

func (s *countingSlot) Acquire(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = true
	s.acquires++
	return nil
}

// A long-running PUT hands its slot back while it waits between polls and
// takes it again before each poll: an operation waiting on ARM does not
// hold a share of the executor's parallelism.
func TestLongRunningOperationHandsItsSlotBackWhileItWaits(t *testing.T) {
	env := newEmuEnv(t, emulator.WithDefaultLatency(300*time.Millisecond))
	c := env.client(t, env.owner)
	rg := "/subscriptions/" + env.sub + "/resourceGroups/rg-slot"
	if _, err := c.Put(context.Background(), rg, "2021-04-01", []byte(`{"location":"westeurope"}`)); err != nil {
		t.Fatal(err)
	}
	s := &countingSlot{held: true}
	if _, err := c.With(CallOptions{Slot: s}).Put(context.Background(), rg+"/providers/Microsoft.Storage/storageAccounts/stslot", "2023-01-01",
		[]byte(`{"location":"westeurope","kind":"StorageV2","sku":{"name":"Standard_LRS"}}`)); err != nil {
		t.Fatal(err)
	}
	if s.releases == 0 || s.acquires != s.releases || !s.held {
		t.Errorf("slot released %d times, taken again %d times, held at the end %v; want at least one wait, each followed by a take, held at the end",
			s.releases, s.acquires, s.held)
	}

	// A context that ends while the operation waits ends the wait without taking the slot again.
	s = &countingSlot{held: true}
	cctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := c.With(CallOptions{Slot: s}).Put(cctx, rg+"/providers/Microsoft.Storage/storageAccounts/stslot2", "2023-01-01",
		[]byte(`{"location":"westeurope","kind":"StorageV2","sku":{"name":"Standard_LRS"}}`)); err == nil {
		t.Fatal("a cancelled wait returned no error")
	}
	if s.held || s.acquires != 0 {
		t.Errorf("after a cancelled wait the slot is held %v (taken %d times); want given back", s.held, s.acquires)
	}
}
