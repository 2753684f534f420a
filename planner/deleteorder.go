package planner

import (
	"container/heap"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/record"
)

// orderDeletes orders the deletions for apply and sets each one's
// DeleteAfter: a resource is deleted after those that depended on it when
// they were applied (their recorded DependsOn, from prior) and after those
// below its ARM ID, so in reverse dependency order. A resource ARM deletes
// with its parent (DeletedWith) is settled after the parent. Edges that
// would close a cycle (stale records) are dropped in favour of the ARM-ID
// depth order, deepest first.
//
// It takes O(n log n) for n deletions plus their edges: the resources above
// one are found by cutting its ARM ID at each "/", and the walk keeps the
// ready ones in a heap. (It compared every pair and rescanned every
// deletion for each one it placed before: 1,800 deletions took seconds of
// CPU before the first DELETE of every run.)
func orderDeletes(rs []*Resource, prior map[string]record.Resource) {
	n := len(rs)
	keys := make([]string, n)
	depths := make([]int, n)
	idx := make(map[string]int, n)
	byID := make(map[string][]int, n)
	for i, r := range rs {
		keys[i], depths[i] = r.Key(), depth(r.ARMID)
		idx[keys[i]] = i
		if l := strings.ToLower(r.ARMID); l != "" {
			byID[l] = append(byID[l], i)
		}
	}
	after := make([]map[int]bool, n) // i → deletions to finish first
	edge := func(first, then int) {
		if first == then {
			return
		}
		if after[then] == nil {
			after[then] = map[int]bool{}
		}
		after[then][first] = true
	}
	// root is the deletion that removes rs[i] from Azure: its own, or that
	// of the parent ARM deletes it with.
	root := func(i int) int {
		if w, ok := idx[rs[i].DeletedWith]; ok && rs[i].DeletedWith != "" {
			return w
		}
		return i
	}
	for y, r := range rs {
		for _, d := range prior[keys[y]].DependsOn {
			if x, ok := idx[d]; ok {
				edge(root(y), root(x)) // y depended on x: y goes first
			}
		}
		if r.DeletedWith != "" {
			if w, ok := idx[r.DeletedWith]; ok {
				edge(w, y)
			}
			continue
		}
		ly := strings.ToLower(r.ARMID)
		for i := strings.LastIndexByte(ly, '/'); i > 0; i = strings.LastIndexByte(ly[:i], '/') {
			for _, x := range byID[ly[:i]] {
				edge(y, x) // y lies below x
			}
		}
	}
	// Kahn's algorithm; among the ready ones (and to break a cycle) the
	// deepest ARM ID first, then by key.
	less := func(a, b int) bool {
		if depths[a] != depths[b] {
			return depths[a] > depths[b]
		}
		return keys[a] < keys[b]
	}
	waiting := make([]int, n)
	then := make([][]int, n)
	ready := &intHeap{less: less}
	for i := range rs {
		waiting[i] = len(after[i])
		for f := range after[i] {
			then[f] = append(then[f], i)
		}
		if waiting[i] == 0 {
			ready.s = append(ready.s, i)
		}
	}
	heap.Init(ready)
	done := make([]bool, n)
	pos := make([]int, n)
	order := make([]*Resource, 0, n)
	for len(order) < n {
		next := -1
		for ready.Len() > 0 {
			if i := heap.Pop(ready).(int); !done[i] {
				next = i
				break
			}
		}
		if next < 0 { // a cycle: the deepest remaining goes
			for i := range rs {
				if !done[i] && (next < 0 || less(i, next)) {
					next = i
				}
			}
		}
		done[next], pos[next] = true, len(order)
		order = append(order, rs[next])
		for _, t := range then[next] {
			if waiting[t]--; waiting[t] == 0 && !done[t] {
				heap.Push(ready, t)
			}
		}
	}
	for i, r := range rs {
		r.DeleteAfter = nil
		for f := range after[i] {
			if pos[f] < pos[i] {
				r.DeleteAfter = append(r.DeleteAfter, keys[f])
			}
		}
		sort.Strings(r.DeleteAfter)
	}
	copy(rs, order)
}

// intHeap is a heap of indices ordered by less.
type intHeap struct {
	s    []int
	less func(a, b int) bool
}

func (h *intHeap) Len() int           { return len(h.s) }
func (h *intHeap) Less(i, j int) bool { return h.less(h.s[i], h.s[j]) }
func (h *intHeap) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *intHeap) Push(x any)         { h.s = append(h.s, x.(int)) }
func (h *intHeap) Pop() any {
	x := h.s[len(h.s)-1]
	h.s = h.s[:len(h.s)-1]
	return x
}
