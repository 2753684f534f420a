package schemacheck

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gitaso/gitaso/internal/diag"
)

const (
	annReconcilePolicy = "serviceoperator.azure.com/reconcile-policy"
	annCredentialFrom  = "serviceoperator.azure.com/credential-from"
)

// refKeys are the keys each reference-like type accepts (ASO's genruntime types).
var refKeys = map[string][]string{
	"ref":               {"armId", "group", "kind", "name"},
	"knownRef":          {"armId", "name"},
	"arbitraryOwnerRef": {"armId", "group", "kind", "name"},
	"wellKnownRef":      {"armId", "group", "kind", "name", "wellKnownName"},
	"secretRef":         {"key", "name"},
	"secretMapRef":      {"name"},
	"configMapRef":      {"key", "name"},
	"configMapDest":     {"key", "name"},
	"secretDest":        {"key", "name"},
	"destExpr":          {"key", "name", "value"},
}

// edge is a name that must resolve to another document of the same namespace.
type edge struct {
	doc   *Doc
	field string
	kind  string // "object", "secret", "secretMap", "configMap"
	group string // objects
	obj   string // objects: Kind
	name  string
	key   string // secrets and config maps
}

type checker struct {
	cat   *Catalog
	errs  diag.List
	edges []edge

	objects    map[string]*Doc              // "ns/group/Kind/name"
	secrets    map[string]map[string]bool   // "ns/name" → keys
	configMaps map[string]map[string]bool   // "ns/name" → keys (in Git)
	exports    map[string]map[string]string // "ns/name" → key → exporting object (operatorSpec.configMaps)
	secretOut  map[string]map[string]string // "ns/name" → key → exporting object (operatorSpec.secrets)
	seen       map[string]*Doc              // "ns/apiGroup/Kind/name" duplicates
	credFrom   []struct {
		doc  *Doc
		name string
	}
}

// Check validates docs against the catalog and returns every problem found, sorted.
// Documents whose group does not end in ".azure.com" are checked only if they are v1
// ConfigMaps or Secrets; other kinds are ignored, as gitaso does.
func (c *Catalog) Check(docs []Doc) diag.List {
	ck := &checker{
		cat:        c,
		objects:    map[string]*Doc{},
		secrets:    map[string]map[string]bool{},
		configMaps: map[string]map[string]bool{},
		exports:    map[string]map[string]string{},
		secretOut:  map[string]map[string]string{},
		seen:       map[string]*Doc{},
	}
	for i := range docs {
		ck.doc(&docs[i])
	}
	ck.resolve()
	return ck.errs.Sorted()
}

func (ck *checker) errf(d *Doc, field, format string, args ...any) {
	ck.errs = append(ck.errs, &diag.Error{File: d.File, Line: d.Line, Object: d.ID(), Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (ck *checker) doc(d *Doc) {
	if d.APIVersion() == "" || d.Kind() == "" {
		ck.errs = append(ck.errs, &diag.Error{File: d.File, Line: d.Line, Msg: "document has no apiVersion or kind"})
		return
	}
	if d.Name() == "" {
		ck.errf(d, "metadata.name", "missing")
		return
	}
	key := d.Namespace() + "/" + d.Group() + "/" + d.Kind() + "/" + d.Name()
	if prev, ok := ck.seen[key]; ok {
		ck.errf(d, "metadata.name", "declared twice (first in %s:%d)", prev.File, prev.Line)
		return
	}
	ck.seen[key] = d
	ck.metadata(d)

	switch {
	case d.APIVersion() == "v1" && (d.Kind() == "Secret" || d.Kind() == "ConfigMap"):
		ck.input(d)
	case strings.HasSuffix(d.Group(), ".azure.com"):
		ck.aso(d)
	}
}

func (ck *checker) metadata(d *Doc) {
	m, ok := d.Content["metadata"].(map[string]any)
	if !ok {
		ck.errf(d, "metadata", "must be a mapping")
		return
	}
	for _, k := range sortedKeys(m) {
		switch k {
		case "name", "namespace":
			if _, ok := m[k].(string); !ok {
				ck.errf(d, "metadata."+k, "must be a string")
			}
		case "annotations", "labels":
			mm, ok := m[k].(map[string]any)
			if !ok {
				ck.errf(d, "metadata."+k, "must be a mapping")
				continue
			}
			for _, ak := range sortedKeys(mm) {
				if _, ok := mm[ak].(string); !ok {
					ck.errf(d, "metadata."+k+"."+ak, "must be a string (quote it)")
				}
			}
		default:
			ck.errf(d, "metadata."+k, "unsupported metadata field")
		}
	}
}

func (ck *checker) input(d *Doc) {
	allowed := map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "data": true, "immutable": true}
	if d.Kind() == "Secret" {
		allowed["stringData"], allowed["type"] = true, true
	}
	keys := map[string]bool{}
	for _, k := range sortedKeys(d.Content) {
		if !allowed[k] {
			ck.errf(d, k, "unknown field of a %s", d.Kind())
			continue
		}
		if k != "data" && k != "stringData" {
			continue
		}
		m, ok := d.Content[k].(map[string]any)
		if !ok {
			ck.errf(d, k, "must be a mapping of strings")
			continue
		}
		for _, dk := range sortedKeys(m) {
			if _, ok := m[dk].(string); !ok {
				ck.errf(d, k+"."+dk, "must be a string (quote it)")
			}
			keys[dk] = true
		}
	}
	nk := d.Namespace() + "/" + d.Name()
	if d.Kind() == "Secret" {
		ck.secrets[nk] = keys
	} else {
		ck.configMaps[nk] = keys
	}
}

func (ck *checker) aso(d *Doc) {
	k, ok := ck.cat.Lookup(d.Group(), d.Version(), d.Kind())
	if !ok {
		if alt := ck.cat.Versions(d.Group(), d.Kind()); len(alt) > 0 {
			ck.errf(d, "apiVersion", "%s %s is not an ASO kind; known versions: %s", d.APIVersion(), d.Kind(), strings.Join(alt, ", "))
		} else {
			ck.errf(d, "kind", "%s %s is not an ASO kind", d.APIVersion(), d.Kind())
		}
		return
	}
	ck.objects[d.Namespace()+"/"+d.Group()+"/"+d.Kind()+"/"+d.Name()] = d
	for _, key := range sortedKeys(d.Content) {
		switch key {
		case "apiVersion", "kind", "metadata", "spec", "status":
		default:
			ck.errf(d, key, "unknown top-level field")
		}
	}
	ann := d.Annotations()
	if p, ok := ann[annReconcilePolicy]; ok && p != "manage" && p != "skip" && p != "detach-on-delete" {
		ck.errf(d, "metadata.annotations."+annReconcilePolicy, "%q is not one of manage, skip, detach-on-delete", p)
	}
	if s, ok := ann[annCredentialFrom]; ok {
		ck.credFrom = append(ck.credFrom, struct {
			doc  *Doc
			name string
		}{d, s})
	}
	spec := d.Spec()
	if spec == nil {
		ck.errf(d, "spec", "missing")
		return
	}
	if k.Generated != nil && !*k.Generated {
		return // hand-written kind without facts: nothing to check the spec against
	}
	s, err := ck.cat.schema(k)
	if err != nil {
		ck.errf(d, "", "%v", err)
		return
	}
	ck.object(d, s, k.SpecType, spec, "spec")
}

func (ck *checker) object(d *Doc, s *schemaFile, typeName string, obj map[string]any, path string) {
	t, ok := s.Types[typeName]
	if !ok {
		ck.errf(d, path, "schema has no type %s", typeName)
		return
	}
	for _, k := range sortedKeys(obj) {
		f, ok := t.F[k]
		if !ok {
			msg := "unknown field"
			for name := range t.F {
				if strings.EqualFold(name, k) {
					msg = fmt.Sprintf("unknown field (did you mean %q? an API server drops a wrongly cased field silently)", name)
				}
			}
			ck.errf(d, path+"."+k, "%s", msg)
			continue
		}
		var coll []string
		if f.C != "" {
			coll = strings.Split(f.C, ".")
		}
		ck.value(d, s, f, coll, obj[k], path+"."+k)
	}
	for _, name := range sortedKeys(t.F) {
		if t.F[name].Req == 1 && obj[name] == nil {
			ck.errf(d, path+"."+name, "required field missing")
		}
	}
}

func (ck *checker) value(d *Doc, s *schemaFile, f field, coll []string, v any, path string) {
	if v == nil {
		return
	}
	if len(coll) > 0 {
		switch coll[0] {
		case "list":
			l, ok := v.([]any)
			if !ok {
				ck.errf(d, path, "must be a list")
				return
			}
			for i, e := range l {
				ck.value(d, s, f, coll[1:], e, fmt.Sprintf("%s[%d]", path, i))
			}
		case "map":
			m, ok := v.(map[string]any)
			if !ok {
				ck.errf(d, path, "must be a mapping")
				return
			}
			for _, k := range sortedKeys(m) {
				ck.value(d, s, f, coll[1:], m[k], path+"."+k)
			}
		default:
			ck.errf(d, path, "schema has unknown collection %q", coll[0])
		}
		return
	}
	switch f.T {
	case "string":
		switch v.(type) {
		case string, time.Time:
		default:
			ck.errf(d, path, "must be a string, got %T (quote it)", v)
		}
	case "enum":
		str, ok := v.(string)
		if !ok {
			ck.errf(d, path, "must be a string, got %T (quote it)", v)
			return
		}
		if len(f.E) > 0 && !contains(f.E, str) {
			ck.errf(d, path, "%q is not one of %s", str, strings.Join(f.E, ", "))
		}
	case "bool":
		if _, ok := v.(bool); !ok {
			ck.errf(d, path, "must be true or false, got %T", v)
		}
	case "int":
		switch v.(type) {
		case int, int64, uint64:
		default:
			ck.errf(d, path, "must be an integer, got %T", v)
		}
	case "number":
		switch v.(type) {
		case int, int64, uint64, float64:
		default:
			ck.errf(d, path, "must be a number, got %T", v)
		}
	case "json":
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			ck.errf(d, path, "must be a mapping")
			return
		}
		ck.object(d, s, f.R, m, path)
	default:
		keys, ok := refKeys[f.T]
		if !ok {
			ck.errf(d, path, "schema has unknown field type %q", f.T)
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			ck.errf(d, path, "must be a mapping")
			return
		}
		r := map[string]string{}
		for _, k := range sortedKeys(m) {
			if !contains(keys, k) {
				ck.errf(d, path+"."+k, "unknown field (allowed: %s)", strings.Join(keys, ", "))
				continue
			}
			str, ok := m[k].(string)
			if !ok {
				ck.errf(d, path+"."+k, "must be a string")
				continue
			}
			r[k] = str
		}
		ck.reference(d, f, r, path)
	}
}

// reference checks the shape of a reference-like value and records what it must resolve to.
func (ck *checker) reference(d *Doc, f field, r map[string]string, path string) {
	ns := d.Namespace()
	switch f.T {
	case "ref", "knownRef", "arbitraryOwnerRef", "wellKnownRef":
		set := 0
		for _, k := range []string{"armId", "name", "wellKnownName"} {
			if r[k] != "" {
				set++
			}
		}
		if set != 1 {
			ck.errf(d, path, "set exactly one of armId, name%s", map[bool]string{true: ", wellKnownName", false: ""}[f.T == "wellKnownRef"])
			return
		}
		if id := r["armId"]; id != "" {
			if !strings.HasPrefix(id, "/subscriptions/") && !strings.HasPrefix(id, "/providers/") {
				ck.errf(d, path+".armId", "%q is not an ARM ID", id)
			}
			if r["name"] != "" || r["kind"] != "" || r["group"] != "" {
				ck.errf(d, path, "armId excludes group, kind and name")
			}
			return
		}
		if r["name"] == "" {
			return // wellKnownName
		}
		group, kind := r["group"], r["kind"]
		if f.T == "knownRef" {
			group, kind, _ = strings.Cut(f.OwnerKind, "/")
		}
		if group == "" || kind == "" {
			ck.errf(d, path, "a reference by name needs group and kind")
			return
		}
		ck.edges = append(ck.edges, edge{doc: d, field: path, kind: "object", group: group, obj: kind, name: r["name"]})
	case "secretRef", "configMapRef":
		if r["name"] == "" || r["key"] == "" {
			ck.errf(d, path, "needs name and key")
			return
		}
		kind := "secret"
		if f.T == "configMapRef" {
			kind = "configMap"
		}
		ck.edges = append(ck.edges, edge{doc: d, field: path, kind: kind, name: r["name"], key: r["key"]})
	case "secretMapRef":
		if r["name"] == "" {
			ck.errf(d, path, "needs name")
			return
		}
		ck.edges = append(ck.edges, edge{doc: d, field: path, kind: "secretMap", name: r["name"]})
	case "configMapDest", "secretDest":
		if r["name"] == "" || r["key"] == "" {
			ck.errf(d, path, "needs name and key")
			return
		}
		out := ck.exports
		if f.T == "secretDest" {
			out = ck.secretOut
		}
		nk := ns + "/" + r["name"]
		if out[nk] == nil {
			out[nk] = map[string]string{}
		}
		if prev, ok := out[nk][r["key"]]; ok && prev != d.ID() {
			ck.errf(d, path, "%s key %q is already written by %s", r["name"], r["key"], prev)
		}
		out[nk][r["key"]] = d.ID()
	case "destExpr":
		if r["name"] == "" || r["value"] == "" {
			ck.errf(d, path, "needs name and value")
		}
	}
}

func (ck *checker) resolve() {
	for _, e := range ck.edges {
		ns := e.doc.Namespace()
		nk := ns + "/" + e.name
		switch e.kind {
		case "object":
			if _, ok := ck.objects[ns+"/"+e.group+"/"+e.obj+"/"+e.name]; !ok {
				ck.errf(e.doc, e.field, "%s %s %q not found in namespace %s (names resolve in the same namespace only; use armId across namespaces)", e.group, e.obj, e.name, ns)
			}
		case "secret":
			keys, ok := ck.secrets[nk]
			if !ok {
				if _, ok := ck.secretOut[nk][e.key]; ok {
					continue
				}
				ck.errf(e.doc, e.field, "Secret %q not found in namespace %s", e.name, ns)
			} else if !keys[e.key] {
				ck.errf(e.doc, e.field, "Secret %q has no key %q", e.name, e.key)
			}
		case "secretMap":
			if _, ok := ck.secrets[nk]; !ok {
				ck.errf(e.doc, e.field, "Secret %q not found in namespace %s", e.name, ns)
			}
		case "configMap":
			if keys, ok := ck.configMaps[nk]; ok {
				if !keys[e.key] {
					ck.errf(e.doc, e.field, "ConfigMap %q has no key %q", e.name, e.key)
				}
				continue
			}
			if _, ok := ck.exports[nk][e.key]; !ok {
				ck.errf(e.doc, e.field, "ConfigMap %q key %q is neither in the repository nor exported by an operatorSpec.configMaps in namespace %s", e.name, e.key, ns)
			}
		}
	}
	for _, c := range ck.credFrom {
		if _, ok := ck.secrets[c.doc.Namespace()+"/"+c.name]; !ok {
			ck.errf(c.doc, "metadata.annotations."+annCredentialFrom, "Secret %q not found in namespace %s", c.name, c.doc.Namespace())
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
