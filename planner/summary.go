package planner

import (
	"fmt"
	"strings"
)

// SummaryLine counts a plan's changes in one short line for a commit status
// or a check ("3 to create, 1 to delete"): only the actions that occur, in
// the order the plan's summary lists them, with objects known after apply
// last; "no changes" when applying it would change nothing. A held plan says
// so first ("held (max-deletions): 40 to delete"), and a partial one (units
// failed) before that ("partial (1 of 4 units failed): 2 to update").
func SummaryLine(p *Plan) string {
	if p == nil {
		return "no plan"
	}
	s := p.Summary()
	var parts []string
	for _, c := range []struct {
		a    Action
		verb string
	}{
		{Create, "to create"}, {Adopt, "to adopt"}, {Move, "to move"}, {Update, "to update"},
		{Drift, "drifted to correct"}, {Delete, "to delete"}, {Detach, "to detach"},
	} {
		if n := s[c.a]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, c.verb))
		}
	}
	if n := len(p.Deferred); n > 0 {
		parts = append(parts, fmt.Sprintf("%d known after apply", n))
	}
	line := strings.Join(parts, ", ")
	if line == "" {
		line = "no changes"
	}
	if p.Held != nil {
		line = "held (" + p.Held.Reason + "): " + line
	}
	if n := len(p.FailedUnits()); n > 0 {
		units := "units"
		if len(p.Units) == 1 {
			units = "unit"
		}
		line = fmt.Sprintf("partial (%d of %d %s failed): %s", n, len(p.Units), units, line)
	}
	return line
}
