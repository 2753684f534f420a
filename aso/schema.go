package aso

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// fieldType is the kind of a spec field (schema "t").
type fieldType uint8

const (
	ftString fieldType = iota
	ftBool
	ftInt
	ftNumber
	ftEnum
	ftJSON
	ftObject
	ftRef
	ftKnownRef
	ftArbitraryOwnerRef
	ftWellKnownRef
	ftSecretRef
	ftSecretMapRef
	ftConfigMapRef
	ftSecretDest
	ftConfigMapDest
	ftDestExpr
)

var fieldTypeNames = map[string]fieldType{
	"string": ftString, "bool": ftBool, "int": ftInt, "number": ftNumber, "enum": ftEnum, "json": ftJSON,
	"object": ftObject, "ref": ftRef, "knownRef": ftKnownRef, "arbitraryOwnerRef": ftArbitraryOwnerRef,
	"wellKnownRef": ftWellKnownRef, "secretRef": ftSecretRef, "secretMapRef": ftSecretMapRef,
	"configMapRef": ftConfigMapRef, "secretDest": ftSecretDest, "configMapDest": ftConfigMapDest, "destExpr": ftDestExpr,
}

// collection kinds of a field (schema "c"), outermost first.
type collKind uint8

const (
	collList collKind = iota + 1
	collMap
)

type pkg struct {
	apiVersion string
	types      map[string]*typeDef
	arm        map[string]*armType
}

type typeDef struct {
	name     string
	arm      *armType
	oneOf    bool
	namePtr  []string   // where azureName goes (root specs)
	pushName [][]string // kusto: azureName also goes into the chosen variant
	fields   []*field   // sorted by name
	byName   map[string]*field
	order    []*field // conversion order: lower precedence first so that the winner writes last
	lower    map[string]*field
}

type field struct {
	name      string
	t         fieldType
	coll      []collKind
	ref       *typeDef
	enum      []any
	req       bool
	a         []string // ARM pointer tokens relative to the enclosing type's ARM object
	aIdx      []int    // the same pointer as field indices through the ARM types (nil if unresolvable)
	armRef    string
	pair      string
	conv      string // "refKeyMap" | "wellKnown"
	x         string // "owner" | "azureName" | "operatorSpec": never sent
	ownerKind string // group/Kind for owner fields
}

type armType struct {
	name   string
	fields []armField
	idx    map[string]int
	oneOf  []int  // variant field indices in priority order; nil unless a one-of
	disc   string // discriminator property of a one-of
}

type armField struct {
	json   string
	child  *armType
	coll   []collKind
	null   bool // no omitempty: unset is sent as null
	empty  bool // explicit empty collection: unset is sent as [] or {}
	push   bool
	noConv bool
}

type pkgJSON struct {
	APIVersion string `json:"api"`
	Types      map[string]struct {
		ARM        string              `json:"arm"`
		OneOf      int                 `json:"oneOf"`
		Name       string              `json:"name"`
		PushName   []string            `json:"pushName"`
		Prec       map[string][]string `json:"prec"`
		EmptyIfNil []string            `json:"emptyIfNil"`
		F          map[string]struct {
			T         string `json:"t"`
			C         string `json:"c"`
			R         string `json:"r"`
			E         []any  `json:"e"`
			Req       int    `json:"req"`
			A         string `json:"a"`
			ARMRef    string `json:"armRef"`
			Pair      string `json:"pair"`
			Conv      string `json:"conv"`
			X         string `json:"x"`
			OwnerKind string `json:"ownerKind"`
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

func pointerTokens(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

func parseColl(c string) []collKind {
	if c == "" {
		return nil
	}
	parts := strings.Split(c, ".")
	out := make([]collKind, len(parts))
	for i, p := range parts {
		if p == "map" {
			out[i] = collMap
		} else {
			out[i] = collList
		}
	}
	return out
}

func decodePackage(raw json.RawMessage) (*pkg, error) {
	var in pkgJSON
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	p := &pkg{apiVersion: in.APIVersion, types: make(map[string]*typeDef, len(in.Types)), arm: make(map[string]*armType, len(in.ARMTypes))}
	for name := range in.ARMTypes {
		p.arm[name] = &armType{name: name}
	}
	for name, at := range in.ARMTypes {
		t := p.arm[name]
		t.idx = make(map[string]int, len(at.F))
		for i, f := range at.F {
			af := armField{}
			af.json, _ = f[0].(string)
			if len(f) > 1 {
				if c, ok := f[1].(string); ok && c != "" {
					af.child = p.arm[c]
				}
			}
			if len(f) > 2 {
				flags, _ := f[2].(string)
				for _, r := range flags {
					switch r {
					case 'L':
						af.coll = append(af.coll, collList)
					case 'M':
						af.coll = append(af.coll, collMap)
					case 'n':
						af.null = true
					case 'e':
						af.empty = true
					case 'p':
						af.push = true
					case 'x':
						af.noConv = true
					}
				}
			}
			t.fields = append(t.fields, af)
			t.idx[af.json] = i
		}
		if at.OneOf != nil {
			t.disc = at.OneOf.Disc
			for _, v := range at.OneOf.Variants {
				i, ok := t.idx[v[0]]
				if !ok {
					return nil, fmt.Errorf("arm type %s: one-of variant %s missing", name, v[0])
				}
				t.oneOf = append(t.oneOf, i)
			}
		}
	}
	for name := range in.Types {
		p.types[name] = &typeDef{name: name}
	}
	for name, tj := range in.Types {
		t := p.types[name]
		if tj.ARM != "" {
			t.arm = p.arm[tj.ARM]
		}
		t.oneOf = tj.OneOf == 1
		t.namePtr = pointerTokens(tj.Name)
		for _, pn := range tj.PushName {
			t.pushName = append(t.pushName, pointerTokens(pn))
		}
		t.byName = make(map[string]*field, len(tj.F))
		t.lower = make(map[string]*field, len(tj.F))
		for fname, fj := range tj.F {
			ft, ok := fieldTypeNames[fj.T]
			if !ok {
				return nil, fmt.Errorf("type %s.%s: unknown field type %q", name, fname, fj.T)
			}
			f := &field{name: fname, t: ft, coll: parseColl(fj.C), enum: fj.E, req: fj.Req == 1, a: pointerTokens(fj.A),
				armRef: fj.ARMRef, pair: fj.Pair, conv: fj.Conv, x: fj.X, ownerKind: fj.OwnerKind}
			if fj.R != "" {
				f.ref = p.types[fj.R]
				if f.ref == nil {
					return nil, fmt.Errorf("type %s.%s: type %s missing", name, fname, fj.R)
				}
			}
			t.fields = append(t.fields, f)
			t.byName[fname] = f
			t.lower[strings.ToLower(fname)] = f
		}
		sort.Slice(t.fields, func(i, j int) bool { return t.fields[i].name < t.fields[j].name })
		if t.arm != nil {
			for _, f := range t.fields {
				if len(f.a) == 0 {
					continue
				}
				idx, err := armPath(t.arm, f.a)
				if err != nil {
					return nil, fmt.Errorf("type %s.%s: %w", name, f.name, err)
				}
				f.aIdx = idx
			}
		}
		// Conversion order: fields in name order, except that fields sharing an
		// ARM path listed in prec are written lowest priority first.
		rank := map[string]int{}
		for _, names := range tj.Prec {
			for i, n := range names {
				rank[n] = len(names) - i // the first (winning) name gets the highest rank and is written last
			}
		}
		t.order = append(t.order, t.fields...)
		sort.SliceStable(t.order, func(i, j int) bool {
			ri, rj := rank[t.order[i].name], rank[t.order[j].name]
			if (ri == 0) != (rj == 0) {
				return ri == 0 // plain fields first
			}
			return ri < rj // within precedence groups: lower priority first, the winner last
		})
	}
	return p, nil
}

// armPath resolves pointer tokens to field indices through the ARM types.
func armPath(t *armType, toks []string) ([]int, error) {
	idx := make([]int, len(toks))
	cur := t
	for i, tok := range toks {
		if cur == nil {
			return nil, fmt.Errorf("ARM pointer /%s: %s is not an object", strings.Join(toks, "/"), toks[i-1])
		}
		j, ok := cur.idx[tok]
		if !ok {
			return nil, fmt.Errorf("ARM pointer /%s: %s not in ARM type %s", strings.Join(toks, "/"), tok, cur.name)
		}
		idx[i] = j
		cur = cur.fields[j].child
	}
	return idx, nil
}
