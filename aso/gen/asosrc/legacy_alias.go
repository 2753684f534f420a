package asosrc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// SameConversion tells whether the package cur can stand for the removed
// package old: every manifest old accepts converts with cur's facts to the
// same ARM request, and cur's validation accepts it. It returns "" when it
// can, else the first difference found, e.g. "ManagedCluster_Spec.sku: a
// /sku vs /properties/sku".
//
// Types are matched by structure from the kinds' specs, not by name (ASO
// renamed StorageAccounts_BlobService_Spec to StorageAccountsBlobService_Spec
// between releases). Old ARM fields cur lacks are fine when no spec field
// writes them (read-only properties old releases kept in the payload
// types) and they are omitted unset. cur may have more: fields old lacks (they are unset in
// an old manifest) unless the payload sends them unset (flags n and e), more
// enum values, fewer required fields, an enum where old had a string of the
// same JSON kind is not allowed (it would refuse values old took).
func SameConversion(old, cur *SchemaFile) string {
	if old.APIVersion != cur.APIVersion {
		return fmt.Sprintf("api-version %s vs %s", old.APIVersion, cur.APIVersion)
	}
	c := &comparer{old: old, cur: cur, types: map[[2]string]bool{}, arms: map[[2]string]bool{},
		ot: typesByName(old), ct: typesByName(cur), oa: armByName(old), ca: armByName(cur)}
	for _, ok := range old.Kinds {
		i := slices.IndexFunc(cur.Kinds, func(k KindSchema) bool { return k.Kind == ok.Kind })
		if i < 0 {
			return "kind " + ok.Kind + " missing"
		}
		ck := cur.Kinds[i]
		if ck.ARMType != ok.ARMType {
			return fmt.Sprintf("kind %s: ARM type %s vs %s", ok.Kind, ok.ARMType, ck.ARMType)
		}
		if d := c.typ(ok.Spec, ck.Spec); d != "" {
			return d
		}
	}
	return ""
}

type comparer struct {
	old, cur    *SchemaFile
	types, arms map[[2]string]bool // pairs being or already compared
	ot, ct      map[string]*Type
	oa, ca      map[string]*ARMType
}

func typesByName(s *SchemaFile) map[string]*Type {
	m := make(map[string]*Type, len(s.Types))
	for _, t := range s.Types {
		m[t.Name] = t
	}
	return m
}

func armByName(s *SchemaFile) map[string]*ARMType {
	m := make(map[string]*ARMType, len(s.ARMTypes))
	for _, t := range s.ARMTypes {
		m[t.Name] = t
	}
	return m
}

func (c *comparer) typ(on, cn string) string {
	if c.types[[2]string{on, cn}] {
		return ""
	}
	c.types[[2]string{on, cn}] = true
	o, n := c.ot[on], c.ct[cn]
	if o == nil || n == nil {
		return fmt.Sprintf("type %s or %s missing", on, cn)
	}
	at := func(f string, a ...any) string { return on + ": " + fmt.Sprintf(f, a...) }
	switch {
	case (o.ARM == "") != (n.ARM == ""):
		return at("ARM type %q vs %q", o.ARM, n.ARM)
	case o.OneOf != n.OneOf:
		return at("one-of %v vs %v", o.OneOf, n.OneOf)
	case o.NameAt != n.NameAt:
		return at("name at %q vs %q", o.NameAt, n.NameAt)
	case !slices.Equal(o.PushName, n.PushName):
		return at("pushName %v vs %v", o.PushName, n.PushName)
	case !slices.Equal(sorted(o.EmptyIfNil), sorted(n.EmptyIfNil)):
		return at("emptyIfNil %v vs %v", o.EmptyIfNil, n.EmptyIfNil)
	}
	if o.ARM != "" {
		if d := c.arm(o.ARM, n.ARM); d != "" {
			return d
		}
	}
	byJSON := map[string]*Field{}
	for _, f := range n.Fields {
		byJSON[f.JSON] = f
	}
	oldFields := map[string]bool{}
	for _, fo := range o.Fields {
		oldFields[fo.JSON] = true
		fn := byJSON[fo.JSON]
		if fn == nil {
			return at("field %s missing", fo.JSON)
		}
		if d := c.field(fo, fn); d != "" {
			return at("field %s: %s", fo.JSON, d)
		}
	}
	for _, f := range n.Fields {
		if !oldFields[f.JSON] && f.Req {
			return at("field %s is new and required", f.JSON)
		}
	}
	// Several fields writing one ARM path: among the old fields, the same
	// one wins.
	for _, pn := range n.Prec {
		var among []string
		for _, f := range pn.Fields {
			if oldFields[f] {
				among = append(among, f)
			}
		}
		if len(among) < 2 {
			continue
		}
		i := slices.IndexFunc(o.Prec, func(p Prec) bool { return p.Path == pn.Path })
		if i < 0 || !slices.Equal(o.Prec[i].Fields, among) {
			return at("precedence at %s differs", pn.Path)
		}
	}
	return ""
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func (c *comparer) field(fo, fn *Field) string {
	if jsonKind(fo) != jsonKind(fn) {
		return fmt.Sprintf("kind %s vs %s", fo.T, fn.T)
	}
	switch {
	case fo.C != fn.C:
		return fmt.Sprintf("collection %q vs %q", fo.C, fn.C)
	case fo.A != fn.A:
		return fmt.Sprintf("ARM path %q vs %q", fo.A, fn.A)
	case fo.ARMRef != fn.ARMRef, fo.Conv != fn.Conv, fo.X != fn.X, fo.OwnerKind != fn.OwnerKind:
		return fmt.Sprintf("conversion %s/%s/%s/%s vs %s/%s/%s/%s", fo.ARMRef, fo.Conv, fo.X, fo.OwnerKind, fn.ARMRef, fn.Conv, fn.X, fn.OwnerKind)
	case fn.Req && !fo.Req:
		return "required now"
	}
	if fn.T == "enum" {
		if fo.T != "enum" {
			return "an enum now"
		}
		for _, v := range fo.E {
			if !slices.ContainsFunc(fn.E, func(w json.RawMessage) bool { return bytes.Equal(v, w) }) {
				return "enum value " + string(v) + " gone"
			}
		}
	}
	if fo.R != "" {
		return c.typ(fo.R, fn.R)
	}
	return ""
}

// jsonKind is what a field sends: an enum sends its values' JSON kind
// (strings, or integers when every value is one).
func jsonKind(f *Field) string {
	if f.T != "enum" {
		return f.T
	}
	if len(f.E) > 0 && strings.HasPrefix(string(f.E[0]), `"`) {
		return "string"
	}
	for _, v := range f.E {
		if strings.ContainsAny(string(v), ".eE") {
			return "number"
		}
	}
	return "int"
}

func (c *comparer) arm(on, cn string) string {
	if c.arms[[2]string{on, cn}] {
		return ""
	}
	c.arms[[2]string{on, cn}] = true
	o, n := c.oa[on], c.ca[cn]
	if o == nil || n == nil {
		return fmt.Sprintf("ARM type %s or %s missing", on, cn)
	}
	at := func(f string, a ...any) string { return "ARM " + on + ": " + fmt.Sprintf(f, a...) }
	if (o.OneOf == nil) != (n.OneOf == nil) || o.OneOf != nil && (o.OneOf.Disc != n.OneOf.Disc || !slices.Equal(o.OneOf.Variants, n.OneOf.Variants)) {
		return at("one-of differs")
	}
	// The old fields in the same order (encoding/json writes struct
	// order), with the same flags; fields only cur has are omitted unset.
	last := -1
	oldJSON := map[string]bool{}
	for _, fo := range o.Fields {
		oldJSON[fo.JSON] = true
		i := slices.IndexFunc(n.Fields, func(f ARMField) bool { return f.JSON == fo.JSON })
		if i < 0 {
			// Omitted unset: harmless unless it is sent unset, or a spec
			// field writes it (then that field's ARM path differs).
			if strings.ContainsAny(fo.Flags, "ne") {
				return at("field %s, sent unset, missing", fo.JSON)
			}
			continue
		}
		if i < last {
			return at("field %s out of order", fo.JSON)
		}
		last = i
		fn := n.Fields[i]
		if fo.Flags != fn.Flags {
			return at("field %s flags %q vs %q", fo.JSON, fo.Flags, fn.Flags)
		}
		if (fo.Child == "") != (fn.Child == "") {
			return at("field %s child %q vs %q", fo.JSON, fo.Child, fn.Child)
		}
		if fo.Child != "" {
			if d := c.arm(fo.Child, fn.Child); d != "" {
				return d
			}
		}
	}
	for _, fn := range n.Fields {
		if !oldJSON[fn.JSON] && strings.ContainsAny(fn.Flags, "ne") {
			return at("new field %s is sent unset (flags %q)", fn.JSON, fn.Flags)
		}
	}
	return ""
}

// DecodeSchemaFile reads schema/<group>/<version>.json (as MarshalJSON
// writes it, or ../shared/aso-schema has it) for SameConversion. The order
// of kinds, types and spec fields is not kept (SameConversion does not
// depend on it); ARM fields keep theirs.
func DecodeSchemaFile(b []byte) (*SchemaFile, error) {
	var in struct {
		Group      string `json:"group"`
		CRDVersion string `json:"crdVersion"`
		APIVersion string `json:"armApiVersion"`
		Kinds      map[string]struct {
			Spec    string `json:"spec"`
			ARMType string `json:"armType"`
		} `json:"kinds"`
		Types map[string]struct {
			ARM        string              `json:"arm"`
			OneOf      int                 `json:"oneOf"`
			Name       string              `json:"name"`
			PushName   []string            `json:"pushName"`
			Prec       map[string][]string `json:"prec"`
			EmptyIfNil []string            `json:"emptyIfNil"`
			F          map[string]struct {
				T         string            `json:"t"`
				C         string            `json:"c"`
				R         string            `json:"r"`
				E         []json.RawMessage `json:"e"`
				Req       int               `json:"req"`
				A         string            `json:"a"`
				Conv      string            `json:"conv"`
				ARMRef    string            `json:"armRef"`
				Pair      string            `json:"pair"`
				X         string            `json:"x"`
				OwnerKind string            `json:"ownerKind"`
			} `json:"f"`
		} `json:"types"`
		ARMTypes map[string]struct {
			F     [][]any `json:"f"`
			OneOf *struct {
				Disc     string     `json:"disc"`
				Variants [][]string `json:"variants"`
			} `json:"oneOf"`
		} `json:"armTypes"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	s := &SchemaFile{Group: in.Group, CRDVersion: in.CRDVersion, APIVersion: in.APIVersion}
	for k, v := range in.Kinds {
		s.Kinds = append(s.Kinds, KindSchema{Kind: k, Spec: v.Spec, ARMType: v.ARMType})
	}
	for name, tj := range in.Types {
		t := &Type{Name: name, ARM: tj.ARM, OneOf: tj.OneOf == 1, NameAt: tj.Name, PushName: tj.PushName, EmptyIfNil: tj.EmptyIfNil}
		for p, fs := range tj.Prec {
			t.Prec = append(t.Prec, Prec{Path: p, Fields: fs})
		}
		for fname, f := range tj.F {
			t.Fields = append(t.Fields, &Field{JSON: fname, T: f.T, C: f.C, R: f.R, E: f.E, Req: f.Req == 1, A: f.A,
				Conv: f.Conv, ARMRef: f.ARMRef, Pair: f.Pair, X: f.X, OwnerKind: f.OwnerKind})
		}
		s.Types = append(s.Types, t)
	}
	for name, aj := range in.ARMTypes {
		at := &ARMType{Name: name}
		for _, f := range aj.F {
			var af ARMField
			af.JSON, _ = f[0].(string)
			if len(f) > 1 {
				af.Child, _ = f[1].(string)
			}
			if len(f) > 2 {
				af.Flags, _ = f[2].(string)
			}
			at.Fields = append(at.Fields, af)
		}
		if aj.OneOf != nil {
			at.OneOf = &OneOf{Disc: aj.OneOf.Disc}
			for _, v := range aj.OneOf.Variants {
				if len(v) != 2 {
					return nil, fmt.Errorf("arm type %s: one-of variant %v", name, v)
				}
				at.OneOf.Variants = append(at.OneOf.Variants, [2]string{v[0], v[1]})
			}
		}
		s.ARMTypes = append(s.ARMTypes, at)
	}
	return s, nil
}
