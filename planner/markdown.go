package planner

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// RenderMarkdown writes the plan as a pull-request comment: a summary
// table of the changes, then the text plan in a collapsed block. Secret
// values are redacted as in every rendering.
func RenderMarkdown(w io.Writer, p *Plan) error {
	bw := &errWriter{w: w}
	s := p.Summary()
	if p.Beside != nil {
		bw.printf("### gitaso plan beside ASO for `%s`\n\n%s.\n\n", ShortRevision(p.Revision), besideLine(p.Beside))
	} else {
		bw.printf("### gitaso plan for `%s`\n\n", ShortRevision(p.Revision))
	}
	for _, e := range p.External {
		if e.Kind == "HelmChart" || e.Kind == "" {
			bw.printf("Chart `%s@%s` for HelmRelease `%s`\n\n", e.Name, e.Version, e.User)
		}
	}
	renderUnitsMarkdown(bw, p)
	renderWarningsMarkdown(bw, p)
	if !p.HasChanges() && p.refusedASO() == 0 {
		bw.printf("No changes. Azure matches the manifests (%d resources).\n", s[NoOp]+s[Observe])
		return bw.err
	}
	if h := p.Held; h != nil {
		bw.printf("> [!WARNING]\n> **Held (%s):** %s\n", h.Reason, mdEscape(h.Message))
		for i, u := range h.Unmanaged {
			if i == 20 {
				bw.printf("> ... and %d more not managed by gitaso\n", len(h.Unmanaged)-20)
				break
			}
			bw.printf("> - not managed by gitaso: `%s`\n", u)
		}
		bw.printf("\n")
	}
	head := ""
	if p.Beside != nil {
		head = "ASO would do: "
	}
	bw.printf("**%s%s** (%d unchanged)\n\n", head, summaryLine(s), s[NoOp])
	if n := p.refusedASO(); n > 0 {
		bw.printf("> [!CAUTION]\n> **Refused:** %d resources are managed by ASO objects in the cluster; gitaso does not write them.\n\n", n)
	}
	withASO := p.Beside != nil || p.refusedASO() > 0
	if withASO {
		bw.printf("| action | resource | ARM ID | changes | ASO object |\n|---|---|---|---|---|\n")
	} else {
		bw.printf("| action | resource | ARM ID | changes |\n|---|---|---|---|\n")
	}
	for _, r := range p.Resources {
		if (r.Action == NoOp || r.Action == Observe) && !r.ManagedByASO {
			continue
		}
		changes := ""
		switch {
		case r.Action == Create || r.Action == Delete || r.Action == Detach:
		case r.Action == Move && len(r.Changes) == 0:
			changes = "from `" + r.MovedFrom + "`"
		case len(r.Changes) > 0:
			paths := make([]string, 0, len(r.Changes))
			for _, c := range r.Changes {
				paths = append(paths, "`"+c.Path+"`")
			}
			changes = strings.Join(paths, ", ")
		}
		if !withASO {
			bw.printf("| %s %s | `%s` | `%s` | %s |\n", symbols[r.Action], r.Action, r.ID(), r.ARMID, mdEscape(changes))
			continue
		}
		object := ""
		if r.ASO != nil {
			object = asoLine(r.ASO)
		}
		action := fmt.Sprintf("%s %s", symbols[r.Action], r.Action)
		if r.ManagedByASO {
			action = "⛔ refused (" + r.Action.String() + ")"
		}
		bw.printf("| %s | `%s` | `%s` | %s | %s |\n", action, r.ID(), r.ARMID, mdEscape(changes), mdEscape(object))
	}
	for _, d := range p.Deferred {
		bw.printf("| ~ known after apply | `%s` | | %s |\n", d.ID(), mdEscape(d.Reason))
	}
	var text bytes.Buffer
	if err := RenderText(&text, p, TextOptions{}); err != nil {
		return err
	}
	bw.printf("\n<details><summary>Full plan</summary>\n\n```diff\n%s```\n\n</details>\n", strings.ReplaceAll(text.String(), "```", "'''"))
	return bw.err
}

// renderWarningsMarkdown lists the resources' warnings in one alert, changed
// or not (a removed CRD version is worth fixing either way).
func renderWarningsMarkdown(bw *errWriter, p *Plan) {
	n := 0
	for _, r := range p.Resources {
		for _, w := range r.Warnings {
			if n == 0 {
				bw.printf("> [!WARNING]\n")
			}
			n++
			bw.printf("> `%s`: %s\n", r.ID(), mdEscape(w))
		}
	}
	if n > 0 {
		bw.printf("\n")
	}
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
