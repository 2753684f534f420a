package access

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// A policy file grants rights per namespace, in the model of Argo CD's
// RBAC (policy.csv): one statement a line, fields separated by commas,
// blank lines and lines starting with # ignored.
//
//	# every signed-in caller may read every namespace
//	default, role:readonly
//	# the role team-a may read, sync and approve in namespace team-a
//	p, role:team-a, namespaces, sync,    team-a, allow
//	p, role:team-a, namespaces, approve, team-a, allow
//	# members of the group team-a have the role
//	g, group:team-a, role:team-a
//	# the platform admins may do everything everywhere
//	g, group:platform-admins, role:admin
//	# the token ci may sync everywhere, but never in prod-*
//	p, token:ci, namespaces, sync, *,      allow
//	p, token:ci, namespaces, *,    prod-*, deny
//
// p, SUBJECT, RESOURCE, RIGHT, NAMESPACE[, allow|deny] grants (or denies)
// RIGHT on NAMESPACE: RESOURCE is "namespaces" (or "*"), RIGHT one of read,
// sync, approve, admin or "*", NAMESPACE a name or a glob (path.Match: "*",
// "team-*"). The effect is allow when left out.
//
// g, SUBJECT, role:NAME gives SUBJECT the role's grants. default, role:NAME
// gives every authenticated caller (a user, a token) the role's grants; an
// anonymous caller has only what is granted to the subject "anonymous".
//
// A SUBJECT is role:NAME, group:NAME (a group claim's value), user:NAME
// (the user's name or OIDC subject), token:NAME (a named bearer token),
// anonymous, or a bare NAME, which matches a user, a group or a token of
// that name (Argo CD's bare subjects).
//
// Two roles are built in: role:readonly (read on every namespace) and
// role:admin (admin on every namespace).
//
// Rights imply one another: admin implies every right, sync and approve
// each imply read. A deny wins over every allow, the default role's
// included (Argo CD lets the default role's grants stand): a deny of a
// right also denies each right that implies it, so a deny of read on a
// namespace hides it entirely.

// The resources a p line may name.
const (
	resourceNamespaces = "namespaces"
	anyValue           = "*"
)

// Built-in roles.
const (
	RoleReadonly = "role:readonly"
	RoleAdmin    = "role:admin"
)

// ErrPolicy is returned (in a *PolicyError) for a policy file that cannot be
// parsed.
var ErrPolicy = errors.New("invalid policy")

// PolicyError names the file and line of a statement that cannot be parsed.
type PolicyError struct {
	File string
	Line int
	Msg  string
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("%s:%d: %v: %s", e.File, e.Line, ErrPolicy, e.Msg)
}

func (e *PolicyError) Unwrap() error { return ErrPolicy }

// rule is one p line.
type rule struct {
	subject string
	right   Right  // "" for every right
	object  string // a namespace or a glob
	deny    bool
	line    int
}

// Policy is a parsed policy file. The zero value and nil grant nothing; use
// AllowAll for a daemon without a policy.
type Policy struct {
	file     string
	def      string // the default role, "" for none
	rules    []rule
	bindings map[string][]string // subject → roles
	all      bool                // AllowAll: every right everywhere

	// scopes keeps the scopes computed (identity and right → Scope): a
	// policy never changes once parsed, and each request asks.
	scopes  sync.Map
	nScopes atomic.Int64
}

// maxCachedScopes bounds Policy.scopes; beyond, it starts over.
const maxCachedScopes = 10000

// AllowAll returns the policy of a daemon without a policy file: every
// caller that passed authentication may do everything (gitaso's behaviour
// before policies).
func AllowAll() *Policy { return &Policy{all: true, file: "(no policy)"} }

// File is the file the policy was read from.
func (p *Policy) File() string { return p.file }

// Default is the default role ("" for none).
func (p *Policy) Default() string { return p.def }

// ParsePolicy parses a policy file's content; file names it in errors.
func ParsePolicy(file string, data []byte) (*Policy, error) {
	p := &Policy{file: file, bindings: map[string][]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff")
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := p.statement(line, n); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &PolicyError{File: file, Line: n + 1, Msg: err.Error()}
	}
	if p.def != "" && !p.roleKnown(p.def) {
		return nil, &PolicyError{File: file, Line: p.defLine(data), Msg: fmt.Sprintf("default role %s has no p line and is not built in (%s, %s)", p.def, RoleReadonly, RoleAdmin)}
	}
	return p, nil
}

// defLine finds the line of the default statement (for its error).
func (p *Policy) defLine(data []byte) int {
	for i, l := range strings.Split(string(data), "\n") {
		if f := splitFields(l); len(f) > 0 && f[0] == "default" {
			return i + 1
		}
	}
	return 0
}

func (p *Policy) roleKnown(role string) bool {
	if role == RoleReadonly || role == RoleAdmin {
		return true
	}
	return slices.ContainsFunc(p.rules, func(r rule) bool { return r.subject == role })
}

func splitFields(line string) []string {
	f := strings.Split(line, ",")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	return f
}

func (p *Policy) statement(line string, n int) error {
	f := splitFields(line)
	fail := func(format string, a ...any) error {
		return &PolicyError{File: p.file, Line: n, Msg: fmt.Sprintf(format, a...)}
	}
	switch f[0] {
	case "p":
		if len(f) != 5 && len(f) != 6 {
			return fail("a p line has 5 or 6 fields (p, subject, namespaces, right, namespace[, allow|deny]), not %d", len(f))
		}
		r := rule{subject: f[1], object: f[4], line: n}
		if err := checkSubject(f[1]); err != nil {
			return fail("subject %q: %v", f[1], err)
		}
		if f[2] != resourceNamespaces && f[2] != anyValue {
			return fail("resource %q: want %q or %q", f[2], resourceNamespaces, anyValue)
		}
		if f[3] != anyValue {
			r.right = Right(f[3])
			if !slices.Contains(Rights, r.right) {
				return fail("right %q: want read, sync, approve, admin or *", f[3])
			}
		}
		if err := checkObject(f[4]); err != nil {
			return fail("namespace %q: %v", f[4], err)
		}
		if len(f) == 6 {
			switch f[5] {
			case "allow":
			case "deny":
				r.deny = true
			default:
				return fail("effect %q: want allow or deny", f[5])
			}
		}
		p.rules = append(p.rules, r)
	case "g":
		if len(f) != 3 {
			return fail("a g line has 3 fields (g, subject, role:NAME), not %d", len(f))
		}
		if err := checkSubject(f[1]); err != nil {
			return fail("subject %q: %v", f[1], err)
		}
		if strings.HasPrefix(f[1], "role:") {
			return fail("subject %q: roles are not given to roles; give %s to groups, users or tokens", f[1], f[2])
		}
		if err := checkRole(f[2]); err != nil {
			return fail("role %q: %v", f[2], err)
		}
		if !slices.Contains(p.bindings[f[1]], f[2]) {
			p.bindings[f[1]] = append(p.bindings[f[1]], f[2])
		}
	case "default", "policy.default":
		if len(f) != 2 {
			return fail("a default line has 2 fields (default, role:NAME), not %d", len(f))
		}
		if p.def != "" {
			return fail("a second default role (%s; the first is %s)", f[1], p.def)
		}
		if f[1] == "" {
			return nil // no default role
		}
		if err := checkRole(f[1]); err != nil {
			return fail("default role %q: %v", f[1], err)
		}
		p.def = f[1]
	default:
		return fail("statement %q: want p (a grant), g (a role for a subject) or default (the default role)", f[0])
	}
	return nil
}

var subjectKinds = []string{"role:", "group:", "user:", "token:"}

func checkSubject(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if strings.ContainsAny(s, "\"\t\x00") {
		return errors.New("quotes, tabs and NUL are not allowed")
	}
	if s == anyValue {
		return errors.New("a subject is not a glob; use default for every caller")
	}
	for _, k := range subjectKinds {
		if rest, ok := strings.CutPrefix(s, k); ok && rest == "" {
			return fmt.Errorf("%s without a name", k)
		}
	}
	return nil
}

func checkRole(s string) error {
	if !strings.HasPrefix(s, "role:") || len(s) == len("role:") {
		return errors.New("want role:NAME")
	}
	return checkSubject(s)
}

func checkObject(s string) error {
	if s == "" {
		return errors.New("empty; use * for every namespace")
	}
	if strings.ContainsAny(s, "/\\\t\x00\"") {
		return errors.New("a namespace has no slash, quote, tab or NUL")
	}
	if _, err := path.Match(s, ""); err != nil {
		return fmt.Errorf("bad glob: %w", err)
	}
	return nil
}

// subjects are the policy subjects an identity is.
func subjects(id Identity) []string {
	var out []string
	switch id.Kind {
	case "", Anonymous:
		return []string{"anonymous"}
	case User:
		for _, n := range []string{id.Name, id.Subject} {
			if n != "" {
				out = append(out, "user:"+n, n)
			}
		}
		for _, g := range id.Groups {
			if g != "" {
				out = append(out, "group:"+g, g)
			}
		}
	case Token:
		if id.Subject != "" {
			out = append(out, "token:"+id.Subject, id.Subject)
		}
		for _, g := range id.Groups {
			if g != "" {
				out = append(out, "group:"+g, g)
			}
		}
	case Forge:
		if id.Subject != "" {
			out = append(out, "forge:"+id.Subject)
		}
	}
	return out
}

// Roles returns the roles of an identity: those the g lines give its
// subjects and, for an authenticated caller, the default role; sorted.
func (p *Policy) Roles(id Identity) []string {
	if p == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, s := range subjects(id) {
		for _, r := range p.bindings[s] {
			seen[r] = true
		}
	}
	if p.def != "" && id.Kind != Anonymous && id.Kind != "" {
		seen[p.def] = true
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// rulesFor returns the rules that apply to an identity: those of its
// subjects and of its roles, the built-in roles' included.
func (p *Policy) rulesFor(id Identity) []rule {
	who := map[string]bool{}
	for _, s := range subjects(id) {
		who[s] = true
	}
	var out []rule
	for _, role := range p.Roles(id) {
		who[role] = true
		switch role {
		case RoleReadonly:
			out = append(out, rule{subject: role, right: Read, object: anyValue})
		case RoleAdmin:
			out = append(out, rule{subject: role, right: Admin, object: anyValue})
		}
	}
	for _, r := range p.rules {
		if who[r.subject] {
			out = append(out, r)
		}
	}
	return out
}

// implies reports whether holding right have grants right want.
func implies(have, want Right) bool {
	switch {
	case have == "" || have == want || have == Admin:
		return true
	case want == Read:
		return have == Sync || have == Approve
	}
	return false
}

// Scope returns where an identity has right r.
func (p *Policy) Scope(id Identity, r Right) Scope {
	if p == nil {
		return Scope{right: r}
	}
	if p.all {
		return Scope{right: r, allow: []string{anyValue}, all: true}
	}
	key := string(r) + "\x00" + string(id.Kind) + "\x00" + id.Subject + "\x00" + id.Name + "\x00" + strings.Join(id.Groups, "\x00")
	if s, ok := p.scopes.Load(key); ok {
		return s.(Scope)
	}
	s := p.scope(id, r)
	if p.nScopes.Add(1) > maxCachedScopes {
		p.scopes.Clear()
		p.nScopes.Store(1)
	}
	p.scopes.Store(key, s)
	return s
}

func (p *Policy) scope(id Identity, r Right) Scope {
	s := Scope{right: r}
	for _, ru := range p.rulesFor(id) {
		switch {
		case ru.deny && (ru.right == "" || implies(r, ru.right)):
			// a deny of ru.right denies r when r implies it (deny read
			// denies sync too)
			s.deny = append(s.deny, ru.object)
		case !ru.deny && implies(ru.right, r):
			s.allow = append(s.allow, ru.object)
		}
	}
	s.allow, s.deny = uniqSorted(s.allow), uniqSorted(s.deny)
	s.all = slices.Contains(s.allow, anyValue) && len(s.deny) == 0
	return s
}

// Can reports whether an identity has right r in namespace ns.
func (p *Policy) Can(id Identity, r Right, ns string) bool { return p.Scope(id, r).Allows(ns) }

// Rights returns the rights an identity has in namespace ns, in order.
func (p *Policy) Rights(id Identity, ns string) []Right {
	var out []Right
	for _, r := range Rights {
		if p.Can(id, r, ns) {
			out = append(out, r)
		}
	}
	return out
}

func uniqSorted(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}

// Scope is the set of namespaces where one identity has one right.
type Scope struct {
	right       Right
	allow, deny []string // namespaces and globs, sorted
	all         bool     // every namespace
}

// All reports whether the scope is every namespace.
func (s Scope) All() bool { return s.all }

// None reports whether the scope has no namespace at all.
func (s Scope) None() bool { return len(s.allow) == 0 }

// Right is the right the scope is of.
func (s Scope) Right() Right { return s.right }

// Allows reports whether namespace ns is in the scope.
func (s Scope) Allows(ns string) bool {
	if s.all {
		return true
	}
	return matchAny(s.allow, ns) && !matchAny(s.deny, ns)
}

// Key is a short string equal for two scopes of the same namespaces (a
// cache key): "*" for every namespace.
func (s Scope) Key() string {
	if s.all {
		return anyValue
	}
	return strings.Join(s.allow, ",") + "\x00" + strings.Join(s.deny, ",")
}

// String describes the scope for a message.
func (s Scope) String() string {
	switch {
	case s.all:
		return "every namespace"
	case s.None():
		return "no namespace"
	case len(s.deny) == 0:
		return strings.Join(s.allow, ", ")
	}
	return strings.Join(s.allow, ", ") + " except " + strings.Join(s.deny, ", ")
}

func matchAny(globs []string, ns string) bool {
	for _, g := range globs {
		if g == anyValue || g == ns {
			return true
		}
		if strings.ContainsAny(g, "*?[") {
			if ok, _ := path.Match(g, ns); ok {
				return true
			}
		}
	}
	return false
}
