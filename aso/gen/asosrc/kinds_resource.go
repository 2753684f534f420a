package asosrc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// resource is what one generated resource type says about itself: the
// methods ASO's generator writes for every resource, its Generator
// information comment and its spec's owner and azureName fields.
type resource struct {
	kind          string
	file          string // for messages
	apiVersion    string // GetAPIVersion()
	armType       string // GetType()
	armURI        string // "- ARM URI:" comment
	generatedFrom string // "- Generated from:" comment
	scope         string // GetResourceScope(): resourceGroup, extension, location, tenant
	singleton     *string
	operations    []string // GetSupportedOperations(), upper case
	specType      string
	azureName     bool   // the spec has azureName
	owner         *Owner // nil when the spec has no owner
	uriBuilt      bool   // armURI was built by uriFromType
}

// uriBuiltNote is the URI note of a resource without an ARM URI comment.
const uriBuiltNote = "no ARM URI in the generated code: built from the scope and the ARM type"

// uriFromType builds an ARM URI from the scope and the ARM type, with a
// {<type>Name} placeholder per type segment, for resources whose generated
// code has no ARM URI comment.
func uriFromType(scope, armType string) string {
	segs := strings.Split(armType, "/")
	if len(segs) < 2 {
		return ""
	}
	var b strings.Builder
	switch scope {
	case "location":
		return "/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}"
	case "resourceGroup":
		b.WriteString("/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}")
	case "extension":
		b.WriteString("/{scope}")
	}
	b.WriteString("/providers/" + segs[0])
	for _, t := range segs[1:] {
		b.WriteString("/" + t + "/{" + t + "Name}")
	}
	return b.String()
}

// kindPkg is the parsed Go source of one package: its struct types, their
// doc comments and methods by receiver type.
type kindPkg struct {
	dir     string
	structs map[string]*ast.StructType
	docs    map[string]string
	files   map[string]string // type name → file it is declared in
	methods map[string]map[string]*ast.FuncDecl
	mfiles  map[*ast.FuncDecl]string
	consts  map[string]string // string constants: const X = "v" or const X = T("v")
}

// parseKindPkg parses the files of dir whose names keep returns true.
func parseKindPkg(fsys fs.FS, dir string, keep func(name string) bool) (*kindPkg, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	p := &kindPkg{dir: dir, structs: map[string]*ast.StructType{}, docs: map[string]string{},
		files: map[string]string{}, methods: map[string]map[string]*ast.FuncDecl{}, mfiles: map[*ast.FuncDecl]string{}, consts: map[string]string{}}
	fset := token.NewFileSet()
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || !keep(n) {
			continue
		}
		fn := path.Join(dir, n)
		src, err := fs.ReadFile(fsys, fn)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", fn, err)
		}
		f, err := parser.ParseFile(fset, fn, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", fn, err)
		}
		p.add(f, fn)
	}
	return p, nil
}

func (p *kindPkg) add(f *ast.File, fn string) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			if d.Tok == token.CONST {
				p.addConsts(d)
				continue
			}
			if d.Tok != token.TYPE {
				continue
			}
			for _, s := range d.Specs {
				ts := s.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				p.structs[ts.Name.Name] = st
				p.files[ts.Name.Name] = fn
				doc := ts.Doc
				if doc == nil && len(d.Specs) == 1 {
					doc = d.Doc
				}
				if doc != nil {
					p.docs[ts.Name.Name] = doc.Text()
				}
			}
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) != 1 {
				continue
			}
			r := recvTypeName(d.Recv.List[0].Type)
			if r == "" {
				continue
			}
			if p.methods[r] == nil {
				p.methods[r] = map[string]*ast.FuncDecl{}
			}
			p.methods[r][d.Name.Name] = d
			p.mfiles[d] = fn
		}
	}
}

// addConsts records the string constants of a const declaration.
func (p *kindPkg) addConsts(d *ast.GenDecl) {
	for _, s := range d.Specs {
		vs, ok := s.(*ast.ValueSpec)
		if !ok || len(vs.Names) != len(vs.Values) {
			continue
		}
		for i, v := range vs.Values {
			if str, ok := stringValue(v, nil); ok {
				p.consts[vs.Names[i].Name] = str
			}
		}
	}
}

// stringValue is the value of "v", T("v") or, given consts, a constant's name.
func stringValue(e ast.Expr, consts map[string]string) (string, bool) {
	if c, ok := e.(*ast.CallExpr); ok && len(c.Args) == 1 {
		if _, ok := c.Fun.(*ast.Ident); ok {
			e = c.Args[0]
		}
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.Ident:
		s, ok := consts[e.Name]
		return s, ok
	}
	return "", false
}

// recvTypeName is T for receivers T and *T.
func recvTypeName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// resources reads the generated resources of a parsed API package, sorted by
// kind: every struct type with a GetType method.
func (p *kindPkg) resources() ([]resource, error) {
	var kinds []string
	for t, ms := range p.methods {
		if _, ok := ms["GetType"]; ok {
			if _, ok := p.structs[t]; ok {
				kinds = append(kinds, t)
			}
		}
	}
	sort.Strings(kinds)
	out := make([]resource, 0, len(kinds))
	for _, k := range kinds {
		r, err := p.resource(k)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// resource reads one resource type.
func (p *kindPkg) resource(kind string) (resource, error) {
	r := resource{kind: kind, file: p.files[kind]}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: resource %s: %s", r.file, kind, fmt.Sprintf(format, a...))
	}
	ms := p.methods[kind]
	var err error
	if r.armType, err = p.returnedString(ms["GetType"]); err != nil {
		return r, bad("GetType: %v", err)
	}
	if r.apiVersion, err = p.returnedString(ms["GetAPIVersion"]); err != nil {
		return r, bad("GetAPIVersion: %v", err)
	}
	sel, err := returnedSelector(ms["GetResourceScope"])
	if err != nil {
		return r, bad("GetResourceScope: %v", err)
	}
	scopes := map[string]string{
		"ResourceScopeResourceGroup": "resourceGroup", "ResourceScopeExtension": "extension",
		"ResourceScopeLocation": "location", "ResourceScopeTenant": "tenant",
	}
	if r.scope = scopes[sel]; r.scope == "" {
		return r, bad("GetResourceScope returns genruntime.%s, not one of ResourceScopeResourceGroup, ResourceScopeExtension, ResourceScopeLocation, ResourceScopeTenant", sel)
	}
	if ms["GetSupportedOperations"] == nil {
		// Before v2.4 resources had no such method: ASO sent PUT, GET and
		// DELETE to every resource.
		r.operations = []string{"DELETE", "GET", "PUT"}
	} else if r.operations, err = supportedOperations(ms["GetSupportedOperations"]); err != nil {
		return r, bad("GetSupportedOperations: %v", err)
	}
	// AzureName returns a constant for a singleton, else the spec's field.
	if s, err := p.returnedString(ms["AzureName"]); err == nil {
		r.singleton = &s
	} else if ms["AzureName"] == nil {
		return r, bad("no AzureName method")
	}
	for _, line := range strings.Split(p.docs[kind], "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "- Generated from:"); ok {
			r.generatedFrom = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "- ARM URI:"); ok {
			r.armURI = strings.TrimSpace(v)
		}
	}
	if r.armURI == "" {
		// Some releases (containerservice ManagedCluster in v2.11 to v2.17)
		// generated no Generator information comment for a resource.
		if r.armURI = uriFromType(r.scope, r.armType); r.armURI == "" {
			return r, bad(`no "- ARM URI:" line in its Generator information comment, and ARM type %q is not namespace/type[/type...]`, r.armType)
		}
		r.uriBuilt = true
	}
	if err := p.readSpec(&r); err != nil {
		return r, bad("%v", err)
	}
	return r, nil
}

// readSpec reads the resource's Spec field and, in the spec struct, the
// azureName and owner fields.
func (p *kindPkg) readSpec(r *resource) error {
	for _, f := range p.structs[r.kind].Fields.List {
		if len(f.Names) == 1 && f.Names[0].Name == "Spec" {
			if id, ok := f.Type.(*ast.Ident); ok {
				r.specType = id.Name
			}
		}
	}
	if r.specType == "" {
		return fmt.Errorf("no Spec field of a named type")
	}
	spec := p.structs[r.specType]
	if spec == nil {
		return fmt.Errorf("spec type %s not found", r.specType)
	}
	for _, f := range spec.Fields.List {
		if f.Tag == nil {
			continue
		}
		tagText, err := strconv.Unquote(f.Tag.Value)
		if err != nil {
			continue
		}
		tag := reflect.StructTag(tagText)
		switch name, _, _ := strings.Cut(tag.Get("json"), ","); name {
		case "azureName":
			r.azureName = true
		case "owner":
			switch typeString(f.Type) {
			case "*genruntime.KnownResourceReference":
				r.owner = &Owner{Group: tag.Get("group"), Kind: tag.Get("kind")}
				if r.owner.Group == "" || r.owner.Kind == "" {
					return fmt.Errorf("%s.owner: KnownResourceReference without group and kind tags", r.specType)
				}
			case "*genruntime.ArbitraryOwnerReference":
				r.owner = &Owner{Arbitrary: true}
			default:
				return fmt.Errorf("%s.owner: type %s, want *genruntime.KnownResourceReference or *genruntime.ArbitraryOwnerReference", r.specType, typeString(f.Type))
			}
		}
	}
	return nil
}

// typeString renders simple type expressions: *pkg.Name, pkg.Name, Name.
func typeString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + typeString(e.X)
	case *ast.SelectorExpr:
		return typeString(e.X) + "." + e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return fmt.Sprintf("%T", e)
}

// onlyReturn is the expression of a method whose body is one return statement.
func onlyReturn(fn *ast.FuncDecl) (ast.Expr, error) {
	if fn == nil {
		return nil, fmt.Errorf("method missing")
	}
	if fn.Body == nil || len(fn.Body.List) != 1 {
		return nil, fmt.Errorf("body is not a single return statement")
	}
	ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return nil, fmt.Errorf("body is not a single return statement")
	}
	return ret.Results[0], nil
}

// returnedString is the string constant a method returns: a literal, or
// (releases before v2.11) string(APIVersion_Value), a constant of the package.
func (p *kindPkg) returnedString(fn *ast.FuncDecl) (string, error) {
	e, err := onlyReturn(fn)
	if err != nil {
		return "", err
	}
	s, ok := stringValue(e, p.consts)
	if !ok {
		return "", fmt.Errorf("does not return a string constant")
	}
	return s, nil
}

// returnedSelector is X in a method whose body is return pkg.X.
func returnedSelector(fn *ast.FuncDecl) (string, error) {
	e, err := onlyReturn(fn)
	if err != nil {
		return "", err
	}
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", fmt.Errorf("does not return a package-level constant")
	}
	return s.Sel.Name, nil
}

// supportedOperations reads return []genruntime.ResourceOperation{genruntime.ResourceOperationGet, ...}
// as GET, ... in source order.
func supportedOperations(fn *ast.FuncDecl) ([]string, error) {
	e, err := onlyReturn(fn)
	if err != nil {
		return nil, err
	}
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("does not return a slice literal")
	}
	var ops []string
	for _, el := range cl.Elts {
		s, ok := el.(*ast.SelectorExpr)
		op, found := "", false
		if ok {
			op, found = strings.CutPrefix(s.Sel.Name, "ResourceOperation")
		}
		if !found || op == "" {
			return nil, fmt.Errorf("element %s is not a genruntime.ResourceOperation constant", typeString(el))
		}
		ops = append(ops, strings.ToUpper(op))
	}
	return ops, nil
}
