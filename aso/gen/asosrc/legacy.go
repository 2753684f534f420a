package asosrc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// IsLegacyLayout reports whether the API package of group and version in
// the tree at root has its ARM payload types beside the Kubernetes types
// (*_spec_arm_types_gen.go, named X_ARM: the layout before v2.11.0, which
// Schema reads too) instead of in an arm subpackage.
func IsLegacyLayout(root, group, version string) bool {
	dir := filepath.Join(root, filepath.FromSlash(apiDir(group, version)))
	if fi, err := os.Stat(filepath.Join(dir, "arm")); err == nil && fi.IsDir() {
		return false
	}
	ms, _ := filepath.Glob(filepath.Join(dir, "*_arm_types_gen.go"))
	return len(ms) > 0
}

// SpecExplicitEmpty carries over to the ARM payload types the explicit
// empty collections that releases v2.6.0 to v2.9.x marked on the
// Kubernetes spec fields only (`serializationType:"explicitEmptyCollection"`,
// containerservice's explicitEmptyCollections payload type): ASO sent such a
// collection as [] or {} when unset. Since v2.10.0 the ARM payload fields
// carry the tag themselves (flag e), which Schema reads. It returns the ARM
// fields it marked, "ArmType.json".
func SpecExplicitEmpty(root string, s *SchemaFile) ([]string, error) {
	dir := apiDir(s.Group, s.CRDVersion)
	k8s, err := parseKindPkg(os.DirFS(root), dir, func(n string) bool {
		return strings.HasSuffix(n, "_types_gen.go") && !strings.HasSuffix(n, "_arm_types_gen.go")
	})
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", s.Group, s.CRDVersion, err)
	}
	arms := map[string]*ARMType{}
	for _, at := range s.ARMTypes {
		arms[at.Name] = at
	}
	var marked []string
	for _, t := range s.Types {
		st := k8s.structs[t.Name]
		if st == nil || t.ARM == "" {
			continue
		}
		byJSON := map[string]*Field{}
		for _, f := range t.Fields {
			byJSON[f.JSON] = f
		}
		for _, f := range st.Fields.List {
			if structTag(f, "serializationType") != "explicitEmptyCollection" {
				continue
			}
			jn, _, ok := jsonName(f)
			if !ok || byJSON[jn] == nil || byJSON[jn].A == "" {
				continue
			}
			af, at, err := armFieldAt(arms, t.ARM, byJSON[jn].A)
			if err != nil {
				return nil, fmt.Errorf("%s/%s %s.%s: %w", s.Group, s.CRDVersion, t.Name, jn, err)
			}
			if !strings.ContainsAny(af.Flags, "LM") {
				return nil, fmt.Errorf("%s/%s %s.%s: explicit empty collection on ARM field %s.%s, not a collection", s.Group, s.CRDVersion, t.Name, jn, at, af.JSON)
			}
			if !strings.Contains(af.Flags, "e") {
				af.Flags += "e"
				marked = append(marked, at+"."+af.JSON)
			}
		}
	}
	sort.Strings(marked)
	return marked, nil
}

// armFieldAt walks a JSON pointer through the ARM types from arm.
func armFieldAt(arms map[string]*ARMType, arm, ptr string) (*ARMField, string, error) {
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := arm
	for i, tok := range toks {
		at := arms[cur]
		if at == nil {
			return nil, "", fmt.Errorf("ARM type %s missing (pointer %s)", cur, ptr)
		}
		j := slices.IndexFunc(at.Fields, func(f ARMField) bool { return f.JSON == tok })
		if j < 0 {
			return nil, "", fmt.Errorf("ARM type %s has no field %s (pointer %s)", cur, tok, ptr)
		}
		if i == len(toks)-1 {
			return &at.Fields[j], cur, nil
		}
		cur = at.Fields[j].Child
	}
	return nil, "", fmt.Errorf("empty pointer")
}
