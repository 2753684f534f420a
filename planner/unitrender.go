package planner

import (
	"fmt"
	"strings"

	"github.com/gitaso/gitaso/record"
)

// How the plans say that units failed (a partial plan) and that releases
// render no ASO object. A plan without units says nothing of them. A unit's
// errors name files, lines, objects and fields, never values (the renderer
// and the reconciler build them so); they are printed as recorded.

// maxUnitErrors is how many errors of one failed unit a plan lists.
const maxUnitErrors = 20

// partialLine is the plan's head when units failed: "Partial: 1 of 4 units
// failed; their objects are kept as last applied".
func partialLine(p *Plan) string {
	failed := len(p.FailedUnits())
	if failed == 0 {
		return ""
	}
	units := "units"
	if len(p.Units) == 1 {
		units = "unit"
	}
	return fmt.Sprintf("Partial: %d of %d %s failed; their objects are kept as last applied", failed, len(p.Units), units)
}

// ignoredLine counts the releases that render no ASO object: "3 releases
// render no ASO object".
func ignoredLine(p *Plan) string {
	n := 0
	for _, u := range p.Units {
		if u.Ignored {
			n++
		}
	}
	switch n {
	case 0:
		return ""
	case 1:
		return "1 release renders no ASO object"
	}
	return fmt.Sprintf("%d releases render no ASO object", n)
}

// unitHead describes a failed unit in one line: "Kustomization/team-a/apps
// (BuildFailed): last applied 0123456789ab, 2 objects kept".
func unitHead(u record.Unit) string {
	last := "never applied"
	if u.LastAppliedRevision != "" {
		last = "last applied " + ShortRevision(u.LastAppliedRevision)
	}
	reason := u.Ready.Reason
	if reason == "" {
		reason = "Failed"
	}
	kept := ""
	switch n := len(u.Objects); {
	case n == 1:
		kept = ", 1 object kept"
	case n > 1:
		kept = fmt.Sprintf(", %d objects kept", n)
	}
	return fmt.Sprintf("%s (%s): %s%s", u.ID(), reason, last, kept)
}

// unitProblems are the lines that say why a unit failed: its errors
// ("file:line: object: field: message"), at most maxUnitErrors and a count
// of the others, or else its Ready message.
func unitProblems(u record.Unit) []string {
	var out []string
	for i, e := range u.Errors {
		if i == maxUnitErrors {
			out = append(out, fmt.Sprintf("... and %d more errors", len(u.Errors)-maxUnitErrors))
			break
		}
		out = append(out, oneLine(e))
	}
	if len(out) == 0 && u.Ready.Message != "" {
		out = append(out, oneLine(u.Ready.Message))
	}
	return out
}

// oneLine keeps a message on its line: a newline in it would read as
// another line of the plan.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", "")), " ")
}

// renderUnits writes the units' part of the text plan's head: the releases
// ignored and, when units failed, which ones, why and what they last
// applied.
func renderUnits(bw *errWriter, p *Plan) {
	if line := ignoredLine(p); line != "" {
		bw.printf("  %s\n", line)
	}
	head := partialLine(p)
	if head == "" {
		return
	}
	bw.printf("\n%s\n", head)
	for _, u := range p.FailedUnits() {
		bw.printf("  %s\n", unitHead(u))
		for _, line := range unitProblems(u) {
			bw.printf("      %s\n", line)
		}
	}
}

// renderUnitsMarkdown writes the units' part of the pull-request comment.
func renderUnitsMarkdown(bw *errWriter, p *Plan) {
	if line := ignoredLine(p); line != "" {
		bw.printf("%s.\n\n", line)
	}
	head := partialLine(p)
	if head == "" {
		return
	}
	bw.printf("> [!CAUTION]\n> **%s.** Every other unit is planned.\n>\n", mdEscape(head))
	for _, u := range p.FailedUnits() {
		bw.printf("> - %s\n", mdCode(unitHead(u)))
		for _, line := range unitProblems(u) {
			bw.printf(">   - %s\n", mdCode(line))
		}
	}
	bw.printf("\n")
}

// mdCode writes s as a code span, whatever backticks it holds.
func mdCode(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
