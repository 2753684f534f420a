package asosrc

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// Kind is one entry of kinds.json: a kind in one CRD version of a group,
// as ASO's reference index lists it and its generated resource type
// describes it.
type Kind struct {
	Group, CRDVersion, Kind string
	// Status is the index section that lists the kind: latest, supported,
	// released, deprecated or next; unlisted for a generated kind no index
	// row names.
	Status        string
	SupportedFrom string // the ASO release, e.g. v2.5.0; empty when unlisted
	Sample        string // the sample's path in ASO's repository; empty when unlisted

	// Generated is false for the hand-written kinds (mysql/postgresql/sql
	// User, entra SecurityGroup): the fields below are then empty.
	Generated      bool
	APIVersion     string   // GetAPIVersion()
	ARMType        string   // GetType(), in its own casing
	ARMURITemplate string   // the generator's "ARM URI" comment
	Scope          string   // resourceGroup, extension, location or tenant (GetResourceScope)
	ARMIDTemplate  string   // the ID as ASO builds it (see idTemplate)
	URINotes       []string // where ARMURITemplate and ARMIDTemplate differ
	Owner          *Owner   // nil when the kind has no owner (location, tenant)
	Singleton      *string  // the constant AzureName() returns, if any
	AzureNameField bool     // the spec has azureName
	AzureNameDef   *AzureNameDefault
	Hooks          []string // sorted hook names (hookMethods)
	Operations     []string // GetSupportedOperations(): DELETE, GET, HEAD, PUT
	SpecType       string
	GeneratedFrom  string // the Swagger file ("Generated from" comment)
}

// Owner is the kind a resource's spec.owner refers to, or any ARM resource.
type Owner struct {
	Group, Kind string
	Arbitrary   bool // genruntime.ArbitraryOwnerReference
}

// AzureNameDefault is set for kinds whose defaulting webhook makes azureName
// a UUIDv5.
type AzureNameDefault struct {
	UUIDv5                 string // ownerScopedLegacy or ownerScoped
	NamingConventionRandom bool   // operatorSpec.namingConvention: random gives a random UUID
}

// KindsResult is what Kinds reads from a tree.
type KindsResult struct {
	Kinds []Kind // sorted by group, CRD version, kind
	// Unlisted are the generated packages (<dir>/<version>) no index row names.
	Unlisted []string
	// Warnings are things a reviewer should look at: exported methods of
	// extension types that are not known hooks (a new extension interface).
	Warnings []string
}

// Kinds reads the kinds of the ASO source tree at root.
func Kinds(root string) (*KindsResult, error) {
	r, err := KindsFS(os.DirFS(root))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	return r, nil
}

// KindsFS reads the kinds of an ASO source tree held by fsys: the rows of
// every docs/hugo/content/reference/<group>/_index.md table, joined with the
// generated resources of v2/api/<group>/<version>, their group's
// customizations (hooks) and their version's webhook defaults. Every
// generated kind is in the result: one no row names is "unlisted". A row
// naming a version without generated code is a hand-written kind
// (Generated false); a row naming a kind its generated package lacks is an
// error.
func KindsFS(fsys fs.FS) (*KindsResult, error) {
	rows, err := readIndex(fsys)
	if err != nil {
		return nil, err
	}
	// The generated API packages are those with ARM payload types, the
	// packages the schema side reads (storage versions, which releases
	// before v2.1 kept beside the API versions, have none).
	pkgList, err := PackagesFS(fsys)
	if err != nil {
		return nil, err
	}
	res := &KindsResult{}
	type pkgKinds struct {
		dir, version string
		res          []resource
		defaults     map[string]*AzureNameDefault
	}
	pkgs := map[[2]string]*pkgKinds{} // (group, version)
	hooks := map[string]map[string][]string{}
	for _, gv := range pkgList {
		dir, version := strings.TrimSuffix(gv[0], ".azure.com"), gv[1]
		pd := path.Join("v2/api", dir, version)
		p, err := parseKindPkg(fsys, pd, func(n string) bool {
			return strings.HasSuffix(n, "_types_gen.go") && !strings.HasSuffix(n, "_arm_types_gen.go")
		})
		if err != nil {
			return nil, err
		}
		rs, err := p.resources()
		if err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			return nil, fmt.Errorf("%s: ARM payload types but no resource (no type with a GetType method in *_types_gen.go)", pd)
		}
		defs, err := readNameDefaults(fsys, dir, version)
		if err != nil {
			return nil, err
		}
		pkgs[[2]string{dir + ".azure.com", version}] = &pkgKinds{dir: dir, version: version, res: rs, defaults: defs}
		if _, ok := hooks[dir]; !ok {
			h, unknown, err := readHooks(fsys, dir)
			if err != nil {
				return nil, err
			}
			hooks[dir] = h
			for _, u := range unknown {
				res.Warnings = append(res.Warnings, "not a known hook: "+u)
			}
		}
	}

	seen := map[[3]string]indexRow{}
	listed := map[[2]string]bool{}
	for _, row := range rows {
		key := [3]string{row.group, row.version, row.kind}
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s %s %s is listed again (first at %s:%d)", row.file, row.line, row.group, row.version, row.kind, prev.file, prev.line)
		}
		seen[key] = row
		listed[[2]string{row.group, row.version}] = true
		k := Kind{Group: row.group, CRDVersion: row.version, Kind: row.kind, Status: row.status,
			SupportedFrom: row.from, Sample: row.sample}
		p := pkgs[[2]string{row.group, row.version}]
		if p == nil {
			res.Kinds = append(res.Kinds, k) // hand-written: no generated package
			continue
		}
		r := findResource(p.res, row.kind)
		if r == nil {
			return nil, fmt.Errorf("%s:%d: %s %s lists kind %s, which v2/api/%s/%s does not generate", row.file, row.line, row.group, row.version, row.kind, p.dir, p.version)
		}
		fill(&k, r, hooks[p.dir][r.kind], p.defaults[r.kind])
		res.Kinds = append(res.Kinds, k)
	}
	for key, p := range pkgs {
		if !listed[key] {
			res.Unlisted = append(res.Unlisted, p.dir+"/"+p.version)
		}
		for i := range p.res {
			r := &p.res[i]
			if _, ok := seen[[3]string{key[0], key[1], r.kind}]; ok {
				continue
			}
			k := Kind{Group: key[0], CRDVersion: key[1], Kind: r.kind, Status: "unlisted"}
			fill(&k, r, hooks[p.dir][r.kind], p.defaults[r.kind])
			res.Kinds = append(res.Kinds, k)
		}
	}
	sort.Strings(res.Unlisted)
	sort.Slice(res.Kinds, func(i, j int) bool {
		a, b := res.Kinds[i], res.Kinds[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.CRDVersion != b.CRDVersion {
			return a.CRDVersion < b.CRDVersion
		}
		return a.Kind < b.Kind
	})
	return res, nil
}

func findResource(rs []resource, kind string) *resource {
	for i := range rs {
		if rs[i].kind == kind {
			return &rs[i]
		}
	}
	return nil
}

// fill copies a generated resource's facts into k.
func fill(k *Kind, r *resource, hooks []string, def *AzureNameDefault) {
	k.Generated = true
	k.APIVersion, k.ARMType, k.Scope = r.apiVersion, r.armType, r.scope
	k.ARMURITemplate = r.armURI
	k.ARMIDTemplate, k.URINotes = idTemplate(r.scope, r.armURI)
	if r.uriBuilt {
		k.URINotes = append(k.URINotes, uriBuiltNote)
	}
	k.Owner, k.Singleton, k.AzureNameField = r.owner, r.singleton, r.azureName
	k.AzureNameDef, k.Hooks, k.Operations = def, hooks, r.operations
	k.SpecType, k.GeneratedFrom = r.specType, r.generatedFrom
}

// idTemplate is the ARM ID ASO builds for a kind, from the generator's URI:
//   - an extension resource is placed under its owner's ARM ID, which takes
//     the place of the URI's first segment ({scope}, {resourceUri} or
//     subscriptions);
//   - ASO always writes resourceGroups, where a few Swagger URIs have
//     resourcegroups (a note says so for resource-group-scoped kinds).
func idTemplate(scope, uri string) (string, []string) {
	switch scope {
	case "extension":
		rest := strings.TrimPrefix(uri, "/")
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return "{ownerArmId}" + rest[i:], nil
		}
		return "{ownerArmId}", nil
	case "resourceGroup", "location":
		if !strings.Contains(uri, "/resourcegroups/") {
			return uri, nil
		}
		id := strings.ReplaceAll(uri, "/resourcegroups/", "/resourceGroups/")
		if scope == "resourceGroup" {
			return id, []string{`URI has "resourcegroups"; ASO sends "resourceGroups"`}
		}
		return id, nil
	}
	return uri, nil
}
