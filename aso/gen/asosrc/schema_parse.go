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

// goPkg is what the schema extractor needs from one parsed Go package: its
// named types and the methods declared on them.
type goPkg struct {
	dir     string
	fset    *token.FileSet
	structs map[string]*ast.StructType
	pos     map[string]token.Pos  // where each type is declared (files are parsed in name order)
	named   map[string]*namedType // non-struct named types (enums and aliases)
	methods map[string]map[string]*ast.FuncDecl
	consts  map[string]string // constant name → its string value (unquoted)
}

// namedType is a non-struct type declaration such as `type X string` with
// its doc comment (where the kubebuilder Enum marker sits).
type namedType struct {
	underlying ast.Expr
	doc        string
}

// parseGoPkg parses the files of dir whose names satisfy keep. Files are read
// in name order so that anything derived from them is deterministic.
func parseGoPkg(tree srcTree, dir string, keep func(name string) bool) (*goPkg, error) {
	entries, err := fs.ReadDir(tree.fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read package dir: %w", err)
	}
	p := &goPkg{
		dir: tree.display(dir), fset: token.NewFileSet(),
		structs: map[string]*ast.StructType{}, pos: map[string]token.Pos{}, named: map[string]*namedType{},
		methods: map[string]map[string]*ast.FuncDecl{}, consts: map[string]string{},
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || !keep(n) {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		src, err := fs.ReadFile(tree.fsys, path.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", tree.display(path.Join(dir, n)), err)
		}
		f, err := parser.ParseFile(p.fset, tree.display(path.Join(dir, n)), src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse: %w", err)
		}
		p.add(f)
	}
	return p, nil
}

func (p *goPkg) add(f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			p.addGen(d)
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) != 1 {
				continue
			}
			rt := d.Recv.List[0].Type
			if s, ok := rt.(*ast.StarExpr); ok {
				rt = s.X
			}
			id, ok := rt.(*ast.Ident)
			if !ok {
				continue
			}
			if p.methods[id.Name] == nil {
				p.methods[id.Name] = map[string]*ast.FuncDecl{}
			}
			p.methods[id.Name][d.Name.Name] = d
		}
	}
}

func (p *goPkg) addGen(d *ast.GenDecl) {
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			p.pos[s.Name.Name] = s.Pos()
			if st, ok := s.Type.(*ast.StructType); ok {
				p.structs[s.Name.Name] = st
				continue
			}
			doc := d.Doc
			if s.Doc != nil {
				doc = s.Doc
			}
			p.named[s.Name.Name] = &namedType{underlying: s.Type, doc: commentText(doc)}
		case *ast.ValueSpec:
			if d.Tok != token.CONST {
				continue
			}
			for i, n := range s.Names {
				if i < len(s.Values) {
					if v, ok := constString(s.Values[i]); ok {
						p.consts[n.Name] = v
					}
				}
			}
		}
	}
}

// constString reads "x" or T("x").
func constString(e ast.Expr) (string, bool) {
	if c, ok := e.(*ast.CallExpr); ok && len(c.Args) == 1 {
		e = c.Args[0]
	}
	if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
		v, err := strconv.Unquote(b.Value)
		return v, err == nil
	}
	return "", false
}

// commentText returns the raw lines of a comment group, markers included
// (ast.CommentGroup.Text drops //+marker lines without a space).
func commentText(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range g.List {
		b.WriteString(strings.TrimSpace(strings.TrimPrefix(c.Text, "//")))
		b.WriteByte('\n')
	}
	return b.String()
}

// hasMarker reports whether a doc comment holds the kubebuilder marker m.
func hasMarker(doc, m string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l == m {
			return true
		}
	}
	return false
}

// markerValue returns the value of `+name=value` in a doc comment.
func markerValue(doc, name string) (string, bool) {
	for _, l := range strings.Split(doc, "\n") {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// structTag returns the value of key in a field's tag.
func structTag(f *ast.Field, key string) string {
	if f.Tag == nil {
		return ""
	}
	raw, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return ""
	}
	return reflect.StructTag(raw).Get(key)
}

// jsonName returns a field's JSON name and whether it has omitempty; ok is
// false for fields without a name (embedded) or tagged "-".
func jsonName(f *ast.Field) (name string, omitempty, ok bool) {
	if len(f.Names) != 1 {
		return "", false, false
	}
	tag := structTag(f, "json")
	parts := strings.Split(tag, ",")
	name = parts[0]
	if name == "-" {
		return "", false, false
	}
	if name == "" {
		name = f.Names[0].Name
	}
	for _, o := range parts[1:] {
		if o == "omitempty" {
			omitempty = true
		}
	}
	return name, omitempty, true
}

// trimARMSuffix renames the _ARM types of a pre-v2.11 package (Foo_Spec_ARM)
// to the names the arm subpackage uses since (Foo_Spec), in declarations and
// in the type expressions of fields, so that the facts of every release name
// ARM types alike.
func (p *goPkg) trimARMSuffix() {
	rename := func(n string) string { return strings.TrimSuffix(n, "_ARM") }
	structs := map[string]*ast.StructType{}
	for n, st := range p.structs {
		structs[rename(n)] = st
		for _, f := range st.Fields.List {
			ast.Inspect(f.Type, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					id.Name = rename(id.Name)
				}
				return true
			})
		}
	}
	p.structs = structs
	methods := map[string]map[string]*ast.FuncDecl{}
	for n, m := range p.methods {
		methods[rename(n)] = m
	}
	p.methods = methods
}
