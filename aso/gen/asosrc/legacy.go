package asosrc

import (
	"fmt"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// ASO's generated API packages had another layout before release v2.11.0:
//
//   - the ARM payload types sat in the API package itself, one file per
//     resource named *_spec_arm_types_gen.go (and *_status_arm_types_gen.go),
//     each type suffixed _ARM (ManagedCluster_Spec_ARM), instead of the arm
//     subpackage's *_spec_types_gen.go (arm.ManagedCluster_Spec);
//   - ConvertToARM starts with `result := &ManagedCluster_Spec_ARM{}` (a type
//     of the same package) instead of `result := &arm.ManagedCluster_Spec{}`,
//     and copies enums as they are instead of converting them to the arm
//     package's enum types (the JSON is the same);
//   - GetAPIVersion returns `string(APIVersion_Value)` instead of the
//     literal api-version (APIVersion_Value is a constant of the package);
//   - the ARM payload types carry a GetType method too, as the resources do;
//   - the enums are declared once, in the ARM files, and used by both sides.
//
// LegacySchema reads that layout with the same extractor as Schema, after
// rewriting those few constructs into the current layout's, and names the
// ARM types as the arm subpackage would (the _ARM suffix dropped), so that
// the facts of an old package compare with a current one field for field.

// armSuffix is the suffix of the ARM payload types before v2.11.0.
const armSuffix = "_ARM"

// IsLegacyLayout reports whether the API package of group and version in
// the tree at root has its ARM payload types beside the Kubernetes types
// (no arm subpackage).
func IsLegacyLayout(root, group, version string) bool {
	dir := apiDir(root, group, version)
	if fi, err := os.Stat(filepath.Join(dir, "arm")); err == nil && fi.IsDir() {
		return false
	}
	ms, _ := filepath.Glob(filepath.Join(dir, "*_arm_types_gen.go"))
	return len(ms) > 0
}

// SchemaAnyLayout is Schema for a package of any release since v2.0.0, in
// either layout, with the explicit-empty list idiom of the releases that
// generated it (see explicitEmptyLists) read as an else branch.
func SchemaAnyLayout(root, group, version string) (*SchemaFile, error) {
	if IsLegacyLayout(root, group, version) {
		return LegacySchema(root, group, version)
	}
	dir := apiDir(root, group, version)
	k8s, err := parseGoPkg(dir, func(n string) bool { return strings.HasSuffix(n, "_types_gen.go") })
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", group, version, err)
	}
	armPkg, err := parseGoPkg(filepath.Join(dir, "arm"), func(n string) bool { return strings.HasSuffix(n, "_spec_types_gen.go") })
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", group, version, err)
	}
	explicitEmptyLists(k8s)
	groupTempWrites(k8s)
	inlineNamedCollections(k8s)
	x := &extractor{group: group, version: version, k8s: k8s, arm: armPkg}
	s, err := x.run()
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", group, version, err)
	}
	return s, nil
}

// LegacySchema extracts the conversion facts of an API package in the layout
// before v2.11.0 (see above).
func LegacySchema(root, group, version string) (*SchemaFile, error) {
	dir := apiDir(root, group, version)
	isARM := func(n string) bool { return strings.HasSuffix(n, "_arm_types_gen.go") }
	isSpecARM := func(n string) bool { return strings.HasSuffix(n, "_spec_arm_types_gen.go") }
	// The enums the spec uses are declared in the ARM files: the
	// Kubernetes side reads those files too, without their structs.
	k8s, err := parseGoPkg(dir, func(n string) bool { return strings.HasSuffix(n, "_types_gen.go") && (!isARM(n) || isSpecARM(n)) })
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", group, version, err)
	}
	armPkg, err := parseGoPkg(dir, isSpecARM)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", group, version, err)
	}
	for name := range armPkg.structs {
		delete(k8s.structs, name)
		delete(k8s.methods, name)
	}
	if err := modernize(k8s, armPkg); err != nil {
		return nil, fmt.Errorf("%s/%s: %w", group, version, err)
	}
	explicitEmptyLists(k8s)
	groupTempWrites(k8s)
	inlineNamedCollections(k8s)
	x := &extractor{group: group, version: version, k8s: k8s, arm: armPkg}
	s, err := x.run()
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", group, version, err)
	}
	if err := dropARMSuffix(s); err != nil {
		return nil, fmt.Errorf("%s/%s: %w", group, version, err)
	}
	return s, nil
}

// explicitEmptyLists rewrites the idiom ASO generates for a list of a
// resource that serializes its collections explicitly (containerservice):
//
//	for _, item := range pool.NodeTaints { result.Properties.NodeTaints = append(…) }
//	if result.Properties.NodeTaints == nil { result.Properties.NodeTaints = []string{} }
//
// into the form the extractor reads as "sent empty when unset" (maps have
// it already):
//
//	if pool.NodeTaints != nil {} else { result.Properties.NodeTaints = []string{} }
//
// where pool.NodeTaints is the spec field the statement before reads.
func explicitEmptyLists(k8s *goPkg) {
	for _, ms := range k8s.methods {
		fd := ms["ConvertToARM"]
		if fd == nil || fd.Body == nil || fd.Recv == nil || len(fd.Recv.List[0].Names) != 1 {
			continue
		}
		recv := fd.Recv.List[0].Names[0].Name
		list := fd.Body.List
		for i := 1; i < len(list); i++ {
			is, ok := list[i].(*ast.IfStmt)
			if !ok || is.Else != nil || is.Init != nil {
				continue
			}
			be, ok := is.Cond.(*ast.BinaryExpr)
			if !ok || be.Op != token.EQL {
				continue
			}
			if id, ok := be.Y.(*ast.Ident); !ok || id.Name != "nil" {
				continue
			}
			if root, _ := selectorPath(be.X); root != "result" {
				continue
			}
			fields := recvFields(list[i-1], recv)
			if len(fields) == 0 {
				continue
			}
			is.Cond = &ast.BinaryExpr{X: &ast.SelectorExpr{X: ast.NewIdent(recv), Sel: ast.NewIdent(fields[0])}, Op: token.NEQ, Y: ast.NewIdent("nil")}
			is.Else = is.Body
			is.Body = &ast.BlockStmt{}
		}
	}
}

// groupTempWrites joins the statements that build a value in a local
// variable and then write it to the result,
//
//	var customCATrustCertificatesTemp []string
//	for _, item := range profile.CustomCATrustCertificates { … }
//	result.CustomCATrustCertificates = customCATrustCertificatesTemp
//
// (ASO's form for a list sent as null when unset) into one block, so that
// the write is seen with the spec field it reads.
func groupTempWrites(k8s *goPkg) {
	for _, ms := range k8s.methods {
		fd := ms["ConvertToARM"]
		if fd == nil || fd.Body == nil {
			continue
		}
		declared := map[string]int{} // local var → index of its declaration
		var out []ast.Stmt
		for _, st := range fd.Body.List {
			if ds, ok := st.(*ast.DeclStmt); ok {
				if gd, ok := ds.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR && len(gd.Specs) == 1 {
					if vs, ok := gd.Specs[0].(*ast.ValueSpec); ok && len(vs.Names) == 1 {
						declared[vs.Names[0].Name] = len(out)
					}
				}
			}
			if as, ok := st.(*ast.AssignStmt); ok && len(as.Lhs) == 1 && len(as.Rhs) == 1 {
				if root, _ := selectorPath(as.Lhs[0]); root == "result" {
					if id, ok := as.Rhs[0].(*ast.Ident); ok {
						if i, ok := declared[id.Name]; ok {
							block := &ast.BlockStmt{List: append(append([]ast.Stmt(nil), out[i:]...), st)}
							out = append(out[:i], block)
							for v, j := range declared {
								if j >= i {
									delete(declared, v)
								}
							}
							continue
						}
					}
				}
			}
			if as, ok := st.(*ast.AssignStmt); ok && as.Tok == token.DEFINE {
				// x, err := resolved.ResolvedSecrets.Lookup(spec.X): a
				// required secret before v2.4.0, written to the result
				// after the error check.
				for _, l := range as.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name != "result" && id.Name != "err" && id.Name != "_" {
						declared[id.Name] = len(out)
					}
				}
			}
			out = append(out, st)
		}
		fd.Body.List = out
	}
}

// inlineNamedCollections replaces a spec field's named list or map type
// (`type ManagedClusterSecurityProfileCustomCATrustCertificates []string`,
// which carries MaxItems markers) by the list or map itself: the field
// sends what the collection holds.
func inlineNamedCollections(k8s *goPkg) {
	for _, st := range k8s.structs {
		for _, f := range st.Fields.List {
			id, ok := stripPtr(f.Type).(*ast.Ident)
			if !ok {
				continue
			}
			if nt := k8s.named[id.Name]; nt != nil {
				switch nt.underlying.(type) {
				case *ast.ArrayType, *ast.MapType:
					f.Type = nt.underlying
				}
			}
		}
	}
}

// modernize rewrites the constructs of the old layout that the extractor
// reads differently: `result := &X_ARM{}` becomes `result := &arm.X_ARM{}`
// in every ConvertToARM, and `return string(C)` of a resource method
// becomes `return C`.
func modernize(k8s, armPkg *goPkg) error {
	for typ, ms := range k8s.methods {
		if fd := ms["ConvertToARM"]; fd != nil && fd.Body != nil {
			for _, st := range fd.Body.List {
				qualifyResult(st, armPkg)
			}
		}
		for _, m := range []string{"GetAPIVersion", "GetType", "AzureName"} {
			fd := ms[m]
			if fd == nil || fd.Body == nil {
				continue
			}
			for _, st := range fd.Body.List {
				r, ok := st.(*ast.ReturnStmt)
				if !ok || len(r.Results) != 1 {
					continue
				}
				if c, ok := r.Results[0].(*ast.CallExpr); ok && len(c.Args) == 1 {
					if fn, ok := c.Fun.(*ast.Ident); ok && fn.Name == "string" {
						if id, ok := c.Args[0].(*ast.Ident); ok {
							if _, known := k8s.consts[id.Name]; !known {
								return fmt.Errorf("%s.%s returns string(%s), not a constant of the package", typ, m, id.Name)
							}
							r.Results[0] = id
						}
					}
				}
			}
		}
	}
	return nil
}

// qualifyResult turns `result := &X_ARM{}` into `result := &arm.X_ARM{}`
// when X_ARM is an ARM payload type of the package.
func qualifyResult(st ast.Stmt, armPkg *goPkg) {
	as, ok := st.(*ast.AssignStmt)
	if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
		return
	}
	if id, ok := as.Lhs[0].(*ast.Ident); !ok || id.Name != "result" {
		return
	}
	u, ok := as.Rhs[0].(*ast.UnaryExpr)
	if !ok {
		return
	}
	cl, ok := u.X.(*ast.CompositeLit)
	if !ok {
		return
	}
	if id, ok := cl.Type.(*ast.Ident); ok && armPkg.structs[id.Name] != nil {
		cl.Type = &ast.SelectorExpr{X: ast.NewIdent("arm"), Sel: id}
	}
}

// dropARMSuffix names the ARM types as the arm subpackage does: X_ARM → X.
func dropARMSuffix(s *SchemaFile) error {
	rename := func(n string) string { return strings.TrimSuffix(n, armSuffix) }
	seen := map[string]string{}
	for _, at := range s.ARMTypes {
		nn := rename(at.Name)
		if prev, dup := seen[nn]; dup {
			return fmt.Errorf("ARM types %s and %s both become %s", prev, at.Name, nn)
		}
		seen[nn] = at.Name
		at.Name = nn
		for i := range at.Fields {
			if at.Fields[i].Child != "" {
				at.Fields[i].Child = rename(at.Fields[i].Child)
			}
		}
	}
	for _, t := range s.Types {
		if t.ARM != "" {
			t.ARM = rename(t.ARM)
		}
	}
	return nil
}
