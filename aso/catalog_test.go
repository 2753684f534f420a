package aso

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// fixedResolver resolves everything to fixed values.
type fixedResolver struct{}

func (fixedResolver) ResourceID(group, kind, name string) (string, error) {
	return "/subscriptions/" + zeroSub + "/resourceGroups/rg/providers/Microsoft.Fake/" + kind + "/" + name, nil
}
func (fixedResolver) Secret(name, key string) (string, error) { return "secret-" + key, nil }
func (fixedResolver) SecretMap(name string) (map[string]string, error) {
	return map[string]string{"a": "1"}, nil
}
func (fixedResolver) ConfigMap(name, key string) (string, error) { return "", ErrUnknown }

// minimalSpec synthesizes a spec with only the required fields (and, for a
// one-of, its first variant) from the catalog schema.
func minimalSpec(td *typeDef, depth int) map[string]any {
	m := map[string]any{}
	if depth > 12 {
		return m
	}
	for _, f := range td.fields {
		if f.req && f.x != "owner" {
			m[f.name] = minimalValue(f, 0, depth)
		}
	}
	if td.oneOf {
		for _, f := range td.fields {
			if f.a != nil && f.t == ftObject {
				m[f.name] = minimalValue(f, 0, depth)
				break
			}
		}
	}
	return m
}

func minimalValue(f *field, d, depth int) any {
	if d < len(f.coll) {
		if f.coll[d] == collList {
			return []any{minimalValue(f, d+1, depth)}
		}
		return map[string]any{"k": minimalValue(f, d+1, depth)}
	}
	if len(f.enum) > 0 {
		return f.enum[0]
	}
	switch f.t {
	case ftString:
		return "x"
	case ftBool:
		return true
	case ftInt:
		return int64(1)
	case ftNumber:
		return 1.5
	case ftJSON:
		return map[string]any{}
	case ftObject:
		return minimalSpec(f.ref, depth+1)
	case ftRef, ftWellKnownRef:
		return map[string]any{"armId": "/subscriptions/" + zeroSub + "/resourceGroups/rg/providers/Microsoft.Fake/things/t"}
	case ftSecretRef, ftConfigMapRef, ftSecretDest, ftConfigMapDest:
		return map[string]any{"name": "n", "key": "k"}
	case ftSecretMapRef:
		return map[string]any{"name": "n"}
	case ftDestExpr:
		return map[string]any{"name": "n", "value": "self.x"}
	}
	return "x"
}

// ownerID builds the ARM ID of a kind's owner chain from the catalog itself.
func ownerID(t *testing.T, k *Kind, depth int) string {
	t.Helper()
	switch {
	case k.Scope == ScopeLocation || k.Scope == ScopeTenant:
		return ""
	case k.ArbitraryOwner:
		return "/subscriptions/" + zeroSub + "/resourceGroups/rg"
	case k.OwnerGroup == "resources.azure.com" && k.OwnerKind == "ResourceGroup":
		return "/subscriptions/" + zeroSub + "/resourceGroups/rg"
	}
	if depth > 8 {
		t.Fatalf("%s: owner chain too deep", k)
	}
	ok, found := Lookup(k.OwnerGroup, k.Version, k.OwnerKind)
	if !found { // owner in another version of its group: take any
		for _, c := range Kinds() {
			if c.Group == k.OwnerGroup && c.Kind == k.OwnerKind {
				ok, found = c, true
				break
			}
		}
	}
	if !found {
		t.Fatalf("%s: owner kind %s/%s not in the catalog", k, k.OwnerGroup, k.OwnerKind)
	}
	name := "parent"
	if ok.Singleton != "" {
		name = ok.Singleton
	}
	id, err := ARMID(ok, zeroSub, ownerID(t, ok, depth+1), name)
	if err != nil {
		t.Fatalf("%s: owner %s ARMID: %v", k, ok, err)
	}
	return id
}

var (
	reAPIVersion = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(-preview|-beta|-alpha|-privatepreview)?$`)
	reRGID       = regexp.MustCompile(`^/subscriptions/` + zeroSub + `/resourceGroups/rg/providers/([^/]+(?:/[^/]+/[^/]+)+)$`)
)

// TestCatalogMinimalManifests converts a minimal manifest of every kind in
// every CRD version and checks the ARM path and body.
func TestCatalogMinimalManifests(t *testing.T) {
	kinds := Kinds()
	if len(kinds) != 529 {
		t.Errorf("catalog has %d kinds, want 529", len(kinds))
	}
	var converted, notGenerated int
	groups, versions := map[string]bool{}, map[string]bool{}
	for _, k := range kinds {
		if !k.Generated {
			notGenerated++
			if _, err := Convert(k, map[string]any{}, "x", fixedResolver{}); !errors.Is(err, ErrNotConvertible) {
				t.Errorf("%s: Convert of a hand-written kind: %v, want ErrNotConvertible", k, err)
			}
			continue
		}
		td, err := k.spec()
		if err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		spec := minimalSpec(td, 0)
		switch {
		case k.ArbitraryOwner:
			spec["owner"] = map[string]any{"group": "resources.azure.com", "kind": "ResourceGroup", "name": "rg"}
		case k.Scope == ScopeResourceGroup:
			spec["owner"] = map[string]any{"name": "parent"}
		}
		obj := map[string]any{"apiVersion": k.APIGroupVersion(), "kind": k.Kind, "metadata": map[string]any{"name": "sample"}, "spec": spec}
		if errs := Validate(k, obj); len(errs) > 0 {
			t.Errorf("%s: minimal manifest does not validate: %v", k, errs)
		}
		name, err := AzureName(k, "default", "sample", spec)
		if err != nil {
			t.Errorf("%s: AzureName: %v", k, err)
			continue
		}
		id, err := ARMID(k, zeroSub, ownerID(t, k, 0), name)
		if err != nil {
			t.Errorf("%s: ARMID: %v", k, err)
			continue
		}
		if !reAPIVersion.MatchString(k.APIVersion) {
			t.Errorf("%s: api-version %q", k, k.APIVersion)
		}
		path := id + "?api-version=" + k.APIVersion
		if !strings.HasSuffix(id, "/"+name) {
			t.Errorf("%s: %s does not end in the azureName %s", k, path, name)
		}
		switch k.Scope {
		case ScopeResourceGroup:
			m := reRGID.FindStringSubmatch(id)
			if m == nil {
				t.Errorf("%s: malformed path %s", k, path)
				break
			}
			// The provider and type segments are exactly the kind's ARM type.
			segs := strings.Split(m[1], "/")
			types := []string{segs[0]}
			for i := 1; i < len(segs); i += 2 {
				types = append(types, segs[i])
			}
			if got := strings.Join(types, "/"); got != k.ARMType {
				t.Errorf("%s: path types %s, want %s (%s)", k, got, k.ARMType, path)
			}
		case ScopeExtension:
			if id != "/subscriptions/"+zeroSub+"/resourceGroups/rg/providers/"+k.ARMType+"/"+name {
				t.Errorf("%s: extension path %s", k, path)
			}
		case ScopeLocation:
			if id != "/subscriptions/"+zeroSub+"/resourceGroups/"+name {
				t.Errorf("%s: resource group path %s", k, path)
			}
		case ScopeTenant:
			if id != "/providers/"+k.ARMType+"/"+name {
				t.Errorf("%s: tenant path %s", k, path)
			}
		}
		// The ID matches the template ASO documents.
		if tmplRe := templateRegexp(k.IDTemplate); tmplRe != nil && k.Scope != ScopeExtension && !tmplRe.MatchString(id) {
			t.Errorf("%s: %s does not match ASO's template %s", k, id, k.IDTemplate)
		}
		body, err := Convert(k, spec, name, fixedResolver{})
		if err != nil {
			t.Errorf("%s: Convert: %v", k, err)
			continue
		}
		var v map[string]any
		if err := json.Unmarshal(body.JSON, &v); err != nil {
			t.Errorf("%s: body is not a JSON object: %v\n%s", k, err, body.JSON)
			continue
		}
		if _, ok := v["name"]; !ok && len(td.pushName) == 0 {
			t.Errorf("%s: body has no name: %s", k, body.JSON)
		}
		if _, err := Dependencies(k, spec); err != nil {
			t.Errorf("%s: Dependencies: %v", k, err)
		}
		converted++
		groups[k.Group] = true
		versions[k.APIGroupVersion()] = true
	}
	t.Logf("catalog coverage: %d/%d kind-versions converted from minimal manifests (%d groups, %d group/versions); %d hand-written kinds have no ARM form",
		converted, len(kinds), len(groups), len(versions), notGenerated)
	if converted+notGenerated != len(kinds) {
		t.Errorf("%d kinds failed", len(kinds)-converted-notGenerated)
	}
}

// templateRegexp turns an ID template such as
// /subscriptions/{subscriptionId}/resourceGroups/{rg}/providers/X/y/{name} into
// a case-sensitive regexp.
func templateRegexp(tmpl string) *regexp.Regexp {
	if tmpl == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("^")
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(tmpl))
			break
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			return nil
		}
		b.WriteString(regexp.QuoteMeta(tmpl[:i]))
		b.WriteString(`[^/]+`)
		tmpl = tmpl[i+j+1:]
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// TestCatalogUpToDate fails when ../shared/aso-schema changed after the
// embedded catalog was generated (run `make catalog`).
func TestCatalogUpToDate(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "aso-schema")
	h := sha256.New()
	add := func(rel string) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
	}
	add("provenance.json")
	add("kinds.json")
	add("exceptions.json")
	files, err := filepath.Glob(filepath.Join(dir, "schema", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rels []string
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		rels = append(rels, filepath.ToSlash(rel))
	}
	sort.Strings(rels)
	for _, r := range rels {
		add(r)
	}
	p := CatalogProvenance()
	if got := hex.EncodeToString(h.Sum(nil)); got != p.FactsSHA256 {
		t.Errorf("embedded catalog was generated from facts %s, ../shared/aso-schema is now %s: regenerate it with\n"+
			"  make aso-catalog ASO_SRC=<ASO git dir> (docs/aso-upgrade.md)", p.FactsSHA256, got)
	}
	if p.Commit == "" || p.Generator == "" || p.GeneratedAt == "" || p.Kinds != len(Kinds()) {
		t.Errorf("incomplete provenance: %+v", p)
	}
}
