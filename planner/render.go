package planner

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gitaso/gitaso/manifest"
)

// RenderJSON writes the plan's documented JSON form.
func RenderJSON(w io.Writer, p *Plan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// ReadJSON reads a plan written by RenderJSON. The result can be rendered but
// not applied (it has no graph).
func ReadJSON(r io.Reader) (*Plan, error) {
	var p Plan
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return &p, nil
}

var symbols = map[Action]string{
	NoOp: " ", Create: "+", Adopt: "+", Update: "~", Drift: "~", Delete: "-", Detach: "-", Observe: "?", Move: ">",
}

var verbs = map[Action]string{
	NoOp:    "is up to date",
	Create:  "will be created",
	Adopt:   "exists in Azure and will be adopted",
	Update:  "will be updated in place",
	Drift:   "has drifted in Azure and will be corrected",
	Delete:  "will be deleted",
	Detach:  "will be forgotten (left in Azure)",
	Observe: "will be read only (reconcile-policy skip)",
	Move:    "is moved here and keeps its Azure resource",
}

// besideVerbs are the verbs of a plan beside ASO: what ASO would do.
var besideVerbs = map[Action]string{
	NoOp:    "is up to date (ASO manages it)",
	Create:  "would be created by ASO",
	Adopt:   "exists in Azure and would be adopted by ASO",
	Update:  "would be updated in place by ASO",
	Drift:   "has drifted in Azure and would be corrected by ASO",
	Delete:  "would be deleted by ASO",
	Detach:  "would be left in Azure by ASO",
	Observe: "would be read only by ASO (reconcile-policy skip)",
	Move:    "would be moved by ASO",
}

// verb is what the plan says of r's action.
func (p *Plan) verb(a Action) string {
	if p.Beside != nil {
		return besideVerbs[a]
	}
	return verbs[a]
}

// besideLine is the head of a plan beside ASO.
func besideLine(b *Beside) string {
	line := "Beside ASO: gitaso writes nothing; these are the actions ASO would take once this revision reaches the cluster"
	switch {
	case b.Cluster:
		line += fmt.Sprintf(" (%d ASO objects in the cluster)", b.Objects)
	case b.Error != "":
		line += " (the cluster's ASO objects were not read: " + b.Error + "; planned against Azure alone)"
	default:
		line += " (no cluster configured: planned against Azure alone)"
	}
	return line
}

// TextOptions tune the text rendering.
type TextOptions struct {
	// ShowUnchanged lists no-op resources too.
	ShowUnchanged bool
}

// RenderText writes the plan the way `terraform plan` reads, with ASO names
// and ARM IDs.
func RenderText(w io.Writer, p *Plan, opts TextOptions) error {
	bw := &errWriter{w: w}
	bw.printf("gitaso plan for revision %s\n", ShortRevision(p.Revision))
	for _, e := range p.External {
		if line := externalLine(e); line != "" {
			bw.printf("  %s\n", line)
		}
	}
	if p.Beside != nil {
		bw.printf("  %s\n", besideLine(p.Beside))
	}
	renderUnits(bw, p)
	renderHeld(bw, p, "")
	changed := len(p.Deferred)
	for _, r := range p.Resources {
		if r.Action == NoOp && !opts.ShowUnchanged && !r.ManagedByASO {
			if len(r.Warnings) > 0 {
				// Unchanged, but what it warns of is still true.
				bw.printf("\n  # %s %s\n", r.ID(), verbs[r.Action])
				renderWarnings(bw, r)
			}
			continue
		}
		changed++
		bw.printf("\n  # %s %s", r.ID(), p.verb(r.Action))
		if r.Reason != "" {
			bw.printf(" (%s)", r.Reason)
		}
		bw.printf("\n")
		renderWarnings(bw, r)
		bw.printf("  %s %s/%s %s %q {\n", symbols[r.Action], r.Group, r.Version, r.Kind, r.Namespace+"/"+r.Name)
		bw.printf("      armId      = %q\n", r.ARMID)
		if r.File != "" {
			loc := r.File
			if r.Line > 0 {
				loc += ":" + strconv.Itoa(r.Line)
			}
			bw.printf("      source     = %q\n", loc)
		}
		if r.Origin != nil {
			bw.printf("      origin     = %q\n", r.Origin.String())
		}
		if r.Credential != "" && r.Credential != "global" {
			bw.printf("      credential = %q\n", r.Credential)
		}
		if r.MovedFrom != "" {
			bw.printf("      movedFrom  = %q\n", r.MovedFrom)
		}
		if r.ASO != nil {
			bw.printf("      aso        = %q\n", asoLine(r.ASO))
		}
		if r.ManagedByASO {
			bw.printf("      # refused: %s\n", r.ManagedByASOMessage())
		}
		if r.DeletedWith != "" {
			bw.printf("      # deleted together with %s\n", r.DeletedWith)
		}
		if r.Request != nil && r.Request.Method != "PUT" {
			bw.printf("      %s %s\n", r.Request.Method, r.Request.Path)
		}
		switch r.Action {
		case Create:
			if r.Request != nil {
				bw.printf("      PUT %s\n", r.Request.Path)
				if doc, err := decode(r.Request.Body); err == nil {
					leaves(doc, "", func(path string, v any) {
						bw.printf("      + %s = %s\n", path, show(v, r, path))
					})
				}
			}
		case Adopt, Update, Drift, Move:
			if r.Request != nil {
				bw.printf("      PUT %s\n", r.Request.Path)
			}
			for _, c := range r.Changes {
				switch {
				case c.Sensitive:
					bw.printf("      ~ %s = %s\n", c.Path, r.sensitiveLabel(c.Path))
				case c.Op == "add":
					bw.printf("      + %s = %s\n", c.Path, show(c.After, r, c.Path))
				case c.Op == "remove":
					bw.printf("      - %s = %s\n", c.Path, show(c.Before, r, c.Path))
				default:
					bw.printf("      ~ %s = %s -> %s\n", c.Path, show(c.Before, r, c.Path), show(c.After, r, c.Path))
				}
			}
			if len(r.Changes) == 0 && len(r.KnownAfterApply) > 0 {
				for _, u := range r.KnownAfterApply {
					bw.printf("      ~ %s = %s\n", u, KnownAfterApply)
				}
			}
		}
		bw.printf("    }\n")
	}
	for _, d := range p.Deferred {
		bw.printf("\n  # %s is known after apply: %s\n", d.ID(), d.Reason)
		bw.printf("  ~ %s %s %q (known after apply) {\n", d.Group, d.Kind, d.Namespace+"/"+d.Name)
		if d.File != "" {
			loc := d.File
			if d.Line > 0 {
				loc += ":" + strconv.Itoa(d.Line)
			}
			bw.printf("      source     = %q\n", loc)
		}
		bw.printf("    }\n")
	}
	s := p.Summary()
	if changed == 0 {
		bw.printf("\nNo changes. Azure matches the manifests (%d resources).\n", s[NoOp])
		if p.Partial() {
			bw.printf("Partial: the units that failed keep their objects as last applied until they render again.\n")
		}
		return bw.err
	}
	deferred := ""
	if len(p.Deferred) > 0 {
		deferred = fmt.Sprintf(", %d known after apply (planned in this run once their values exist)", len(p.Deferred))
	}
	head := "Plan"
	if p.Beside != nil {
		head = "ASO would do"
	}
	bw.printf("\n%s: %s; %d unchanged, %d observed%s.\n", head, summaryLine(s), s[NoOp], s[Observe], deferred)
	if n := p.refusedASO(); n > 0 {
		bw.printf("Refused: %d resources are managed by ASO objects in the cluster; gitaso does not write them.\n", n)
	}
	if p.Held != nil {
		bw.printf("Held: nothing of this revision is applied until its deletions are approved.\n")
	}
	if p.Partial() {
		bw.printf("Partial: the units that failed keep their objects as last applied until they render again.\n")
	}
	return bw.err
}

// renderWarnings writes a resource's warnings as comment lines above it.
func renderWarnings(bw *errWriter, r *Resource) {
	for _, w := range r.Warnings {
		bw.printf("  # warning: %s\n", w)
	}
}

// externalLine describes a source outside the repository for the plan's
// head; "" for a pending source (its objects are listed as known after
// apply).
func externalLine(e manifest.External) string {
	switch {
	case e.IsPending():
		return ""
	case strings.HasPrefix(e.Kind, "Exported"):
		return "substitute-from " + strings.TrimPrefix(e.Kind, "Exported") + " " + e.User + " (not in the repository: an export or the cluster)"
	case e.Kind == "AppConfiguration":
		return "substitute-from " + e.User + " (not in the repository: App Configuration " + e.Name + ")"
	}
	return fmt.Sprintf("chart %s@%s for HelmRelease %s (%s)", e.Name, e.Version, e.User, e.Digest)
}

// summaryLine counts the changes as the plan's last line does ("1 to
// create, 0 to adopt, ..."); moves are named only when there are some.
func summaryLine(s map[Action]int) string {
	move := ""
	if s[Move] > 0 {
		move = fmt.Sprintf("%d to move, ", s[Move])
	}
	return fmt.Sprintf("%d to create, %d to adopt, %s%d to update, %d drifted to correct, %d to delete, %d to detach",
		s[Create], s[Adopt], move, s[Update], s[Drift], s[Delete], s[Detach])
}

// renderHeld writes why a plan is held, its deletions and the resources
// gitaso does not manage that they would take with them.
func renderHeld(bw *errWriter, p *Plan, indent string) {
	h := p.Held
	if h == nil {
		return
	}
	bw.printf("\n%sHELD (%s): %s\n", indent, h.Reason, h.Message)
	const show = 20
	for i, u := range h.Unmanaged {
		if i == show {
			bw.printf("%s  ... and %d more not managed by gitaso\n", indent, len(h.Unmanaged)-show)
			break
		}
		bw.printf("%s  not managed by gitaso: %s\n", indent, u)
	}
	rev := p.Revision
	bw.printf("%sApprove exactly these deletions with: POST /api/v1/approve {\"revision\":%q} (gitaso serve), or gitaso apply --approve-deletions\n", indent, rev)
}

func show(v any, r *Resource, path string) string {
	for _, u := range r.KnownAfterApply {
		if u == path {
			return KnownAfterApply
		}
	}
	if s, ok := v.(string); ok && manifest.IsSecretLabel(s) {
		return s
	}
	if _, ok := r.Sensitive[path]; ok {
		return r.sensitiveLabel(path) // never a value, whatever the body says
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// leaves calls fn for every scalar (and empty collection) of a document in
// key order.
func leaves(v any, path string, fn func(string, any)) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			fn(path, t)
			return
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			leaves(t[k], path+"/"+escapePointer(k), fn)
		}
	case []any:
		if len(t) == 0 {
			fn(path, t)
			return
		}
		for i, e := range t {
			leaves(e, path+"/"+strconv.Itoa(i), fn)
		}
	default:
		fn(path, v)
	}
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}

// sensitiveLabel is what a plan shows for the secret field at path: the
// Secret a substituted value came from, else Redacted.
func (r *Resource) sensitiveLabel(path string) string {
	if from, ok := r.Sensitive[path]; ok {
		return manifest.SecretLabel(from)
	}
	return Redacted
}
