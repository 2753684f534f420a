package asosrc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// SchemaFile is the conversion facts of one generated API package
// v2/api/<group>/<version>: schema/<group>/<version>.json. Its JSON encoding
// (MarshalJSON) keeps the order the facts were found in: kinds by name, spec
// types breadth-first from the kinds' specs, fields in Go declaration order,
// ARM types by name then breadth-first.
type SchemaFile struct {
	Group      string
	CRDVersion string
	APIVersion string // armApiVersion, from GetAPIVersion()
	Kinds      []KindSchema
	Types      []*Type
	ARMTypes   []*ARMType
}

// KindSchema names a kind's spec type and ARM type (GetType()).
type KindSchema struct {
	Kind, Spec, ARMType string
}

// Type is a Kubernetes spec type reachable from a kind's spec.
type Type struct {
	Name       string
	ARM        string   // ARM struct ConvertToARM returns; "" if the type has no ConvertToARM
	OneOf      bool     // the ARM struct is a one-of (MarshalJSON picks the first non-nil variant)
	NameAt     string   // JSON pointer the resolved azureName is written to (root specs)
	PushName   []string // JSON pointers azureName is also pushed into (resource-level one-ofs)
	Prec       []Prec   // ARM paths written by several spec fields
	EmptyIfNil []string // collections sent empty when unset
	Ctr        []Prec   // intermediate objects whose triggers differ from the fields mapped below them
	Fields     []*Field
}

// Prec is an ARM path written by several spec fields, highest priority first
// (the one ConvertToARM writes last).
type Prec struct {
	Path   string
	Fields []string
}

// Field is one spec field, named by its JSON name.
type Field struct {
	JSON      string
	T         string            // string|bool|int|number|enum|json|object|ref|knownRef|…
	C         string            // list, map, list.list, …
	R         string            // the object type
	E         []json.RawMessage // enum values
	Req       bool              // +kubebuilder:validation:Required
	A         string            // JSON pointer of the ARM value, relative to the enclosing type's ARM object
	Conv      string            // refKeyMap | wellKnown
	ARMRef    string            // armReference tag
	Pair      string            // optionalConfigMapPair tag
	X         string            // never sent: owner | azureName | operatorSpec
	OwnerKind string            // group/kind of a known owner
}

// ARMType is an ARM payload struct of the arm subpackage.
type ARMType struct {
	Name   string
	Fields []ARMField
	OneOf  *OneOf
}

// ARMField is one field of an ARM struct: JSON name, child ARM struct (or ""),
// flags (L/M collections, n no omitempty, e explicit empty collection,
// p pushtoleaf, x noarmconversion).
type ARMField struct {
	JSON, Child, Flags string
}

// OneOf is the discriminator of a one-of ARM struct and its variants (JSON
// name of the variant field, discriminator value) in MarshalJSON order.
type OneOf struct {
	Disc     string
	Variants [][2]string
}

// apiDir maps a group such as "cdn.azure.com" to v2/api/cdn/<version>.
func apiDir(group, version string) string {
	return path.Join("v2", "api", strings.TrimSuffix(group, ".azure.com"), version)
}

// srcTree is an ASO source tree: a file system and the name its files are
// called by in messages (the directory it was opened from, if any).
type srcTree struct {
	fsys fs.FS
	name string
}

func dirTree(root string) srcTree { return srcTree{os.DirFS(root), root} }

// display is the name of the file p of the tree in messages.
func (t srcTree) display(p string) string {
	if t.name == "" {
		return p
	}
	return filepath.Join(t.name, filepath.FromSlash(p))
}

func (t srcTree) isDir(p string) bool {
	fi, err := fs.Stat(t.fsys, p)
	return err == nil && fi.IsDir()
}

// Schema extracts the conversion facts of the generated API package of group
// (e.g. "cdn.azure.com") and version from the ASO source tree at root. It
// parses v2/api/<group>/<version>/*_types_gen.go and
// v2/api/<group>/<version>/arm/*_spec_types_gen.go (before v2.11:
// *_spec_arm_types_gen.go beside them) with go/parser; ASO's code is only
// read, never compiled or run. What it reads:
//
//   - kinds: the structs with a GetType method; their Spec field's type, the
//     string GetType returns (armType) and GetAPIVersion's (armApiVersion);
//   - types, breadth-first from the specs in ASO's file order: each field's
//     JSON name and Go type (t, c, r), the kubebuilder Required and Enum
//     markers of the field and of its named type (req, e), the armReference
//     and optionalConfigMapPair tags (armRef, pair), the owner's group and
//     kind tags (ownerKind);
//   - each type's ConvertToARM body, one statement per ARM property: the
//     struct it returns (arm), which spec field each statement tests and the
//     ARM field it assigns (a, as a JSON pointer of the ARM json names),
//     result.Name = resolved.Name (name), several fields writing one ARM
//     field (prec: a later statement wins, in an if/else-if chain the first
//     branch), references resolved into map keys (conv refKeyMap), azureName
//     written into a one-of variant (pushName), the explicit-empty defaults
//     (emptyIfNil) and the conditions that create intermediate objects (ctr,
//     kept only where they differ from the fields mapped below);
//   - the ARM structs reachable from those: json names in declaration order,
//     omitempty, serializationType and conversion tags (flags), and for a
//     one-of the variants in MarshalJSON order with the discriminator values
//     of UnmarshalJSON.
//
// A write to the result it cannot attribute to a spec field, a write to an
// ARM field that does not exist, a spec field ConvertToARM writes nowhere, an
// unknown runtime type or a one-of without discriminator is an error naming
// the package, type, field and, for statements, file and position.
func Schema(root, group, version string) (*SchemaFile, error) {
	return schema(dirTree(root), group, version)
}

// SchemaFS is Schema on a file system holding an ASO source tree at its
// root, such as a release's tree read from ASO's Git repository.
func SchemaFS(fsys fs.FS, group, version string) (*SchemaFile, error) {
	return schema(srcTree{fsys: fsys}, group, version)
}

func schema(tree srcTree, group, version string) (*SchemaFile, error) {
	dir := apiDir(group, version)
	k8s, err := parseGoPkg(tree, dir, func(n string) bool {
		return strings.HasSuffix(n, "_types_gen.go") && !strings.HasSuffix(n, "_arm_types_gen.go")
	})
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", group, version, err)
	}
	var armPkg *goPkg
	if tree.isDir(path.Join(dir, "arm")) {
		armPkg, err = parseGoPkg(tree, path.Join(dir, "arm"), func(n string) bool { return strings.HasSuffix(n, "_spec_types_gen.go") })
	} else {
		// Releases before v2.11 kept the ARM payload types beside the
		// Kubernetes types, in *_spec_arm_types_gen.go, named X_ARM.
		armPkg, err = parseGoPkg(tree, dir, func(n string) bool { return strings.HasSuffix(n, "_spec_arm_types_gen.go") })
		if err == nil {
			// The enums are declared once, in the ARM files, for both.
			for n, nt := range armPkg.named {
				if _, ok := k8s.named[n]; !ok {
					k8s.named[n] = nt
				}
			}
			armPkg.trimARMSuffix()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", group, version, err)
	}
	x := &schemaExtractor{group: group, version: version, k8s: k8s, arm: armPkg}
	s, err := x.run()
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", group, version, err)
	}
	return s, nil
}

// Schemas extracts every API package of the tree at root, in Packages order.
func Schemas(root string) ([]*SchemaFile, error) {
	return schemas(dirTree(root))
}

// SchemasFS is Schemas on a file system holding an ASO source tree.
func SchemasFS(fsys fs.FS) ([]*SchemaFile, error) {
	return schemas(srcTree{fsys: fsys})
}

func schemas(tree srcTree) ([]*SchemaFile, error) {
	pkgs, err := packages(tree)
	if err != nil {
		return nil, err
	}
	out := make([]*SchemaFile, 0, len(pkgs))
	for _, p := range pkgs {
		s, err := schema(tree, p[0], p[1])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Path is where the file goes among the facts: schema/<group>/<version>.json.
func (s *SchemaFile) Path() string {
	return "schema/" + s.Group + "/" + s.CRDVersion + ".json"
}

// JSON is the content of schema/<group>/<version>.json: the JSON and a
// newline, byte for byte as the shared facts have it.
func (s *SchemaFile) JSON() ([]byte, error) {
	b, err := s.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", s.Path(), err)
	}
	return append(b, '\n'), nil
}

// JSON is the content of exceptions.json: the JSON and a newline.
func (ex *ExceptionsFile) JSON() ([]byte, error) {
	b, err := ex.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode exceptions.json: %w", err)
	}
	return append(b, '\n'), nil
}

// Packages lists the generated API packages of the tree at root as
// (group, version) pairs, sorted: every v2/api/<g>/<v> with ARM payload
// types (an arm subpackage, or *_spec_arm_types_gen.go before v2.11).
func Packages(root string) ([][2]string, error) {
	return packages(dirTree(root))
}

// PackagesFS is Packages on a file system holding an ASO source tree.
func PackagesFS(fsys fs.FS) ([][2]string, error) {
	return packages(srcTree{fsys: fsys})
}

func packages(tree srcTree) ([][2]string, error) {
	dirs, err := fs.Glob(tree.fsys, "v2/api/*/*")
	if err != nil {
		return nil, fmt.Errorf("list API packages: %w", err)
	}
	var out [][2]string
	for _, v := range dirs {
		if !isAPIPackage(tree, v) {
			continue
		}
		g := path.Base(path.Dir(v))
		out = append(out, [2]string{g + ".azure.com", path.Base(v)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("no API packages under %s (is this an ASO source tree?)", tree.display("v2/api"))
	}
	return out, nil
}

// isAPIPackage reports whether dir holds ARM payload types.
func isAPIPackage(tree srcTree, dir string) bool {
	if tree.isDir(path.Join(dir, "arm")) {
		return true
	}
	old, _ := fs.Glob(tree.fsys, path.Join(dir, "*_spec_arm_types_gen.go"))
	return len(old) > 0
}

// MarshalJSON writes the schema file compactly, in the order of SchemaFile.
func (s *SchemaFile) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"group":`)
	jsonStr(&b, s.Group)
	b.WriteString(`,"crdVersion":`)
	jsonStr(&b, s.CRDVersion)
	b.WriteString(`,"armApiVersion":`)
	jsonStr(&b, s.APIVersion)
	b.WriteString(`,"kinds":{`)
	for i, k := range s.Kinds {
		jsonComma(&b, i)
		jsonStr(&b, k.Kind)
		b.WriteString(`:{"spec":`)
		jsonStr(&b, k.Spec)
		b.WriteString(`,"armType":`)
		jsonStr(&b, k.ARMType)
		b.WriteByte('}')
	}
	b.WriteString(`},"types":{`)
	for i, t := range s.Types {
		jsonComma(&b, i)
		jsonStr(&b, t.Name)
		b.WriteByte(':')
		t.encode(&b)
	}
	b.WriteString(`},"armTypes":{`)
	for i, t := range s.ARMTypes {
		jsonComma(&b, i)
		jsonStr(&b, t.Name)
		b.WriteByte(':')
		t.encode(&b)
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}

func (t *Type) encode(b *bytes.Buffer) {
	b.WriteByte('{')
	if t.ARM != "" {
		b.WriteString(`"arm":`)
		jsonStr(b, t.ARM)
		b.WriteByte(',')
	}
	if t.OneOf {
		b.WriteString(`"oneOf":1,`)
	}
	if t.NameAt != "" {
		b.WriteString(`"name":`)
		jsonStr(b, t.NameAt)
		b.WriteByte(',')
	}
	if len(t.PushName) > 0 {
		b.WriteString(`"pushName":`)
		jsonStrs(b, t.PushName)
		b.WriteByte(',')
	}
	if len(t.Prec) > 0 {
		b.WriteString(`"prec":{`)
		for i, p := range t.Prec {
			jsonComma(b, i)
			jsonStr(b, p.Path)
			b.WriteByte(':')
			jsonStrs(b, p.Fields)
		}
		b.WriteString("},")
	}
	if len(t.EmptyIfNil) > 0 {
		b.WriteString(`"emptyIfNil":`)
		jsonStrs(b, t.EmptyIfNil)
		b.WriteByte(',')
	}
	if len(t.Ctr) > 0 {
		b.WriteString(`"ctr":{`)
		for i, c := range t.Ctr {
			jsonComma(b, i)
			jsonStr(b, c.Path)
			b.WriteByte(':')
			jsonStrs(b, c.Fields)
		}
		b.WriteString("},")
	}
	b.WriteString(`"f":{`)
	for i, f := range t.Fields {
		jsonComma(b, i)
		jsonStr(b, f.JSON)
		b.WriteByte(':')
		f.encode(b)
	}
	b.WriteString("}}")
}

func (f *Field) encode(b *bytes.Buffer) {
	b.WriteString(`{"t":`)
	jsonStr(b, f.T)
	kv := func(k, v string) {
		if v != "" {
			b.WriteString(`,"` + k + `":`)
			jsonStr(b, v)
		}
	}
	kv("c", f.C)
	kv("r", f.R)
	if len(f.E) > 0 {
		b.WriteString(`,"e":[`)
		for i, e := range f.E {
			jsonComma(b, i)
			b.Write(e)
		}
		b.WriteByte(']')
	}
	if f.Req {
		b.WriteString(`,"req":1`)
	}
	kv("a", f.A)
	kv("conv", f.Conv)
	kv("armRef", f.ARMRef)
	kv("pair", f.Pair)
	kv("x", f.X)
	kv("ownerKind", f.OwnerKind)
	b.WriteByte('}')
}

func (t *ARMType) encode(b *bytes.Buffer) {
	b.WriteString(`{"f":[`)
	for i, f := range t.Fields {
		jsonComma(b, i)
		b.WriteByte('[')
		jsonStr(b, f.JSON)
		switch {
		case f.Flags != "":
			b.WriteByte(',')
			if f.Child == "" {
				b.WriteByte('0')
			} else {
				jsonStr(b, f.Child)
			}
			b.WriteByte(',')
			jsonStr(b, f.Flags)
		case f.Child != "":
			b.WriteByte(',')
			jsonStr(b, f.Child)
		}
		b.WriteByte(']')
	}
	b.WriteByte(']')
	if t.OneOf != nil {
		b.WriteString(`,"oneOf":{"disc":`)
		jsonStr(b, t.OneOf.Disc)
		b.WriteString(`,"variants":[`)
		for i, v := range t.OneOf.Variants {
			jsonComma(b, i)
			jsonStrs(b, v[:])
		}
		b.WriteString("]}")
	}
	b.WriteByte('}')
}

func jsonComma(b *bytes.Buffer, i int) {
	if i > 0 {
		b.WriteByte(',')
	}
}

// str writes a JSON string as Python's json.dumps does for ASCII input
// (the facts are ASCII; no HTML escaping).
func jsonStr(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s)
	if bytes.ContainsAny(enc, `\`) {
		// json.Marshal escapes <, >, & as \u00XX; undo that, keep the rest.
		enc = bytes.ReplaceAll(enc, []byte(`\u003c`), []byte("<"))
		enc = bytes.ReplaceAll(enc, []byte(`\u003e`), []byte(">"))
		enc = bytes.ReplaceAll(enc, []byte(`\u0026`), []byte("&"))
	}
	b.Write(enc)
}

func jsonStrs(b *bytes.Buffer, ss []string) {
	b.WriteByte('[')
	for i, s := range ss {
		jsonComma(b, i)
		jsonStr(b, s)
	}
	b.WriteByte(']')
}

// stripPtr removes pointer stars from a type expression.
func stripPtr(e ast.Expr) ast.Expr {
	for {
		s, ok := e.(*ast.StarExpr)
		if !ok {
			return e
		}
		e = s.X
	}
}
