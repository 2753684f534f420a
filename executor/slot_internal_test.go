package executor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
)

// countingSlot counts how the calls of one resource used the slot they
// were given.
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

// handedBack reports whether the slot was given back at least once, taken
// again each time, and is held at the end.
func (s *countingSlot) handedBack() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releases > 0 && s.acquires == s.releases && s.held
}

func (s *countingSlot) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("gave its slot back %d times, took it again %d times, holds it at the end: %v", s.releases, s.acquires, s.held)
}

type envClients struct{ c *azure.Client }

func (e envClients) For(context.Context, string) (*azure.Client, error) { return e.c, nil }

// TestApplyAndDeleteHandTheirSlotToTheClient: apply and delete give the
// slot they hold to the client their calls go through
// (azure.CallOptions.Slot): a storage account's PUT and a resource group's
// DELETE, long-running operations in ARM, give it back while they wait and
// take it again before each poll, so a resource waiting on ARM holds no
// share of the parallelism.
func TestApplyAndDeleteHandTheirSlotToTheClient(t *testing.T) {
	env := emutest.New(t)
	objs, err := source.ParseFile("test.yaml", []byte(`apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: rg, namespace: team}
spec: {location: westeurope}
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata: {name: slotsa, namespace: team}
spec:
  location: westeurope
  kind: StorageV2
  sku: {name: Standard_LRS}
  owner: {name: rg}
`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := planner.Build(&manifest.Snapshot{Revision: "test", Objects: objs}, planner.Options{SubscriptionID: env.Sub})
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	e := New(envClients{env.Client}, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	w := &walk{e: e, plan: p, secrets: g, outputs: planner.Outputs{}, results: map[string]*ResourceResult{}}
	ctx := context.Background()
	slots := map[string]*countingSlot{}
	var rgRes *planner.Resource
	for _, r := range p.Resources { // the plan orders owners first
		s := &countingSlot{held: true}
		slots[r.Kind] = s
		if rr := w.apply(ctx, r, s); rr.Outcome != Applied {
			t.Fatalf("apply %s: %s %v", r.ID(), rr.Outcome, rr.Err)
		}
		if r.Kind == "ResourceGroup" {
			rgRes = r
		}
	}
	if s := slots["StorageAccount"]; s == nil || !s.handedBack() {
		t.Errorf("the storage account's PUT %s; want the slot given back while it waited, taken again before each poll, held at the end", s)
	}

	del := *rgRes
	del.Action = planner.Delete
	s := &countingSlot{held: true}
	if rr := w.delete(ctx, &del, s); rr.Outcome != Deleted {
		t.Fatalf("delete %s: %s %v", del.ID(), rr.Outcome, rr.Err)
	}
	if !s.handedBack() {
		t.Errorf("the resource group's DELETE %s; want the slot given back while it waited, taken again before each poll, held at the end", s)
	}
	if _, err := env.Client.Get(ctx, del.ARMID, del.APIVersion); !isNotFound(err) {
		t.Errorf("the resource group is still there after its DELETE: %v", err)
	}
}
