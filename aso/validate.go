package aso

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gitaso/gitaso/internal/diag"
)

// Validate checks a whole object (apiVersion, kind, metadata, spec) against
// the kind's schema before anything is sent, the way ASO's CRD schema and
// webhooks would, and reports every problem: unknown fields (with the
// correctly cased name when only the case is wrong, since a real API server
// silently drops such keys), wrong value types, enum values, missing required
// fields, both forms of a *FromConfig pair, references with both armId and
// name, and owners of the wrong kind. Each error has Field set (e.g.
// "spec.roleDefinitionReference.armId"); the caller fills File, Line and
// Object. The list is sorted by field path.
func Validate(k *Kind, obj map[string]any) diag.List {
	if !k.Generated {
		return nil
	}
	td, err := k.spec()
	if err != nil {
		return diag.List{{Field: "spec", Msg: err.Error()}}
	}
	v := validator{k: k}
	raw, ok := obj["spec"]
	root := vpath{name: "spec", idx: -1}
	switch spec := raw.(type) {
	case map[string]any:
		v.object(td, spec, &root, true)
	case nil:
		if !ok || raw == nil {
			v.object(td, map[string]any{}, &root, true)
		}
	default:
		v.add(&root, "expected an object, got %s", typeName(raw))
	}
	sort.SliceStable(v.errs, func(i, j int) bool { return v.errs[i].Field < v.errs[j].Field })
	return v.errs
}

type validator struct {
	k    *Kind
	errs diag.List
}

func (v *validator) add(p *vpath, format string, a ...any) {
	v.errs = append(v.errs, &diag.Error{Field: p.String(), Msg: fmt.Sprintf(format, a...)})
}

func (v *validator) object(td *typeDef, m map[string]any, p *vpath, root bool) {
	for _, key := range sortedKeys(m) {
		f := td.byName[key]
		fp := vpath{parent: p, name: key, idx: -1}
		if f == nil {
			v.add(&fp, "%s", unknownFieldMsg(key, td))
			continue
		}
		if m[key] == nil {
			continue
		}
		v.value(f, 0, m[key], &fp)
	}
	for _, f := range td.fields {
		if !f.req {
			continue
		}
		if val, ok := m[f.name]; ok && val != nil {
			continue
		}
		if root && f.x == "owner" && (v.k.Scope == ScopeLocation || v.k.Scope == ScopeTenant) {
			continue
		}
		fp := vpath{parent: p, name: f.name, idx: -1}
		v.add(&fp, "required field is missing")
	}
	// Both forms of a *FromConfig pair.
	var pairs map[string][]string
	for _, f := range td.fields {
		if f.pair == "" {
			continue
		}
		if val, ok := m[f.name]; ok && val != nil {
			if pairs == nil {
				pairs = map[string][]string{}
			}
			pairs[f.pair] = append(pairs[f.pair], f.name)
		}
	}
	for _, names := range pairs {
		if len(names) > 1 {
			sort.Strings(names)
			fp := vpath{parent: p, name: names[0], idx: -1}
			v.add(&fp, "set only one of %s", strings.Join(names, " and "))
		}
	}
	if td.oneOf {
		n := 0
		var names []string
		for _, f := range td.fields {
			if f.a != nil {
				names = append(names, f.name)
				if val, ok := m[f.name]; ok && val != nil {
					n++
				}
			}
		}
		if n != 1 && len(names) > 0 {
			v.add(p, "set exactly one of %s (%d set)", strings.Join(names, ", "), n)
		}
	}
}

func unknownFieldMsg(key string, td *typeDef) string {
	if f := td.lower[strings.ToLower(key)]; f != nil {
		return fmt.Sprintf("unknown field %q: did you mean %q? (field names are case-sensitive; the API server would drop %q silently)", key, f.name, key)
	}
	names := make([]string, len(td.fields))
	for i, f := range td.fields {
		names[i] = f.name
	}
	if s := nearest(key, names, 3); len(s) > 0 {
		return fmt.Sprintf("unknown field %q: did you mean %s?", key, quoteJoin(s))
	}
	if f := td.byName["reference"]; f != nil && (key == "armId" || key == "group" || key == "kind" || key == "name") {
		return fmt.Sprintf("unknown field %q: the reference goes one level down, under \"reference\"", key)
	}
	return fmt.Sprintf("unknown field %q", key)
}

func quoteJoin(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, " or ")
}

func (v *validator) value(f *field, d int, raw any, p *vpath) {
	if d < len(f.coll) {
		switch f.coll[d] {
		case collList:
			l, ok := raw.([]any)
			if !ok {
				v.add(p, "expected a list, got %s", typeName(raw))
				return
			}
			for i, item := range l {
				ip := vpath{parent: p, idx: i}
				if item == nil {
					v.add(&ip, "null list item")
					continue
				}
				v.value(f, d+1, item, &ip)
			}
		default:
			mm, ok := raw.(map[string]any)
			if !ok {
				v.add(p, "expected a map, got %s", typeName(raw))
				return
			}
			for _, key := range sortedKeys(mm) {
				if mm[key] == nil {
					continue
				}
				kp := vpath{parent: p, name: key, idx: -1, key: true}
				v.value(f, d+1, mm[key], &kp)
			}
		}
		return
	}
	switch f.t {
	case ftString:
		if _, ok := raw.(string); !ok {
			v.add(p, "expected a string, got %s", typeName(raw))
		}
	case ftBool:
		if _, ok := raw.(bool); !ok {
			v.add(p, "expected true or false, got %s", typeName(raw))
		}
	case ftInt:
		switch x := raw.(type) {
		case int64, int:
		case float64:
			if x != math.Trunc(x) {
				v.add(p, "expected an integer, got %v", x)
			}
		default:
			v.add(p, "expected an integer, got %s", typeName(raw))
		}
	case ftNumber:
		switch raw.(type) {
		case int64, int, float64:
		default:
			v.add(p, "expected a number, got %s", typeName(raw))
		}
	case ftObject:
		m, ok := raw.(map[string]any)
		if !ok {
			v.add(p, "expected an object, got %s", typeName(raw))
			return
		}
		if f.ref != nil {
			v.object(f.ref, m, p, false)
		}
	case ftRef, ftWellKnownRef, ftKnownRef, ftArbitraryOwnerRef:
		v.reference(f, raw, p)
	case ftSecretRef, ftConfigMapRef, ftSecretDest, ftConfigMapDest:
		v.keyed(raw, p, []string{"key", "name"}, true)
	case ftSecretMapRef:
		v.keyed(raw, p, []string{"name"}, false)
	case ftDestExpr:
		m, ok := raw.(map[string]any)
		if !ok {
			v.add(p, "expected {name, key, value}, got %s", typeName(raw))
			return
		}
		v.closed(m, p, []string{"key", "name", "value"})
		for _, req := range []string{"name", "value"} {
			if s, _ := m[req].(string); s == "" {
				fp := vpath{parent: p, name: req, idx: -1}
				v.add(&fp, "required field is missing")
			}
		}
		// The expression compiles against the kind's self, as ASO's webhook
		// compiles it (cel.go).
		if s, _ := m["value"].(string); s != "" {
			if err := CheckExpression(v.k, s); err != nil {
				fp := vpath{parent: p, name: "value", idx: -1}
				v.add(&fp, "%v", err)
			}
		}
	}
	if len(f.enum) > 0 {
		v.enum(f, raw, p)
	}
}

func (v *validator) enum(f *field, raw any, p *vpath) {
	got := scalarString(raw)
	if _, isStr := raw.(string); !isStr && len(f.enum) > 0 {
		if _, enumStr := f.enum[0].(string); enumStr {
			switch raw.(type) {
			case int64, float64, bool:
				for _, e := range f.enum {
					if scalarString(e) == got {
						v.add(p, "expected a string, got %s (quote it: \"%s\")", typeName(raw), got)
						return
					}
				}
			}
		}
	}
	var want []string
	for _, e := range f.enum {
		s := scalarString(e)
		if s == got {
			return
		}
		want = append(want, s)
	}
	for _, s := range want {
		if strings.EqualFold(s, got) {
			v.add(p, "unsupported value %q: did you mean %q? (enum values are case-sensitive)", got, s)
			return
		}
	}
	v.add(p, "unsupported value %q: must be one of %s", got, quoteJoin(want))
}

func scalarString(x any) string {
	switch s := x.(type) {
	case string:
		return s
	case float64:
		return strconv.FormatFloat(s, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(s, 10)
	case int:
		return strconv.Itoa(s)
	}
	return fmt.Sprint(x)
}

// closed reports keys of m outside allowed (suggesting the right case).
func (v *validator) closed(m map[string]any, p *vpath, allowed []string) {
	for _, key := range sortedKeys(m) {
		ok := false
		for _, a := range allowed {
			if key == a {
				ok = true
				break
			}
		}
		if ok {
			continue
		}
		fp := vpath{parent: p, name: key, idx: -1}
		msg := fmt.Sprintf("unknown field %q", key)
		for _, a := range allowed {
			if strings.EqualFold(a, key) {
				msg = fmt.Sprintf("unknown field %q: did you mean %q? (field names are case-sensitive; the API server would drop %q silently)", key, a, key)
				break
			}
		}
		if !strings.Contains(msg, "did you mean") {
			msg += " (allowed: " + strings.Join(allowed, ", ") + ")"
		}
		v.add(&fp, "%s", msg)
	}
}

func (v *validator) keyed(raw any, p *vpath, allowed []string, needKey bool) {
	m, ok := raw.(map[string]any)
	if !ok {
		v.add(p, "expected {%s}, got %s", strings.Join(allowed, ", "), typeName(raw))
		return
	}
	v.closed(m, p, allowed)
	for _, req := range allowed {
		if req == "key" && !needKey {
			continue
		}
		if val, ok := m[req]; !ok || val == nil {
			fp := vpath{parent: p, name: req, idx: -1}
			v.add(&fp, "required field is missing")
		} else if _, ok := val.(string); !ok {
			fp := vpath{parent: p, name: req, idx: -1}
			v.add(&fp, "expected a string, got %s", typeName(val))
		}
	}
}

func (v *validator) reference(f *field, raw any, p *vpath) {
	m, ok := raw.(map[string]any)
	if !ok {
		v.add(p, "expected a reference, got %s", typeName(raw))
		return
	}
	var allowed []string
	switch f.t {
	case ftKnownRef:
		allowed = []string{"armId", "name"}
		// ASO's KnownResourceReference has no group/kind; the owner kind is fixed.
		g, _ := m["group"].(string)
		kd, _ := m["kind"].(string)
		if (g != "" || kd != "") && f.ownerKind != "" && g+"/"+kd != f.ownerKind {
			fp := vpath{parent: p, name: "kind", idx: -1}
			v.add(&fp, "the owner of a %s must be a %s, not %s/%s", v.k.Kind, f.ownerKind, g, kd)
		}
		allowed = append(allowed, "group", "kind") // tolerated (ASO ignores them); wrong values reported above
	case ftWellKnownRef:
		allowed = []string{"armId", "group", "kind", "name", "wellKnownName"}
	default:
		allowed = []string{"armId", "group", "kind", "name"}
	}
	sort.Strings(allowed)
	v.closed(m, p, allowed)
	for _, key := range allowed {
		if val, ok := m[key]; ok && val != nil {
			if _, ok := val.(string); !ok {
				fp := vpath{parent: p, name: key, idx: -1}
				v.add(&fp, "expected a string, got %s", typeName(val))
			}
		}
	}
	armID, _ := m["armId"].(string)
	name, _ := m["name"].(string)
	wk, _ := m["wellKnownName"].(string)
	forms := 0
	for _, s := range []string{armID, name, wk} {
		if s != "" {
			forms++
		}
	}
	switch {
	case forms > 1:
		var set []string
		if armID != "" {
			set = append(set, "armId")
		}
		if name != "" {
			set = append(set, "name")
		}
		if wk != "" {
			set = append(set, "wellKnownName")
		}
		v.add(p, "set only one of %s", strings.Join(set, " and "))
	case forms == 0:
		if f.t == ftWellKnownRef {
			v.add(p, "set armId, wellKnownName, or group, kind and name")
		} else if f.t == ftKnownRef {
			v.add(p, "set name or armId")
		} else {
			v.add(p, "set armId, or group, kind and name")
		}
	case armID != "" && !strings.HasPrefix(armID, "/"):
		fp := vpath{parent: p, name: "armId", idx: -1}
		v.add(&fp, "%q is not an ARM ID (it must start with /subscriptions/ or /providers/)", armID)
	case wk != "" && f.t == ftWellKnownRef:
		v.checkWellKnownRole(wk, p) // RoleAssignment: one of Azure's built-in roles (roles.go)
	case name != "" && f.t != ftKnownRef:
		g, _ := m["group"].(string)
		kd, _ := m["kind"].(string)
		if g == "" || kd == "" {
			v.add(p, "a reference by name needs group and kind")
		} else if IsASOGroup(g) && !kindExists(g, kd) {
			fp := vpath{parent: p, name: "kind", idx: -1}
			v.add(&fp, "no ASO kind %s in group %s", kd, g)
		}
	}
}

func kindExists(group, kind string) bool {
	for _, k := range Kinds() {
		if k.Group == group && k.Kind == kind {
			return true
		}
	}
	return false
}

// Suggest returns up to three known "group/version Kind" strings nearest to an
// unknown group/version/kind: other versions of the same kind, the same kind
// with corrected case or group, or kinds with a similar name.
func Suggest(group, version, kind string) []string {
	type cand struct {
		k     *Kind
		score int
	}
	var cands []cand
	for _, k := range Kinds() {
		s := math.MaxInt
		switch {
		case k.Group == group && k.Kind == kind:
			s = versionDistance(k.Version, version)
		case strings.EqualFold(k.Group, group) && strings.EqualFold(k.Kind, kind):
			s = 1_000_000 + versionDistance(k.Version, version)
		case strings.EqualFold(k.Kind, kind):
			s = 2_000_000 + 100_000*levenshtein(strings.ToLower(k.Group), strings.ToLower(group)) + versionDistance(k.Version, version)
		default:
			if d := levenshtein(strings.ToLower(k.Kind), strings.ToLower(kind)); d <= 3 || (len(kind) >= 4 && strings.Contains(strings.ToLower(k.Kind), strings.ToLower(kind))) {
				s = 100_000_000 + 10_000_000*d + 100_000*levenshtein(k.Group, group) + versionDistance(k.Version, version)
			}
		}
		if s != math.MaxInt {
			cands = append(cands, cand{k, s})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score < cands[j].score })
	var out []string
	seen := map[string]bool{}
	for _, c := range cands {
		s := c.k.Group + "/" + c.k.Version + " " + c.k.Kind
		if seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
		if len(out) == 3 {
			break
		}
	}
	return out
}

// versionDistance prefers the exact version, then the same spelling with
// another prefix (v1api20230101 vs v20230101), then the closest date, newer first.
func versionDistance(have, want string) int {
	if have == want {
		return 0
	}
	hd, wd := versionDate(have), versionDate(want)
	if hd != "" && hd == wd {
		return 1
	}
	if hd == "" || wd == "" {
		return 50_000 + levenshtein(have, want)
	}
	months := func(s string) int {
		y, _ := strconv.Atoi(s[:4])
		m, _ := strconv.Atoi(s[4:6])
		return y*12 + m
	}
	d := months(hd) - months(wd)
	if d < 0 {
		d = -d*2 + 1 // older versions after newer ones at the same distance
	}
	return min(2+d, 99_999) // never outweighs a group or kind mismatch
}

func versionDate(v string) string {
	v = strings.TrimPrefix(strings.TrimPrefix(v, "v1api"), "v")
	if len(v) >= 8 {
		if _, err := strconv.Atoi(v[:8]); err == nil {
			return v
		}
	}
	return ""
}

// nearest returns names within maxDist edits of s, closest first.
func nearest(s string, names []string, maxDist int) []string {
	type nd struct {
		n string
		d int
	}
	var c []nd
	ls := strings.ToLower(s)
	for _, n := range names {
		if d := levenshtein(ls, strings.ToLower(n)); d <= maxDist && d < len(s) {
			c = append(c, nd{n, d})
		}
	}
	sort.SliceStable(c, func(i, j int) bool { return c[i].d < c[j].d })
	var out []string
	for i := 0; i < len(c) && i < 3; i++ {
		out = append(out, c[i].n)
	}
	return out
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// vpath is a field path for validation: a linked list, so that an error can
// keep its own path while the walk goes on.
type vpath struct {
	parent *vpath
	name   string
	idx    int // list index, -1 for a field name
	key    bool
}

func (p *vpath) String() string {
	if p == nil {
		return ""
	}
	var parts []*vpath
	for q := p; q != nil; q = q.parent {
		parts = append(parts, q)
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		q := parts[i]
		switch {
		case q.idx >= 0:
			fmt.Fprintf(&b, "[%d]", q.idx)
		case q.key:
			fmt.Fprintf(&b, "[%s]", q.name)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(q.name)
		}
	}
	return b.String()
}

// LooksLikeASO reports whether a group that is not an ASO group (*.azure.com)
// is probably meant to be one: a typo of an ASO group ("resources.azure.cm")
// or ASO v1's azure.microsoft.com. Callers report such objects as errors
// (with Suggest) instead of ignoring them as foreign kinds.
func LooksLikeASO(group string) bool {
	if IsASOGroup(group) || group == "" {
		return false
	}
	lg := strings.ToLower(group)
	if strings.Contains(lg, "azure") {
		return true
	}
	seen := map[string]bool{}
	for _, k := range Kinds() {
		if seen[k.Group] {
			continue
		}
		seen[k.Group] = true
		if levenshtein(lg, k.Group) <= 3 {
			return true
		}
	}
	return false
}
