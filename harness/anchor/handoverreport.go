package anchor

import (
	"fmt"
	"io"
	"strings"
)

// WriteHandoverMarkdown renders a hand-over run as the tables of docs/aso-anchor.md's "Hand-over" section.
func WriteHandoverMarkdown(w io.Writer, r *HandoverResult) {
	var b strings.Builder
	stale := ""
	if r.Stale {
		stale = ", ASO's object left stale (-handover-stale)"
	}
	fmt.Fprintf(&b, "### Hand-over: %s%s (%s)\n\n%d objects, %d ASO resources in namespaces %s; one emulator, one kube-apiserver.\n\n",
		r.Workload, stale, r.Date, r.Objects, r.ASOObjects, strings.Join(r.Namespaces, ", "))
	fmt.Fprintf(&b, "| phase | may write | seconds | steps (seconds) | ASO reads / writes / actions | gitaso reads / writes / actions | resources written (ASO, gitaso) |\n|---|---|---|---|---|---|---|\n")
	for _, p := range r.Phases {
		var steps []string
		for _, s := range p.Steps {
			e := ""
			if s.Error != "" {
				e = " (error)"
			}
			steps = append(steps, fmt.Sprintf("%s %.1f%s", s.Name, s.Seconds, e))
		}
		rw := r.Writes.Resources[p.Name]
		fmt.Fprintf(&b, "| %s | %s | %.1f | %s | %s | %s | %d, %d |\n", p.Name, nameSide(p.Writer), p.Seconds, strings.Join(steps, "; "),
			trafficCell(p.Traffic[sideASO]), trafficCell(p.Traffic[sideGitaso]), rw[sideASO], rw[sideGitaso])
	}
	fmt.Fprintf(&b, "\nBy step (ARM requests sent while the step ran; ASO's reactions to a step may come after it, within its phase):\n\n"+
		"| phase | step | seconds | ASO reads / writes | gitaso reads / writes |\n|---|---|---|---|---|\n")
	for _, p := range r.Phases {
		for _, s := range p.Steps {
			fmt.Fprintf(&b, "| %s | %s | %.2f | %s | %s |\n", p.Name, s.Name, s.Seconds, rwCell(s.Traffic[sideASO]), rwCell(s.Traffic[sideGitaso]))
		}
	}
	fmt.Fprintf(&b, "\nWrite log: %d writes (PUT, PATCH, DELETE); resources written by both sides in one phase: %d; writes by a side that "+
		"may not write in the phase: %d; outside every phase: %d.\n", r.Writes.Writes, len(r.Writes.Both), len(r.Writes.Unexpected), len(r.Writes.Outside))
	for _, s := range append(append(append([]string(nil), r.Writes.Both...), r.Writes.Unexpected...), r.Writes.Outside...) {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	fmt.Fprintf(&b, "\n| end of phase | expected manager | ASO manages | gitaso manages | neither | held by gitaso's state while ASO manages |\n|---|---|---|---|---|---|\n")
	for _, m := range r.Managers {
		held := fmt.Sprint(len(m.Held))
		if m.AllowHeld && len(m.Held) > 0 {
			held += " (adopted, not yet handed over: gitaso refuses to write them while ASO manages)"
		}
		exp := m.Expected
		if exp == "" {
			exp = "either, one each"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %s |\n", m.Phase, exp, m.ASO, m.Gitaso, len(m.Neither), held)
	}
	fmt.Fprintf(&b, "\nChecks:\n\n")
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "- %s\n", c)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "- FAILED: %s\n", r.Error)
	}
	for _, d := range first2(r.WayBackDiffs, 10) {
		fmt.Fprintf(&b, "  - way back: %s %s: %s → %s\n", d.Resource, d.Field, d.ASO, d.Gitaso)
	}
	verdict := "all checks held"
	if !r.OK() {
		verdict = "SOME CHECKS FAILED"
	}
	fmt.Fprintf(&b, "\nVerdict: %s.\n\n", verdict)
	_, _ = io.WriteString(w, b.String())
}

func trafficCell(t *Traffic) string {
	if t == nil {
		return "0 / 0 / 0"
	}
	return fmt.Sprintf("%d / %d / %d", t.Reads, t.Writes, t.Actions)
}

func rwCell(t *Traffic) string {
	if t == nil {
		return "0 / 0"
	}
	return fmt.Sprintf("%d / %d", t.Reads, t.Writes)
}

func first2(d []Diff, n int) []Diff {
	if len(d) > n {
		return d[:n]
	}
	return d
}
