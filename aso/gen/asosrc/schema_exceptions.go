package asosrc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// ExceptionsFile lists, over every API package, the conversion facts that are
// more than `properties` nesting: exceptions.json. It is derived from the
// schema files alone, so a reviewer sees every special case of a release in
// one place.
type ExceptionsFile struct {
	// Renames are fields whose ARM name is not their JSON name, other than
	// references (armRef) and configmap pairs: [pkg, type, field, pointer].
	Renames [][4]string
	// ReferenceRenames counts references written to an ARM field (armRef with a pointer).
	ReferenceRenames int
	// FromConfig counts *FromConfig (configMapRef) fields.
	FromConfig int
	OneOf      [][3]string // [pkg, type, discriminator]
	PushName   []PathsException
	Precedence []PrecException
	EmptyIfNil []PathsException
	// NullWhenUnset counts, per package, the ARM collections without
	// omitempty that are not explicit empty collections (sent as null).
	NullWhenUnset   []PkgCount
	RefKeyMap       [][3]string // [pkg, type, field]
	WellKnownRef    [][3]string // [pkg, type, field]
	NoARMConversion [][3]string // [pkg, ARM type, ARM field]
}

// PathsException is a type-level list of JSON pointers.
type PathsException struct {
	Pkg, Type string
	Paths     []string
}

// PrecException is one ARM path written by several fields of a type.
type PrecException struct {
	Pkg, Type, Path string
	Fields          []string
}

// PkgCount is a number per package.
type PkgCount struct {
	Pkg   string
	Count int
}

// Exceptions gathers the exceptions of schema files, in package order
// (group, then version) and then in the order of each file.
func Exceptions(files []*SchemaFile) *ExceptionsFile {
	sorted := append([]*SchemaFile(nil), files...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Group != sorted[j].Group {
			return sorted[i].Group < sorted[j].Group
		}
		return sorted[i].CRDVersion < sorted[j].CRDVersion
	})
	ex := &ExceptionsFile{}
	for _, s := range sorted {
		pkg := s.Group + "/" + s.CRDVersion
		armByName := map[string]*ARMType{}
		for _, at := range s.ARMTypes {
			armByName[at.Name] = at
		}
		for _, t := range s.Types {
			if t.OneOf {
				if at := armByName[t.ARM]; at != nil && at.OneOf != nil {
					ex.OneOf = append(ex.OneOf, [3]string{pkg, t.Name, at.OneOf.Disc})
				}
			}
			for _, p := range t.Prec {
				ex.Precedence = append(ex.Precedence, PrecException{pkg, t.Name, p.Path, p.Fields})
			}
			if len(t.EmptyIfNil) > 0 {
				ex.EmptyIfNil = append(ex.EmptyIfNil, PathsException{pkg, t.Name, t.EmptyIfNil})
			}
			if len(t.PushName) > 0 {
				ex.PushName = append(ex.PushName, PathsException{pkg, t.Name, t.PushName})
			}
			for _, f := range t.Fields {
				ex.addField(pkg, t.Name, f)
			}
		}
		null := 0
		for _, at := range s.ARMTypes {
			for _, f := range at.Fields {
				if strings.Contains(f.Flags, "x") {
					ex.NoARMConversion = append(ex.NoARMConversion, [3]string{pkg, at.Name, f.JSON})
				}
				if strings.Contains(f.Flags, "n") && !strings.Contains(f.Flags, "e") {
					null++
				}
			}
		}
		if null > 0 {
			ex.NullWhenUnset = append(ex.NullWhenUnset, PkgCount{pkg, null})
		}
	}
	return ex
}

func (ex *ExceptionsFile) addField(pkg, typ string, f *Field) {
	if f.Conv == "refKeyMap" {
		ex.RefKeyMap = append(ex.RefKeyMap, [3]string{pkg, typ, f.JSON})
	}
	if f.T == "wellKnownRef" {
		ex.WellKnownRef = append(ex.WellKnownRef, [3]string{pkg, typ, f.JSON})
	}
	if f.T == "configMapRef" {
		ex.FromConfig++
	}
	if f.A == "" {
		return
	}
	if f.ARMRef != "" {
		ex.ReferenceRenames++
		return
	}
	if f.Pair != "" {
		return
	}
	if f.A[strings.LastIndexByte(f.A, '/')+1:] != pointerToken(f.JSON) {
		ex.Renames = append(ex.Renames, [4]string{pkg, typ, f.JSON, f.A})
	}
}

func pointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// MarshalJSON writes one key per line, each value compact, as
// exceptions.json is laid out.
func (ex *ExceptionsFile) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{\n")
	first := true
	line := func(key string, v any) error {
		enc, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s: %w", key, err)
		}
		if !first {
			b.WriteString(",\n")
		}
		first = false
		fmt.Fprintf(&b, "%q:%s", key, enc)
		return nil
	}
	rows := func(n int, row func(i int) []any) [][]any {
		out := make([][]any, n)
		for i := range out {
			out[i] = row(i)
		}
		return out
	}
	type kv struct {
		k string
		v any
	}
	for _, e := range []kv{
		{"renames", rows(len(ex.Renames), func(i int) []any { r := ex.Renames[i]; return []any{r[0], r[1], r[2], r[3]} })},
		{"referenceRenameCount", ex.ReferenceRenames},
		{"fromConfigCount", ex.FromConfig},
		{"oneOf", rows(len(ex.OneOf), func(i int) []any { r := ex.OneOf[i]; return []any{r[0], r[1], r[2]} })},
		{"pushNameToVariant", rows(len(ex.PushName), func(i int) []any { r := ex.PushName[i]; return []any{r.Pkg, r.Type, r.Paths} })},
		{"precedence", rows(len(ex.Precedence), func(i int) []any { r := ex.Precedence[i]; return []any{r.Pkg, r.Type, r.Path, r.Fields} })},
		{"emptyIfNil", rows(len(ex.EmptyIfNil), func(i int) []any { r := ex.EmptyIfNil[i]; return []any{r.Pkg, r.Type, r.Paths} })},
		{"nullWhenUnset", rows(len(ex.NullWhenUnset), func(i int) []any { r := ex.NullWhenUnset[i]; return []any{r.Pkg, r.Count} })},
		{"refKeyMap", rows(len(ex.RefKeyMap), func(i int) []any { r := ex.RefKeyMap[i]; return []any{r[0], r[1], r[2]} })},
		{"wellKnownRef", rows(len(ex.WellKnownRef), func(i int) []any { r := ex.WellKnownRef[i]; return []any{r[0], r[1], r[2]} })},
		{"noArmConversion", rows(len(ex.NoARMConversion), func(i int) []any { r := ex.NoARMConversion[i]; return []any{r[0], r[1], r[2]} })},
	} {
		if err := line(e.k, e.v); err != nil {
			return nil, err
		}
	}
	b.WriteString("\n}")
	return b.Bytes(), nil
}
