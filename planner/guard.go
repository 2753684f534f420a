package planner

import (
	"fmt"
	"sort"

	"github.com/gitaso/gitaso/record"
)

// Guard is the mass-deletion guard: a plan that would delete more than it
// allows is held until its deletions are approved (record.Hold).
type Guard struct {
	// MaxDeletions holds a plan that deletes more resources than this;
	// 0 sets no count limit.
	MaxDeletions int
	// MaxFraction holds a plan that deletes more than this fraction of the
	// managed resources (and at least MinFractionCount of them); 0 sets no
	// fraction limit.
	MaxFraction float64
}

// MinFractionCount is the fewest deletions the fraction limit holds: deleting
// 2 of 3 resources is an ordinary change, not a mass deletion.
const MinFractionCount = 5

// DefaultGuard returns the defaults: more than 25 deletions, or more than half
// of the managed resources (from 5 deletions on).
func DefaultGuard() Guard { return Guard{MaxDeletions: 25, MaxFraction: 0.5} }

// Deletions returns the state keys of the resources the plan deletes from
// Azure (with a DELETE or through a parent's cascade), sorted. Detached
// resources stay in Azure and are not deletions.
func (p *Plan) Deletions() []string {
	var ks []string
	for _, r := range p.Resources {
		if r.Action == Delete {
			ks = append(ks, r.Key())
		}
	}
	sort.Strings(ks)
	return ks
}

// Check returns why the plan must be held, or nil. managed is the number of
// resources in state. A plan that declares nothing while gitaso manages
// resources (an emptied repository, a removed path) is always held when it
// deletes anything.
func (gd Guard) Check(p *Plan, managed int) *record.Hold {
	keys := p.Deletions()
	n := len(keys)
	if n == 0 {
		return nil
	}
	declared := 0
	for _, r := range p.Resources {
		if r.Action != Delete && r.Action != Detach {
			declared++
		}
	}
	h := &record.Hold{Deletions: n, Managed: managed, Keys: keys}
	switch {
	case declared == 0 && managed > 0:
		h.Reason = record.HoldEmpty
		h.Message = fmt.Sprintf("revision %s declares no resource at all while gitaso manages %d: it would delete %d of them", short(p.Revision), managed, n)
	case gd.MaxDeletions > 0 && n > gd.MaxDeletions:
		h.Reason = record.HoldMassDeletion
		h.Message = fmt.Sprintf("revision %s would delete %d of %d managed resources, more than the deletion guard allows (--max-deletions %d)", short(p.Revision), n, managed, gd.MaxDeletions)
	case gd.MaxFraction > 0 && n >= MinFractionCount && managed > 0 && float64(n) > gd.MaxFraction*float64(managed):
		h.Reason = record.HoldMassDeletion
		h.Message = fmt.Sprintf("revision %s would delete %d of %d managed resources (%.0f %%), more than the deletion guard allows (--max-deletion-fraction %g)",
			short(p.Revision), n, managed, 100*float64(n)/float64(managed), gd.MaxFraction)
	default:
		return nil
	}
	return h
}

// Approves reports whether an approval covers every deletion of the plan.
func Approves(a record.Approval, p *Plan) bool {
	if a.Revision != p.Revision {
		return false
	}
	ok := map[string]bool{}
	for _, k := range a.Keys {
		ok[k] = true
	}
	for _, k := range p.Deletions() {
		if !ok[k] {
			return false
		}
	}
	return true
}

func short(rev string) string { return ShortRevision(rev) }
