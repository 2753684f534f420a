package asosrc

import (
	"fmt"
	"go/ast"
	"go/token"
	"sort"
	"strings"
)

// resultWrite is one assignment to the ARM result in a ConvertToARM body.
type resultWrite struct {
	path   []string // Go field names from result, indexes dropped
	rhs    ast.Expr
	inElse bool // in the else branch of an if (the explicit-empty default)
}

// convertToARM reads a ConvertToARM method: which ARM struct it returns, and
// for each top-level statement which spec field it reads and which ARM
// field it writes. The generator writes one statement per ARM property
// ("// Set property …"), guarded by the spec field.
func (x *schemaExtractor) convertToARM(t *Type, fd *ast.FuncDecl, byGo map[string]*Field) error {
	if fd.Recv == nil || len(fd.Recv.List[0].Names) != 1 {
		return fmt.Errorf("no receiver name")
	}
	recv := fd.Recv.List[0].Names[0].Name
	type writer struct {
		field string
		rank  int
	}
	type target struct {
		ptr     string
		writers []writer
	}
	var targets []*target
	byPtr := map[string]*target{}
	temps := map[string][]string{}
	var ctrs []Prec // container path → the fields whose presence creates it
	for _, u := range splitElseIf(fd.Body.List) {
		st := u.st
		if arm, ok := resultInit(st); ok {
			t.ARM = arm
			continue
		}
		if isContainerInit(st) {
			if err := x.containerTriggers(t, st, recv, byGo, &ctrs); err != nil {
				return err
			}
			continue
		}
		writes := resultWrites(st)
		fields := recvFields(st, recv)
		if len(writes) == 0 {
			// A temporary filled from a spec field, written to the
			// result by a later statement.
			for _, v := range assignedIdents(st) {
				temps[v] = fields
			}
			continue
		}
		if len(fields) == 0 && len(writes) == 1 {
			if id, ok := writes[0].rhs.(*ast.Ident); ok {
				fields = temps[id.Name]
			}
		}
		if len(fields) == 0 {
			switch {
			case len(writes) == 1 && isSelector(writes[0].rhs, "resolved", "Name"):
				p, err := x.pointer(t.ARM, writes[0].path)
				if err != nil {
					return err
				}
				t.NameAt = p
				continue
			case isResultNilCheck(st):
				// if result.X == nil { result.X = []T{} }: explicit empty collection.
				for _, w := range writes {
					p, err := x.pointer(t.ARM, w.path)
					if err != nil {
						return err
					}
					t.EmptyIfNil = appendNew(t.EmptyIfNil, p)
				}
				continue
			}
			return fmt.Errorf("statement at %s writes the result but reads no spec field", x.k8s.fset.Position(st.Pos()))
		}
		owner := byGo[fields[0]]
		if owner == nil {
			return fmt.Errorf("statement at %s reads %s, not a spec field", x.k8s.fset.Position(st.Pos()), fields[0])
		}
		if rs, ok := st.(*ast.RangeStmt); ok && isSelector(rs.X, recv, fields[0]) && looksUpKeys(rs.Body) {
			owner.Conv = "refKeyMap"
		}
		for _, w := range writes {
			p, err := x.pointer(t.ARM, w.path)
			if err != nil {
				return fmt.Errorf("%s: %w", x.k8s.fset.Position(st.Pos()), err)
			}
			switch {
			case fields[0] != "AzureName" && isSelector(w.rhs, recv, "AzureName"):
				t.PushName = appendNew(t.PushName, p)
				continue
			case w.inElse:
				t.EmptyIfNil = appendNew(t.EmptyIfNil, p)
				continue
			}
			if owner.A != "" && owner.A != p {
				return fmt.Errorf("spec field %s written to %s and %s", owner.JSON, owner.A, p)
			}
			owner.A = p
			tg := byPtr[p]
			if tg == nil {
				tg = &target{ptr: p}
				byPtr[p] = tg
				targets = append(targets, tg)
			}
			// A later statement overwrites an earlier one; in an
			// if/else-if chain the first branch taken wins.
			rank := u.index*1000 - u.branch
			known := false
			for _, wr := range tg.writers {
				known = known || wr.field == owner.JSON
			}
			if !known {
				tg.writers = append(tg.writers, writer{owner.JSON, rank})
			}
		}
	}
	for _, tg := range targets {
		if len(tg.writers) < 2 {
			continue
		}
		sort.SliceStable(tg.writers, func(a, b int) bool { return tg.writers[a].rank > tg.writers[b].rank })
		prio := make([]string, 0, len(tg.writers))
		for _, w := range tg.writers {
			prio = append(prio, w.field)
		}
		t.Prec = append(t.Prec, Prec{Path: tg.ptr, Fields: prio})
	}
	// The intermediate objects are created when one of their fields is
	// set; keep the triggers only where they are not exactly the fields
	// mapped below the object.
	for _, c := range ctrs {
		var mapped []string
		for _, f := range t.Fields {
			if strings.HasPrefix(f.A, c.Path+"/") {
				mapped = append(mapped, f.JSON)
			}
		}
		if !sameSet(mapped, c.Fields) {
			t.Ctr = append(t.Ctr, c)
		}
	}
	return nil
}

// unit is a top-level statement of ConvertToARM, or one branch of an
// if/else-if chain (branch counts from 0).
type convUnit struct {
	st     ast.Stmt
	index  int // of the top-level statement
	branch int
}

// splitElseIf splits `if a {…} else if b {…}` into its branches, so that each
// is read with the spec field its condition tests. A final plain else stays
// with its branch (it writes the explicit empty default).
func splitElseIf(list []ast.Stmt) []convUnit {
	var out []convUnit
	for i, st := range list {
		is, ok := st.(*ast.IfStmt)
		for b := 0; ok; b++ {
			next, chained := is.Else.(*ast.IfStmt)
			if !chained {
				out = append(out, convUnit{is, i, b})
				break
			}
			cp := *is
			cp.Else = nil
			out = append(out, convUnit{&cp, i, b})
			is = next
		}
		if !ok {
			out = append(out, convUnit{st, i, 0})
		}
	}
	return out
}

// assignedIdents lists the local variables a statement assigns.
func assignedIdents(st ast.Stmt) []string {
	var out []string
	ast.Inspect(st, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok {
			for _, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
					out = append(out, id.Name)
				}
			}
		}
		return true
	})
	return out
}

// isResultNilCheck matches `if result.X == nil { … }`.
func isResultNilCheck(st ast.Stmt) bool {
	is, ok := st.(*ast.IfStmt)
	if !ok {
		return false
	}
	be, ok := is.Cond.(*ast.BinaryExpr)
	if !ok || be.Op != token.EQL {
		return false
	}
	root, _ := selectorPath(be.X)
	id, ok := be.Y.(*ast.Ident)
	return root == "result" && ok && id.Name == "nil"
}

// containerTriggers records the fields tested before an intermediate ARM
// object is created: `if s.A != nil || len(s.B) > 0 { result.P = &arm.P{} }`.
func (x *schemaExtractor) containerTriggers(t *Type, st ast.Stmt, recv string, byGo map[string]*Field, ctrs *[]Prec) error {
	is := st.(*ast.IfStmt)
	var fields []string
	for _, g := range recvFields(&ast.ExprStmt{X: is.Cond}, recv) {
		f := byGo[g]
		if f == nil {
			return fmt.Errorf("container condition at %s reads %s, not a spec field", x.k8s.fset.Position(st.Pos()), g)
		}
		fields = append(fields, f.JSON)
	}
	for _, w := range resultWrites(is.Body) {
		p, err := x.pointer(t.ARM, w.path)
		if err != nil {
			return fmt.Errorf("%s: %w", x.k8s.fset.Position(st.Pos()), err)
		}
		*ctrs = append(*ctrs, Prec{Path: p, Fields: fields})
	}
	return nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	for _, s := range b {
		if !m[s] {
			return false
		}
	}
	return true
}

func appendNew(list []string, s string) []string {
	for _, l := range list {
		if l == s {
			return list
		}
	}
	return append(list, s)
}

// resultInit matches `result := &arm.X{}`.
func resultInit(st ast.Stmt) (string, bool) {
	as, ok := st.(*ast.AssignStmt)
	if !ok || as.Tok != token.DEFINE || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
		return "", false
	}
	if id, ok := as.Lhs[0].(*ast.Ident); !ok || id.Name != "result" {
		return "", false
	}
	u, ok := as.Rhs[0].(*ast.UnaryExpr)
	if !ok {
		return "", false
	}
	cl, ok := u.X.(*ast.CompositeLit)
	if !ok {
		return "", false
	}
	switch ty := cl.Type.(type) {
	case *ast.SelectorExpr: // &arm.X{}
		return ty.Sel.Name, true
	case *ast.Ident: // &X_ARM{} before v2.11
		return strings.TrimSuffix(ty.Name, "_ARM"), true
	}
	return "", false
}

// isContainerInit matches the creation of an intermediate ARM object:
// `if s.A != nil || … { result.Properties = &arm.P{} }`.
func isContainerInit(st ast.Stmt) bool {
	is, ok := st.(*ast.IfStmt)
	if !ok || is.Else != nil || len(is.Body.List) == 0 {
		return false
	}
	for _, b := range is.Body.List {
		as, ok := b.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 {
			return false
		}
		u, ok := as.Rhs[0].(*ast.UnaryExpr)
		if !ok || u.Op != token.AND {
			return false
		}
		cl, ok := u.X.(*ast.CompositeLit)
		if !ok || len(cl.Elts) != 0 {
			return false
		}
		if root, _ := selectorPath(as.Lhs[0]); root != "result" {
			return false
		}
	}
	return true
}

// resultWrites lists the assignments to result.… in a statement.
func resultWrites(st ast.Stmt) []resultWrite {
	var out []resultWrite
	var walk func(n ast.Node, inElse bool)
	walk = func(n ast.Node, inElse bool) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IfStmt:
				if n.Init != nil {
					walk(n.Init, inElse)
				}
				walk(n.Body, inElse)
				if n.Else != nil {
					walk(n.Else, true)
				}
				return false
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					root, path := selectorPath(l)
					if root != "result" || len(path) == 0 {
						continue
					}
					var rhs ast.Expr
					if len(n.Rhs) == len(n.Lhs) {
						rhs = n.Rhs[i]
					}
					out = append(out, resultWrite{path: path, rhs: rhs, inElse: inElse})
				}
			}
			return true
		})
	}
	walk(st, false)
	return out
}

// selectorPath turns result.A.B[k].C into ("result", [A B C]).
func selectorPath(e ast.Expr) (string, []string) {
	var path []string
	for {
		switch v := e.(type) {
		case *ast.SelectorExpr:
			path = append([]string{v.Sel.Name}, path...)
			e = v.X
		case *ast.IndexExpr:
			e = v.X
		case *ast.StarExpr:
			e = v.X
		case *ast.ParenExpr:
			e = v.X
		case *ast.Ident:
			return v.Name, path
		default:
			return "", nil
		}
	}
}

// recvFields lists the receiver's fields a statement reads, in order of
// appearance.
func recvFields(st ast.Stmt, recv string) []string {
	var out []string
	seen := map[string]bool{}
	ast.Inspect(st, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == recv && !seen[sel.Sel.Name] {
			seen[sel.Sel.Name] = true
			out = append(out, sel.Sel.Name)
		}
		return true
	})
	return out
}

// looksUpKeys reports whether a loop body resolves references into map keys:
// `resolved.ResolvedReferences.Lookup(…)` and `result.X[key] = …`.
func looksUpKeys(body *ast.BlockStmt) bool {
	lookup, indexed := false, false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Lookup" {
				if in, ok := sel.X.(*ast.SelectorExpr); ok && in.Sel.Name == "ResolvedReferences" {
					lookup = true
				}
			}
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if _, ok := l.(*ast.IndexExpr); ok {
					if root, _ := selectorPath(l); root == "result" {
						indexed = true
					}
				}
			}
		}
		return true
	})
	return lookup && indexed
}

func isSelector(e ast.Expr, x, sel string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != sel {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == x
}

// pointer turns a Go field path from an ARM struct into a JSON pointer made
// of the fields' json names.
func (x *schemaExtractor) pointer(arm string, path []string) (string, error) {
	if arm == "" {
		return "", fmt.Errorf("write to the result before result := &arm.X{}")
	}
	cur := arm
	var b strings.Builder
	for _, name := range path {
		st := x.arm.structs[cur]
		if st == nil {
			return "", fmt.Errorf("arm type %s not found (path %s)", cur, strings.Join(path, "."))
		}
		var found *ast.Field
		for _, f := range st.Fields.List {
			if len(f.Names) == 1 && f.Names[0].Name == name {
				found = f
				break
			}
		}
		if found == nil {
			return "", fmt.Errorf("arm type %s has no field %s", cur, name)
		}
		jn, _, ok := jsonName(found)
		if !ok {
			return "", fmt.Errorf("arm type %s field %s has no json name", cur, name)
		}
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(jn))
		e := stripPtr(found.Type)
		for {
			switch tt := e.(type) {
			case *ast.ArrayType:
				e = stripPtr(tt.Elt)
				continue
			case *ast.MapType:
				e = stripPtr(tt.Value)
				continue
			}
			break
		}
		if id, ok := e.(*ast.Ident); ok {
			cur = id.Name
		} else {
			cur = ""
		}
	}
	return b.String(), nil
}
