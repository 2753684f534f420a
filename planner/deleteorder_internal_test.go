package planner

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/record"
)

// TestOrderDeletesMatchesQuadratic compares orderDeletes with the pairwise
// algorithm it replaced on random deletion sets: nested ARM IDs, shared
// ARM IDs, parents deleting their children, recorded dependencies with
// cycles.
func TestOrderDeletesMatchesQuadratic(t *testing.T) {
	for seed := range uint64(300) {
		mk := func() ([]*Resource, map[string]record.Resource) {
			rng := rand.New(rand.NewPCG(seed, 24))
			return randomDeletions(rng)
		}
		a, prior := mk()
		b, _ := mk()
		orderDeletes(a, prior)
		orderDeletesQuadratic(b, prior)
		if diff := cmp.Diff(deleteOrder(b), deleteOrder(a)); diff != "" {
			t.Fatalf("seed %d: order (-quadratic +new):\n%s", seed, diff)
		}
	}
}

func deleteOrder(rs []*Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Key()+" after "+strings.Join(r.DeleteAfter, ","))
	}
	return out
}

func randomDeletions(rng *rand.Rand) ([]*Resource, map[string]record.Resource) {
	n := 1 + rng.IntN(40)
	var rs []*Resource
	var ids []string
	for i := range n {
		var id string
		switch {
		case len(ids) > 0 && rng.IntN(10) == 0:
			id = ids[rng.IntN(len(ids))] // another key, the same ARM ID
		case len(ids) > 0 && rng.IntN(2) == 0:
			parent := ids[rng.IntN(len(ids))]
			id = fmt.Sprintf("%s/children/c%d", parent, i)
			if rng.IntN(2) == 0 {
				id = strings.ToUpper(id[:len(id)/2]) + id[len(id)/2:]
			}
		default:
			id = fmt.Sprintf("/subscriptions/s/resourceGroups/rg%d", rng.IntN(5))
		}
		ids = append(ids, id)
		rs = append(rs, &Resource{Namespace: "ns", Group: "g", Kind: "K", Name: fmt.Sprintf("r%02d", i), ARMID: id, Action: Delete})
	}
	prior := map[string]record.Resource{}
	for _, r := range rs {
		var deps []string
		for range rng.IntN(3) {
			deps = append(deps, rs[rng.IntN(len(rs))].Key())
		}
		prior[r.Key()] = record.Resource{DependsOn: deps}
		if rng.IntN(3) == 0 {
			var above []string
			for _, q := range rs {
				if strings.HasPrefix(strings.ToLower(r.ARMID), strings.ToLower(q.ARMID)+"/") {
					above = append(above, q.Key())
				}
			}
			sort.Strings(above)
			if len(above) > 0 {
				r.DeletedWith = above[rng.IntN(len(above))]
			}
		}
	}
	rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
	return rs, prior
}

// BenchmarkOrderDeletes orders the deletion of 900 identities, each with a
// federated credential deleted with it.
func BenchmarkOrderDeletes(b *testing.B) {
	for _, impl := range []struct {
		name string
		f    func([]*Resource, map[string]record.Resource)
	}{{"heap", orderDeletes}, {"quadratic", orderDeletesQuadratic}} {
		b.Run(impl.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				var rs []*Resource
				for i := range 900 {
					id := fmt.Sprintf("/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-%04d", i)
					idr := &Resource{Namespace: "ns", Group: "managedidentity.azure.com", Kind: "UserAssignedIdentity", Name: fmt.Sprintf("id-%04d", i), ARMID: id, Action: Delete}
					rs = append(rs, idr, &Resource{Namespace: "ns", Group: "managedidentity.azure.com", Kind: "FederatedIdentityCredential",
						Name: fmt.Sprintf("id-%04d-fic", i), ARMID: id + "/federatedIdentityCredentials/fic", Action: Delete, DeletedWith: idr.Key()})
				}
				b.StartTimer()
				impl.f(rs, nil)
			}
		})
	}
}

// orderDeletesQuadratic is orderDeletes as it was before it was made
// O(n log n): the reference its order is compared with.
//
// It orders the deletions for apply and sets each one's
// DeleteAfter: a resource is deleted after those that depended on it when
// they were applied (their recorded DependsOn, from prior) and after those
// below its ARM ID, so in reverse dependency order. A resource ARM deletes
// with its parent (DeletedWith) is settled after the parent. Edges that
// would close a cycle (stale records) are dropped in favour of the ARM-ID
// depth order, deepest first.
func orderDeletesQuadratic(rs []*Resource, prior map[string]record.Resource) {
	byKey := make(map[string]*Resource, len(rs))
	for _, r := range rs {
		byKey[r.Key()] = r
	}
	after := map[string]map[string]bool{} // key → keys to finish first
	edge := func(first, then string) {
		if first == then {
			return
		}
		if after[then] == nil {
			after[then] = map[string]bool{}
		}
		after[then][first] = true
	}
	// root is the deletion that removes r from Azure: its own, or that of
	// the parent ARM deletes it with.
	root := func(r *Resource) string {
		if r.DeletedWith != "" && byKey[r.DeletedWith] != nil {
			return r.DeletedWith
		}
		return r.Key()
	}
	for _, y := range rs {
		for _, d := range prior[y.Key()].DependsOn {
			if x := byKey[d]; x != nil {
				edge(root(y), root(x)) // y depended on x: y goes first
			}
		}
		if y.DeletedWith != "" {
			edge(y.DeletedWith, y.Key())
			continue
		}
		ly := strings.ToLower(y.ARMID)
		for _, x := range rs {
			lx := strings.ToLower(x.ARMID)
			if x != y && lx != "" && strings.HasPrefix(ly, lx+"/") {
				edge(y.Key(), x.Key()) // y lies below x
			}
		}
	}
	// Kahn's algorithm; among the ready ones (and to break a cycle) the
	// deepest ARM ID first, then by key.
	less := func(a, b *Resource) bool {
		if da, db := depth(a.ARMID), depth(b.ARMID); da != db {
			return da > db
		}
		return a.Key() < b.Key()
	}
	done := map[string]bool{}
	order := make([]*Resource, 0, len(rs))
	for len(order) < len(rs) {
		var next *Resource
		for _, r := range rs {
			if done[r.Key()] {
				continue
			}
			ready := true
			for k := range after[r.Key()] {
				if !done[k] {
					ready = false
					break
				}
			}
			if ready && (next == nil || less(r, next)) {
				next = r
			}
		}
		if next == nil { // a cycle: the deepest remaining goes
			for _, r := range rs {
				if !done[r.Key()] && (next == nil || less(r, next)) {
					next = r
				}
			}
		}
		done[next.Key()] = true
		order = append(order, next)
	}
	pos := make(map[string]int, len(order))
	for i, r := range order {
		pos[r.Key()] = i
	}
	for _, r := range order {
		r.DeleteAfter = nil
		for k := range after[r.Key()] {
			if pos[k] < pos[r.Key()] {
				r.DeleteAfter = append(r.DeleteAfter, k)
			}
		}
		sort.Strings(r.DeleteAfter)
	}
	copy(rs, order)
}
