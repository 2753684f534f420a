package asosrc

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/token"
	"sort"
	"strings"
)

// extractor builds one SchemaFile from a parsed API package and its arm
// subpackage.
type schemaExtractor struct {
	group, version string
	k8s, arm       *goPkg
}

func (x *schemaExtractor) run() (*SchemaFile, error) {
	s := &SchemaFile{Group: x.group, CRDVersion: x.version}
	kinds, err := x.kinds()
	if err != nil {
		return nil, err
	}
	s.Kinds = kinds
	for _, k := range kinds {
		v, err := x.resourceString(k.Kind, "GetAPIVersion")
		if err != nil {
			return nil, err
		}
		if s.APIVersion != "" && s.APIVersion != v {
			return nil, fmt.Errorf("kind %s: api-version %q, other kinds say %q", k.Kind, v, s.APIVersion)
		}
		s.APIVersion = v
	}

	// Spec types breadth-first from the specs, sorted by name.
	var roots []string
	seen := map[string]bool{}
	for _, k := range kinds {
		if !seen[k.Spec] {
			seen[k.Spec] = true
			roots = append(roots, k.Spec)
		}
	}
	// In the order ASO declares them: by file name, then position.
	sort.Slice(roots, func(i, j int) bool { return x.k8s.pos[roots[i]] < x.k8s.pos[roots[j]] })
	queue := roots
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		t, err := x.specType(name)
		if err != nil {
			return nil, err
		}
		s.Types = append(s.Types, t)
		for _, f := range t.Fields {
			if f.R != "" && !seen[f.R] {
				seen[f.R] = true
				queue = append(queue, f.R)
			}
		}
	}

	// ARM types: those the spec types convert to, by name, then what they
	// reach, breadth-first.
	var armRoots []string
	armSeen := map[string]bool{}
	for _, t := range s.Types {
		if t.ARM != "" && !armSeen[t.ARM] {
			armSeen[t.ARM] = true
			armRoots = append(armRoots, t.ARM)
		}
	}
	sort.Strings(armRoots)
	armByName := map[string]*ARMType{}
	queue = armRoots
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		at, err := x.armType(name)
		if err != nil {
			return nil, err
		}
		armByName[name] = at
		s.ARMTypes = append(s.ARMTypes, at)
		for _, f := range at.Fields {
			if f.Child != "" && !armSeen[f.Child] {
				armSeen[f.Child] = true
				queue = append(queue, f.Child)
			}
		}
	}
	for _, t := range s.Types {
		if at := armByName[t.ARM]; at != nil && at.OneOf != nil {
			t.OneOf = true
		}
	}
	return s, nil
}

// kinds finds the resources of the package: structs with a GetType method
// and a Spec field, sorted by kind.
func (x *schemaExtractor) kinds() ([]KindSchema, error) {
	var out []KindSchema
	for name, st := range x.k8s.structs {
		if x.k8s.methods[name]["GetType"] == nil {
			continue
		}
		var spec string
		for _, f := range st.Fields.List {
			if len(f.Names) == 1 && f.Names[0].Name == "Spec" {
				if id, ok := stripPtr(f.Type).(*ast.Ident); ok {
					spec = id.Name
				}
			}
		}
		if spec == "" {
			return nil, fmt.Errorf("resource %s: no Spec field", name)
		}
		armType, err := x.resourceString(name, "GetType")
		if err != nil {
			return nil, err
		}
		out = append(out, KindSchema{Kind: name, Spec: spec, ARMType: armType})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no resources (types with GetType) in %s", x.k8s.dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out, nil
}

// resourceString returns the string a method such as GetType returns:
// `return "Microsoft.Cdn/profiles"`.
func (x *schemaExtractor) resourceString(kind, method string) (string, error) {
	fd := x.k8s.methods[kind][method]
	if fd == nil || fd.Body == nil {
		return "", fmt.Errorf("resource %s: no %s method", kind, method)
	}
	for _, st := range fd.Body.List {
		r, ok := st.(*ast.ReturnStmt)
		if !ok || len(r.Results) != 1 {
			continue
		}
		e := r.Results[0]
		if c, ok := e.(*ast.CallExpr); ok && len(c.Args) == 1 {
			e = c.Args[0] // string(APIVersion_Value) before v2.11
		}
		if v, ok := constString(e); ok {
			return v, nil
		}
		if id, ok := e.(*ast.Ident); ok {
			if v, ok := x.k8s.consts[id.Name]; ok {
				return v, nil
			}
		}
	}
	return "", fmt.Errorf("resource %s: %s does not return a string literal", kind, method)
}

// specType reads one spec struct and its ConvertToARM method.
func (x *schemaExtractor) specType(name string) (*Type, error) {
	st := x.k8s.structs[name]
	if st == nil {
		return nil, fmt.Errorf("spec type %s not found", name)
	}
	t := &Type{Name: name}
	byGo := map[string]*Field{}
	for _, f := range st.Fields.List {
		jn, _, ok := jsonName(f)
		if !ok {
			continue
		}
		fld, err := x.specField(f, jn)
		if err != nil {
			return nil, fmt.Errorf("type %s field %s: %w", name, f.Names[0].Name, err)
		}
		t.Fields = append(t.Fields, fld)
		byGo[f.Names[0].Name] = fld
	}
	if fd := x.k8s.methods[name]["ConvertToARM"]; fd != nil {
		if err := x.convertToARM(t, fd, byGo); err != nil {
			return nil, fmt.Errorf("type %s ConvertToARM: %w", name, err)
		}
		// Every field is either sent somewhere or known not to be sent;
		// anything else is a ConvertToARM shape this extractor misread.
		for _, f := range t.Fields {
			if f.A == "" && f.X == "" {
				return nil, fmt.Errorf("type %s field %s: ConvertToARM writes it nowhere this extractor recognises", name, f.JSON)
			}
		}
	}
	return t, nil
}

// genruntimeKinds maps the ASO runtime types a spec field can hold to the
// field kinds of the facts.
var genruntimeKinds = map[string]string{
	"ResourceReference":          "ref",
	"KnownResourceReference":     "knownRef",
	"ArbitraryOwnerReference":    "arbitraryOwnerRef",
	"WellKnownResourceReference": "wellKnownRef",
	"SecretReference":            "secretRef",
	"SecretMapReference":         "secretMapRef",
	"ConfigMapReference":         "configMapRef",
	"SecretDestination":          "secretDest",
	"ConfigMapDestination":       "configMapDest",
	"DestinationExpression":      "destExpr",
	"JSON":                       "json",
}

func (x *schemaExtractor) specField(f *ast.Field, jn string) (*Field, error) {
	fld := &Field{JSON: jn}
	doc := commentText(f.Doc)
	fld.Req = hasMarker(doc, "+kubebuilder:validation:Required")
	fld.ARMRef = structTag(f, "armReference")
	fld.Pair = structTag(f, "optionalConfigMapPair")
	var colls []string
	e := stripPtr(f.Type)
loop:
	for {
		switch tt := e.(type) {
		case *ast.ArrayType:
			colls = append(colls, "list")
			e = stripPtr(tt.Elt)
		case *ast.MapType:
			colls = append(colls, "map")
			e = stripPtr(tt.Value)
		case *ast.Ident:
			// A named list or map type stands for its definition.
			nt, ok := x.k8s.named[tt.Name]
			if !ok || !isCollection(nt.underlying) {
				break loop
			}
			e = nt.underlying
		default:
			break loop
		}
	}
	fld.C = strings.Join(colls, ".")
	if v, ok := markerValue(doc, "+kubebuilder:validation:Enum"); ok {
		vals, err := enumValues(v)
		if err != nil {
			return nil, err
		}
		fld.E = vals
	}
	switch tt := e.(type) {
	case *ast.Ident:
		if err := x.identKind(fld, tt.Name); err != nil {
			return nil, err
		}
	case *ast.SelectorExpr:
		k, ok := genruntimeKinds[tt.Sel.Name]
		if !ok {
			return nil, fmt.Errorf("unknown type %s.%s", tt.X, tt.Sel.Name)
		}
		fld.T = k
	default:
		return nil, fmt.Errorf("unsupported type expression %T", e)
	}
	switch {
	case fld.T == "knownRef" || fld.T == "arbitraryOwnerRef":
		if jn == "owner" {
			fld.X = "owner"
			if g, k := structTag(f, "group"), structTag(f, "kind"); g != "" && k != "" {
				fld.OwnerKind = g + "/" + k
			}
		}
	case jn == "azureName" && fld.T == "string":
		fld.X = "azureName"
	case jn == "operatorSpec":
		fld.X = "operatorSpec"
	case fld.T == "wellKnownRef":
		fld.Conv = "wellKnown"
	}
	return fld, nil
}

// identKind classifies a named type: a Go basic type, a struct of the
// package (object), or a named string/number type (enum when it carries the
// kubebuilder Enum marker).
func (x *schemaExtractor) identKind(fld *Field, name string) error {
	switch name {
	case "string":
		fld.T = "string"
		return nil
	case "bool":
		fld.T = "bool"
		return nil
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		fld.T = "int"
		return nil
	case "float32", "float64":
		fld.T = "number"
		return nil
	}
	if _, ok := x.k8s.structs[name]; ok {
		fld.T, fld.R = "object", name
		return nil
	}
	nt, ok := x.k8s.named[name]
	if !ok {
		return fmt.Errorf("type %s not found", name)
	}
	if v, ok := markerValue(nt.doc, "+kubebuilder:validation:Enum"); ok {
		vals, err := enumValues(v)
		if err != nil {
			return fmt.Errorf("type %s: %w", name, err)
		}
		fld.E = vals
	}
	id, ok := nt.underlying.(*ast.Ident)
	if !ok {
		return fmt.Errorf("type %s: unsupported underlying type", name)
	}
	if err := x.identKind(fld, id.Name); err != nil {
		return err
	}
	if fld.T == "string" {
		// A named string type is an enum, with or without its values.
		fld.T = "enum"
	}
	return nil
}

// enumValues parses a kubebuilder Enum marker value: {"a","b"} or {1,2}.
func enumValues(v string) ([]json.RawMessage, error) {
	if !strings.HasPrefix(v, "{") || !strings.HasSuffix(v, "}") {
		return nil, fmt.Errorf("enum marker %q", v)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte("["+v[1:len(v)-1]+"]"), &raw); err != nil {
		return nil, fmt.Errorf("enum marker %q: %w", v, err)
	}
	return raw, nil
}

// armType reads one struct of the arm subpackage and, for a one-of, its
// MarshalJSON and UnmarshalJSON.
func (x *schemaExtractor) armType(name string) (*ARMType, error) {
	st := x.arm.structs[name]
	if st == nil {
		return nil, fmt.Errorf("arm type %s not found", name)
	}
	at := &ARMType{Name: name}
	goToJSON := map[string]string{}
	for _, f := range st.Fields.List {
		jn, omitempty, ok := jsonName(f)
		if !ok {
			continue
		}
		goToJSON[f.Names[0].Name] = jn
		af := ARMField{JSON: jn}
		var flags strings.Builder
		e := stripPtr(f.Type)
	loop:
		for {
			switch tt := e.(type) {
			case *ast.ArrayType:
				flags.WriteByte('L')
				e = stripPtr(tt.Elt)
			case *ast.MapType:
				flags.WriteByte('M')
				e = stripPtr(tt.Value)
			case *ast.Ident:
				nt, ok := x.arm.named[tt.Name]
				if !ok || !isCollection(nt.underlying) {
					break loop
				}
				e = nt.underlying
			default:
				break loop
			}
		}
		if id, ok := e.(*ast.Ident); ok {
			if _, isStruct := x.arm.structs[id.Name]; isStruct {
				af.Child = id.Name
			}
		}
		if !omitempty {
			// Only collections are sent as null when unset; a struct or
			// scalar without omitempty is an ASO one-of discriminator
			// or name, always set.
			if flags.Len() > 0 {
				flags.WriteByte('n')
			}
		}
		if structTag(f, "serializationType") == "explicitEmptyCollection" {
			flags.WriteByte('e')
		}
		switch structTag(f, "conversion") {
		case "pushtoleaf":
			flags.WriteByte('p')
		case "noarmconversion":
			flags.WriteByte('x')
		}
		af.Flags = flags.String()
		at.Fields = append(at.Fields, af)
	}
	if fd := x.arm.methods[name]["MarshalJSON"]; fd != nil {
		o, err := oneOf(fd, x.arm.methods[name]["UnmarshalJSON"], goToJSON)
		if err != nil {
			return nil, fmt.Errorf("arm type %s: %w", name, err)
		}
		at.OneOf = o
	}
	return at, nil
}

// oneOf reads a one-of's variants from MarshalJSON (`if x.F != nil { return
// json.Marshal(x.F) }`, in order) and the discriminator from UnmarshalJSON
// (`discriminator := rawJson["name"]`, `if discriminator == "V" { x.F = … }`).
func oneOf(marshal, unmarshal *ast.FuncDecl, goToJSON map[string]string) (*OneOf, error) {
	o := &OneOf{}
	var order []string
	for _, st := range marshal.Body.List {
		is, ok := st.(*ast.IfStmt)
		if !ok {
			continue
		}
		if f := nilCheckField(is.Cond); f != "" {
			order = append(order, f)
		}
	}
	if unmarshal == nil {
		return nil, fmt.Errorf("MarshalJSON without UnmarshalJSON")
	}
	discValue := map[string]string{}
	ast.Inspect(unmarshal.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if len(n.Lhs) == 1 && len(n.Rhs) == 1 {
				if id, ok := n.Lhs[0].(*ast.Ident); ok && id.Name == "discriminator" {
					if ix, ok := n.Rhs[0].(*ast.IndexExpr); ok {
						if v, ok := constString(ix.Index); ok {
							o.Disc = v
						}
					}
				}
			}
		case *ast.IfStmt:
			be, ok := n.Cond.(*ast.BinaryExpr)
			if !ok || be.Op != token.EQL {
				return true
			}
			if id, ok := be.X.(*ast.Ident); !ok || id.Name != "discriminator" {
				return true
			}
			v, ok := constString(be.Y)
			if !ok || len(n.Body.List) == 0 {
				return true
			}
			if as, ok := n.Body.List[0].(*ast.AssignStmt); ok && len(as.Lhs) == 1 {
				if sel, ok := as.Lhs[0].(*ast.SelectorExpr); ok {
					discValue[sel.Sel.Name] = v
				}
			}
		}
		return true
	})
	if o.Disc == "" {
		return nil, fmt.Errorf("one-of without discriminator")
	}
	for _, f := range order {
		jn, ok := goToJSON[f]
		if !ok {
			return nil, fmt.Errorf("one-of variant %s is not a field", f)
		}
		v, ok := discValue[f]
		if !ok {
			return nil, fmt.Errorf("one-of variant %s has no discriminator value", f)
		}
		o.Variants = append(o.Variants, [2]string{jn, v})
	}
	return o, nil
}

// nilCheckField returns F for the condition `x.F != nil`.
func nilCheckField(e ast.Expr) string {
	be, ok := e.(*ast.BinaryExpr)
	if !ok || be.Op != token.NEQ {
		return ""
	}
	if id, ok := be.Y.(*ast.Ident); !ok || id.Name != "nil" {
		return ""
	}
	if sel, ok := be.X.(*ast.SelectorExpr); ok {
		return sel.Sel.Name
	}
	return ""
}

func isCollection(e ast.Expr) bool {
	switch e.(type) {
	case *ast.ArrayType, *ast.MapType:
		return true
	}
	return false
}
