package aso

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gitaso/gitaso/internal/diag"
)

// ErrUnknown is returned by a Resolver when a value exists only after another
// resource has been applied ("known after apply").
var ErrUnknown = errors.New("known after apply")

// UnknownValue is written into a body in place of a value that is known only
// after apply; Body.Unknown lists where.
const UnknownValue = "(known after apply)"

// Resolver supplies what a spec refers to outside itself. Every call is for the
// namespace of the resource being converted.
type Resolver interface {
	// ResourceID returns the ARM ID of the ASO resource group/kind/name in the
	// same namespace (a reference by name).
	ResourceID(group, kind, name string) (string, error)
	// Secret returns one key of a Secret (SecretReference).
	Secret(name, key string) (string, error)
	// SecretMap returns a whole Secret (SecretMapReference).
	SecretMap(name string) (map[string]string, error)
	// ConfigMap returns one key of a ConfigMap (*FromConfig). It may return
	// ErrUnknown when the value is exported by a resource not yet applied.
	ConfigMap(name, key string) (string, error)
}

// Body is a converted ARM request body.
type Body struct {
	JSON    []byte   // compact JSON exactly as ASO's Go encoding/json sends it (field order, HTML escaping)
	Secrets []string // JSON pointers of values that came from secrets (renderers redact them)
	Unknown []string // JSON pointers holding UnknownValue
}

// Convert turns a spec into the ARM PUT body ASO sends for it. azureName is the
// resolved name (see AzureName). Errors about the spec are *diag.Error with
// Field set (e.g. "spec.sku.name"); the caller fills in file, line and object.
// Resolver errors are wrapped in them.
func Convert(k *Kind, spec map[string]any, azureName string, r Resolver) (*Body, error) {
	td, err := k.spec()
	if err != nil {
		return nil, err
	}
	if td.arm == nil {
		return nil, fmt.Errorf("%s: spec type %s has no ARM type", k, td.name)
	}
	if r == nil {
		r = noResolver{}
	}
	c := converter{k: k, r: r, spec: spec}
	obj, err := c.object(td, spec, newPath("spec"))
	if err != nil {
		return nil, err
	}
	if len(td.namePtr) > 0 {
		if err := setPointer(obj, td.namePtr, azureName, true); err != nil {
			return nil, fmt.Errorf("%s: name: %w", k, err)
		}
	}
	for _, p := range td.pushName {
		_ = setPointer(obj, p, azureName, false) // only into the variant that is set
	}
	e := encoder{buf: make([]byte, 0, 256)}
	if err := e.value(obj); err != nil {
		return nil, &diag.Error{Field: "spec", Msg: "encode ARM body", Err: err}
	}
	return &Body{JSON: e.buf, Secrets: e.secrets, Unknown: e.unknown}, nil
}

// armObj is a value of an ARM payload struct: one slot per field, nil = unset.
type armObj struct {
	t *armType
	v []any
}

func newObj(t *armType) *armObj { return &armObj{t: t, v: make([]any, len(t.fields))} }

// markers for values the encoder must report.
type (
	secretStr  string
	secretMap  map[string]string
	unknownVal struct{}
)

// fpath is the spec field path being walked: a stack pushed and popped as the
// walk descends, rendered only for errors, so that walking allocates nothing.
type fpath struct{ els []pathEl }

type pathEl struct {
	name string
	idx  int // list index, -1 for a field name or map key
	key  bool
}

func newPath(root string) *fpath {
	p := &fpath{els: make([]pathEl, 0, 8)} // deeper paths grow it
	p.push(root)
	return p
}

func (p *fpath) push(name string)   { p.els = append(p.els, pathEl{name: name, idx: -1}) }
func (p *fpath) pushIdx(i int)      { p.els = append(p.els, pathEl{idx: i}) }
func (p *fpath) pushKey(key string) { p.els = append(p.els, pathEl{name: key, idx: -1, key: true}) }
func (p *fpath) pop()               { p.els = p.els[:len(p.els)-1] }

func (p *fpath) String() string {
	var b strings.Builder
	for _, q := range p.els {
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

type converter struct {
	k    *Kind
	r    Resolver
	spec map[string]any // the whole spec (a RoleAssignment's wellKnownName needs its owner)
}

func (c *converter) errf(p *fpath, format string, a ...any) error {
	return &diag.Error{Field: p.String(), Msg: fmt.Sprintf(format, a...)}
}

func (c *converter) object(td *typeDef, m map[string]any, p *fpath) (*armObj, error) {
	if td.arm == nil {
		return nil, c.errf(p, "type %s has no ARM form", td.name)
	}
	o := newObj(td.arm)
	for _, f := range td.order {
		raw, ok := m[f.name]
		if !ok || raw == nil || f.x != "" || f.aIdx == nil {
			continue
		}
		parent := o
		last := len(f.aIdx) - 1
		for _, i := range f.aIdx[:last] {
			child, _ := parent.v[i].(*armObj)
			if child == nil {
				child = newObj(parent.t.fields[i].child)
				parent.v[i] = child
			}
			parent = child
		}
		li := f.aIdx[last]
		p.push(f.name)
		v, err := c.value(f, &parent.t.fields[li], 0, raw, p)
		if err != nil {
			return nil, err
		}
		p.pop()
		if v != nil {
			parent.v[li] = v
		}
	}
	if td.oneOf {
		if err := checkOneOf(o, p); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func checkOneOf(o *armObj, p *fpath) error {
	for _, i := range o.t.oneOf {
		if o.v[i] != nil {
			return nil
		}
	}
	names := make([]string, len(o.t.oneOf))
	for j, i := range o.t.oneOf {
		names[j] = o.t.fields[i].json
	}
	return &diag.Error{Field: p.String(), Msg: "one of " + strings.Join(names, ", ") + " must be set"}
}

// setPointer writes a string at toks below o, creating objects when create is set.
func setPointer(o *armObj, toks []string, v string, create bool) error {
	cur := o
	for i, tok := range toks {
		j, ok := cur.t.idx[tok]
		if !ok {
			return fmt.Errorf("no ARM field %q in %s", tok, cur.t.name)
		}
		if i == len(toks)-1 {
			cur.v[j] = v
			return nil
		}
		child, _ := cur.v[j].(*armObj)
		if child == nil {
			if !create || cur.t.fields[j].child == nil {
				return nil
			}
			child = newObj(cur.t.fields[j].child)
			cur.v[j] = child
		}
		cur = child
	}
	return nil
}

// value converts one spec value of field f at collection depth d.
func (c *converter) value(f *field, af *armField, d int, raw any, p *fpath) (any, error) {
	if d < len(f.coll) {
		if d == 0 && f.conv == "refKeyMap" {
			return c.refKeyMap(f, af, raw, p)
		}
		switch f.coll[d] {
		case collList:
			l, ok := raw.([]any)
			if !ok {
				return nil, c.errf(p, "expected a list, got %s", typeName(raw))
			}
			if len(l) == 0 {
				return nil, nil // Go: ranging over an empty list appends nothing, the ARM slice stays nil
			}
			out := make([]any, len(l))
			for i, item := range l {
				if item == nil {
					continue
				}
				p.pushIdx(i)
				v, err := c.value(f, af, d+1, item, p)
				if err != nil {
					return nil, err
				}
				p.pop()
				out[i] = v
			}
			return out, nil
		default:
			mm, ok := raw.(map[string]any)
			if !ok {
				return nil, c.errf(p, "expected a map, got %s", typeName(raw))
			}
			out := make(map[string]any, len(mm))
			for key, item := range mm {
				if item == nil {
					out[key] = nil
					continue
				}
				p.pushKey(key)
				v, err := c.value(f, af, d+1, item, p)
				if err != nil {
					return nil, err
				}
				p.pop()
				out[key] = v
			}
			return out, nil
		}
	}
	switch f.t {
	case ftString:
		if _, ok := raw.(string); !ok {
			return nil, c.errf(p, "expected a string, got %s", typeName(raw))
		}
		return raw, nil // the spec's own interface value: no new allocation
	case ftEnum:
		switch v := raw.(type) {
		case string, int64, float64, bool:
			return raw, nil
		case int:
			return int64(v), nil
		}
		return nil, c.errf(p, "expected a string, got %s", typeName(raw))
	case ftBool:
		if _, ok := raw.(bool); !ok {
			return nil, c.errf(p, "expected true or false, got %s", typeName(raw))
		}
		return raw, nil
	case ftInt:
		switch v := raw.(type) {
		case int64:
			return raw, nil
		case int:
			return int64(v), nil
		case float64:
			if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
				return int64(v), nil
			}
			return nil, c.errf(p, "expected an integer, got %v", v)
		}
		return nil, c.errf(p, "expected an integer, got %s", typeName(raw))
	case ftNumber:
		switch v := raw.(type) {
		case float64:
			return raw, nil
		case int64:
			return float64(v), nil
		case int:
			return float64(v), nil
		}
		return nil, c.errf(p, "expected a number, got %s", typeName(raw))
	case ftJSON:
		return raw, nil
	case ftObject:
		m, ok := raw.(map[string]any)
		if !ok {
			return nil, c.errf(p, "expected an object, got %s", typeName(raw))
		}
		return c.object(f.ref, m, p)
	case ftRef, ftWellKnownRef:
		return c.reference(f, raw, p)
	case ftSecretRef:
		name, key, err := c.nameKey(raw, p, true)
		if err != nil {
			return nil, err
		}
		s, err := c.r.Secret(name, key)
		if err != nil {
			if errors.Is(err, ErrUnknown) {
				return unknownVal{}, nil
			}
			return nil, &diag.Error{Field: p.String(), Msg: fmt.Sprintf("secret %s key %s", name, key), Err: err}
		}
		return secretStr(s), nil
	case ftSecretMapRef:
		name, _, err := c.nameKey(raw, p, false)
		if err != nil {
			return nil, err
		}
		sm, err := c.r.SecretMap(name)
		if err != nil {
			if errors.Is(err, ErrUnknown) {
				return unknownVal{}, nil
			}
			return nil, &diag.Error{Field: p.String(), Msg: "secret " + name, Err: err}
		}
		return secretMap(sm), nil
	case ftConfigMapRef:
		name, key, err := c.nameKey(raw, p, true)
		if err != nil {
			return nil, err
		}
		s, err := c.r.ConfigMap(name, key)
		if err != nil {
			if errors.Is(err, ErrUnknown) {
				return unknownVal{}, nil
			}
			return nil, &diag.Error{Field: p.String(), Msg: fmt.Sprintf("config map %s key %s", name, key), Err: err}
		}
		return s, nil
	}
	return nil, c.errf(p, "field kind cannot be sent to ARM")
}

func (c *converter) nameKey(raw any, p *fpath, needKey bool) (string, string, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return "", "", c.errf(p, "expected {name, key}, got %s", typeName(raw))
	}
	name, _ := m["name"].(string)
	key, _ := m["key"].(string)
	if name == "" {
		return "", "", c.errf(p, "name is required")
	}
	if needKey && key == "" {
		return "", "", c.errf(p, "key is required")
	}
	return name, key, nil
}

// reference resolves a ResourceReference / WellKnownResourceReference to an ARM ID.
func (c *converter) reference(f *field, raw any, p *fpath) (any, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, c.errf(p, "expected a reference {armId} or {group, kind, name}, got %s", typeName(raw))
	}
	ref, err := readRef(m)
	if err != nil {
		return nil, c.errf(p, "%v", err)
	}
	switch {
	case ref.ARMID != "":
		return ref.ARMID, nil
	case ref.Name != "":
		id, err := c.r.ResourceID(ref.Group, ref.Kind, ref.Name)
		if err != nil {
			if errors.Is(err, ErrUnknown) {
				return unknownVal{}, nil
			}
			return nil, &diag.Error{Field: p.String(), Msg: fmt.Sprintf("reference %s/%s %s", ref.Group, ref.Kind, ref.Name), Err: err}
		}
		return id, nil
	case ref.WellKnownName != "" && f.t == ftWellKnownRef:
		return c.wellKnownRole(ref.WellKnownName, p) // RoleAssignment: the built-in role's ID (roles.go)
	}
	if f.t == ftWellKnownRef {
		return nil, c.errf(p, "reference needs armId, wellKnownName or group, kind and name")
	}
	return nil, c.errf(p, "reference needs armId or group, kind and name")
}

type refValue struct{ Group, Kind, Name, ARMID, WellKnownName string }

func readRef(m map[string]any) (refValue, error) {
	var r refValue
	r.Group, _ = m["group"].(string)
	r.Kind, _ = m["kind"].(string)
	r.Name, _ = m["name"].(string)
	r.ARMID, _ = m["armId"].(string)
	r.WellKnownName, _ = m["wellKnownName"].(string)
	if r.ARMID != "" && r.Name != "" {
		return r, errors.New("set either armId or name, not both")
	}
	if r.Name != "" && (r.Group == "" || r.Kind == "") {
		return r, errors.New("a reference by name needs group and kind")
	}
	return r, nil
}

// refKeyMap converts identity.userAssignedIdentities: [{reference}] → {"<ARM ID>": {}}.
func (c *converter) refKeyMap(f *field, af *armField, raw any, p *fpath) (any, error) {
	l, ok := raw.([]any)
	if !ok {
		return nil, c.errf(p, "expected a list, got %s", typeName(raw))
	}
	if len(l) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(l))
	for i, item := range l {
		p.pushIdx(i)
		m, ok := item.(map[string]any)
		if !ok {
			return nil, c.errf(p, "expected {reference}, got %s", typeName(item))
		}
		rf := f.ref.byName["reference"]
		if rf == nil {
			return nil, c.errf(p, "schema has no reference field")
		}
		p.push("reference")
		rawRef, ok := m["reference"]
		if !ok || rawRef == nil {
			return nil, c.errf(p, "reference is required")
		}
		id, err := c.reference(rf, rawRef, p)
		if err != nil {
			return nil, err
		}
		p.pop()
		p.pop()
		key, ok := id.(string)
		if !ok {
			key = UnknownValue
		}
		var v any = map[string]any{}
		if af.child != nil {
			v = newObj(af.child)
		}
		out[key] = v
	}
	return out, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// encoder writes compact JSON as Go's encoding/json does (HTML-safe strings,
// sorted map keys, float formatting) and records the JSON pointers of markers.
type encoder struct {
	buf     []byte
	path    []pathTok
	secrets []string
	unknown []string
}

type pathTok struct {
	key string
	idx int // -1 for a key
}

func (e *encoder) pointer() string {
	var b strings.Builder
	for _, t := range e.path {
		b.WriteByte('/')
		if t.idx >= 0 {
			b.WriteString(strconv.Itoa(t.idx))
			continue
		}
		b.WriteString(pointerEscaper.Replace(t.key))
	}
	return b.String()
}

// pointerEscaper escapes a JSON pointer's token (RFC 6901); built once (one
// per token cost 63 MB of a 100,000-resource plan).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case *armObj:
		return e.obj(x)
	case string:
		e.buf = appendString(e.buf, x)
	case secretStr:
		e.secrets = append(e.secrets, e.pointer())
		e.buf = appendString(e.buf, string(x))
	case unknownVal:
		e.unknown = append(e.unknown, e.pointer())
		e.buf = appendString(e.buf, UnknownValue)
	case secretMap:
		e.secrets = append(e.secrets, e.pointer())
		m := make(map[string]any, len(x))
		for k, s := range x {
			m[k] = s
		}
		return e.mapValue(m)
	case bool:
		if x {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case float64:
		var err error
		e.buf, err = appendFloat(e.buf, x)
		return err
	case []any:
		e.buf = append(e.buf, '[')
		for i, item := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.path = append(e.path, pathTok{idx: i})
			err := e.value(item)
			e.path = e.path[:len(e.path)-1]
			if err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case map[string]any:
		return e.mapValue(x)
	default:
		return fmt.Errorf("unsupported value of type %T", v)
	}
	return nil
}

func (e *encoder) mapValue(m map[string]any) error {
	keys := sortedKeys(m)
	e.buf = append(e.buf, '{')
	for i, k := range keys {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = appendString(e.buf, k)
		e.buf = append(e.buf, ':')
		e.path = append(e.path, pathTok{key: k, idx: -1})
		err := e.value(m[k])
		e.path = e.path[:len(e.path)-1]
		if err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

func (e *encoder) obj(o *armObj) error {
	t := o.t
	if t.oneOf != nil {
		for _, i := range t.oneOf {
			if o.v[i] != nil {
				return e.value(o.v[i])
			}
		}
		return fmt.Errorf("one-of %s has no variant set", t.name)
	}
	e.buf = append(e.buf, '{')
	first := true
	for i := range t.fields {
		f := &t.fields[i]
		v := o.v[i]
		if v == nil || (!f.null && isEmptyColl(v)) {
			switch {
			case f.empty && len(f.coll) > 0:
				e.key(f.json, &first)
				if f.coll[0] == collMap {
					e.buf = append(e.buf, "{}"...)
				} else {
					e.buf = append(e.buf, "[]"...)
				}
			case f.null && v == nil:
				e.key(f.json, &first)
				e.buf = append(e.buf, "null"...)
			}
			continue
		}
		e.key(f.json, &first)
		e.path = append(e.path, pathTok{key: f.json, idx: -1})
		err := e.value(v)
		e.path = e.path[:len(e.path)-1]
		if err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

func (e *encoder) key(k string, first *bool) {
	if !*first {
		e.buf = append(e.buf, ',')
	}
	*first = false
	e.buf = appendString(e.buf, k)
	e.buf = append(e.buf, ':')
}

func isEmptyColl(v any) bool {
	switch x := v.(type) {
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	case secretMap:
		return len(x) == 0
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// insertion sort for the usual handful of keys, no allocation beyond keys
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// appendFloat formats like encoding/json's float64 encoder.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, fmt.Errorf("unsupported number %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string the way encoding/json does with
// HTML escaping on: <, >, & as \u003c..., U+2028/U+2029 escaped, invalid
// UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == 0xFFFD && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// errNoResolver is returned for references, secrets and config maps converted without a Resolver.
var errNoResolver = errors.New("no resolver given")

type noResolver struct{}

func (noResolver) ResourceID(string, string, string) (string, error) { return "", errNoResolver }
func (noResolver) Secret(string, string) (string, error)             { return "", errNoResolver }
func (noResolver) SecretMap(string) (map[string]string, error)       { return nil, errNoResolver }
func (noResolver) ConfigMap(string, string) (string, error)          { return "", errNoResolver }
