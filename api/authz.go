package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/record"
)

// Rights per namespace (issue 29): every answer shows only what the caller
// may read, every action checks its right. The caller is the identity the
// authentication put in the request's context; the policy is
// Options.Policy's (none: access.AllowAll, every right for whoever passed
// authentication).

// CodeMissingRight: the caller lacks a right (403); the error names the
// right and the namespaces.
const CodeMissingRight = "missing_right"

// policy returns the policy in force.
func (s *server) policy() *access.Policy {
	if s.opts.Policy != nil {
		if p := s.opts.Policy(); p != nil {
			return p
		}
	}
	return access.AllowAll()
}

// scope returns where the caller of r has right.
func (s *server) scope(r *http.Request, right access.Right) access.Scope {
	return s.policy().Scope(access.IdentityFrom(r.Context()), right)
}

// refuse answers 403 missing_right naming the right and the namespaces
// (none: "any namespace") and records the refusal in the audit trail.
func (s *server) refuse(w http.ResponseWriter, r *http.Request, right access.Right, namespaces []string, ev record.AuditEvent) {
	id := access.IdentityFrom(r.Context())
	where := "in any namespace"
	switch {
	case len(namespaces) == 1 && namespaces[0] == "*":
		where = "in every namespace"
	case len(namespaces) == 1:
		where = "in namespace " + namespaces[0]
	case len(namespaces) > 1:
		where = "in namespaces " + strings.Join(namespaces, ", ")
	}
	msg := fmt.Sprintf("%s lacks the right %s %s", id, right, where)
	ev.Action = cmpOr(ev.Action, record.AuditReadDeny)
	ev.Outcome, ev.Right, ev.Namespaces = record.AuditRefused, string(right), namespaces
	ev.Detail = cmpOr(ev.Detail, r.Method+" "+r.URL.Path)
	s.opts.Audit.record(r, ev)
	s.writeJSON(w, http.StatusForbidden, ErrorBody{ErrorDetail{Code: CodeMissingRight, Message: msg, Right: string(right), Namespaces: namespaces}})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// readable answers 403 and returns false when the caller may read no
// namespace at all; else it returns the caller's read scope.
func (s *server) readable(w http.ResponseWriter, r *http.Request) (access.Scope, bool) {
	sc := s.scope(r, access.Read)
	if sc.None() {
		s.refuse(w, r, access.Read, nil, record.AuditEvent{})
		return sc, false
	}
	return sc, true
}

// readsNamespace answers 403 and returns false when the caller may not read
// namespace ns.
func (s *server) readsNamespace(w http.ResponseWriter, r *http.Request, ns string) bool {
	if s.scope(r, access.Read).Allows(ns) {
		return true
	}
	s.refuse(w, r, access.Read, []string{ns}, record.AuditEvent{})
	return false
}

// readsAll answers 403 and returns false unless the caller may read every
// namespace (answers that cannot be cut by namespace: /metrics).
func (s *server) readsAll(w http.ResponseWriter, r *http.Request) bool {
	if s.scope(r, access.Read).All() {
		return true
	}
	s.refuse(w, r, access.Read, []string{"*"}, record.AuditEvent{})
	return false
}

// keyNamespace is the namespace of a state key.
func keyNamespace(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

// KeysNamespaces returns the namespaces of state keys, sorted.
func KeysNamespaces(keys []string) []string {
	seen := map[string]bool{}
	for _, k := range keys {
		seen[keyNamespace(k)] = true
	}
	out := make([]string, 0, len(seen))
	for ns := range seen {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// runView cuts a run to what a caller of scope sc may read: the held keys
// of other namespaces are left out and, when any was, the hold's message
// and unmanaged resources (which may name them) are replaced by a sentence
// saying so. A run's counts, revision and error stay: they are the
// revision's (the repository's), not a namespace's.
func runView(run record.Run, sc access.Scope) record.Run {
	if run.Held == nil {
		return run
	}
	h := *run.Held
	h.Plan = run.Held.PlanDigest(run.Revision)
	if sc.All() {
		run.Held = &h
		return run
	}
	h.Keys = slices.DeleteFunc(slices.Clone(h.Keys), func(k string) bool { return !sc.Allows(keyNamespace(k)) })
	if len(h.Keys) < len(run.Held.Keys) {
		hidden := len(run.Held.Keys) - len(h.Keys)
		h.Message = fmt.Sprintf("%d held deletions in namespaces you may not read are not shown; %d are yours", hidden, len(h.Keys))
		h.Unmanaged = nil
		if run.Error == run.Held.Message {
			run.Error = h.Message
		}
	}
	run.Held = &h
	return run
}

// touchedView keeps the touched resources of readable namespaces.
func touchedView(ts []record.Touched, sc access.Scope) []record.Touched {
	if sc.All() {
		return ts
	}
	return slices.DeleteFunc(ts, func(t record.Touched) bool { return !sc.Allows(keyNamespace(t.Key)) })
}

// planView cuts a plan (JSON as the planner wrote it) to the namespaces of
// scope sc: its resources, deferred objects and units of other namespaces
// are left out, and so are their held deletions; every other field is kept
// as it is.
func planView(raw []byte, sc access.Scope) ([]byte, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("decode the stored plan: %w", err)
	}
	for _, list := range []string{"resources", "deferred", "units"} {
		b, ok := p[list]
		if !ok || string(b) == "null" {
			continue
		}
		var items []json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, fmt.Errorf("decode the stored plan's %s: %w", list, err)
		}
		kept := items[:0]
		for _, it := range items {
			var ns struct {
				Namespace string `json:"namespace"`
			}
			if err := json.Unmarshal(it, &ns); err != nil {
				return nil, fmt.Errorf("decode the stored plan's %s: %w", list, err)
			}
			if sc.Allows(ns.Namespace) {
				kept = append(kept, it)
			}
		}
		enc, err := json.Marshal(kept)
		if err != nil {
			return nil, err
		}
		p[list] = enc
	}
	if b, ok := p["held"]; ok && string(b) != "null" {
		var run record.Run
		if err := json.Unmarshal(b, &run.Held); err != nil {
			return nil, fmt.Errorf("decode the stored plan's hold: %w", err)
		}
		var rev string
		_ = json.Unmarshal(p["revision"], &rev)
		run.Revision = rev
		held, err := json.Marshal(runView(run, sc).Held)
		if err != nil {
			return nil, err
		}
		p["held"] = held
	}
	return json.Marshal(p)
}

// RightsOf returns the rights an identity has in each namespace of
// namespaces and in "*" (every namespace), for a page that shows which
// buttons work.
func RightsOf(p *access.Policy, id access.Identity, namespaces []string) map[string][]access.Right {
	out := map[string][]access.Right{}
	for _, r := range access.Rights {
		if p.Scope(id, r).All() {
			out["*"] = append(out["*"], r)
		}
	}
	for _, ns := range namespaces {
		if rs := p.Rights(id, ns); len(rs) > 0 {
			out[ns] = rs
		}
	}
	return out
}
