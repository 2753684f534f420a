package reconcile

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gitaso/gitaso/planner"
)

// ErrWouldWrite is returned (wrapped, naming the resources) by a run with
// Options.WriteNothing whose plan would write to Azure: nothing of that
// phase is applied or recorded.
var ErrWouldWrite = errors.New("the plan writes to Azure")

// writesOf lists the resources of p that a run would write to Azure (what
// is neither unchanged, observed, detached nor adopted without a write),
// with their action and the reason the planner gave.
func writesOf(p *planner.Plan) []string {
	var out []string
	for _, res := range p.Resources {
		switch {
		case res.Action == planner.NoOp, res.Action == planner.Observe, res.Action == planner.Detach:
		case res.Action == planner.Adopt && res.NoWrite:
		default:
			line := fmt.Sprintf("%s would be %s", res.ID(), res.Action)
			if res.Reason != "" {
				line += " (" + res.Reason + ")"
			}
			out = append(out, line)
		}
	}
	return out
}

// checkWritesNothing refuses a plan that writes, for Options.WriteNothing.
func checkWritesNothing(p *planner.Plan) error {
	w := writesOf(p)
	if len(w) == 0 {
		return nil
	}
	const show = 20
	more := ""
	if len(w) > show {
		more = fmt.Sprintf("; and %d more", len(w)-show)
		w = w[:show]
	}
	return fmt.Errorf("%w: %d resource(s): %s%s", ErrWouldWrite, len(writesOf(p)), strings.Join(w, "; "), more)
}
