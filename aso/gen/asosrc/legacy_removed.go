package asosrc

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// RemovedEntry is one row of aso/catalog/removed.json (written by
// aso/gen/removed): a kind version a release since v2.0.0 shipped and the
// pinned commit no longer has.
type RemovedEntry struct {
	Group        string   `json:"group"`
	Version      string   `json:"version"`
	Kind         string   `json:"kind"`
	LastIn       string   `json:"lastIn"`
	RemovedIn    string   `json:"removedIn"`
	Replacements []string `json:"replacements"`
}

// KindRow is a kind's row in the catalog's input, in kinds.json's field
// names (the fields the catalog keeps).
type KindRow struct {
	Group          string   `json:"group"`
	CRDVersion     string   `json:"crdVersion"`
	Kind           string   `json:"kind"`
	Status         string   `json:"status"`
	SupportedFrom  string   `json:"supportedFrom"`
	APIVersion     string   `json:"armApiVersion"`
	ARMType        string   `json:"armType"`
	ARMIDTemplate  string   `json:"armIdTemplate"`
	Scope          string   `json:"scope"`
	OwnerGroup     string   `json:"ownerGroup"`
	OwnerKind      string   `json:"ownerKind"`
	ArbitraryOwner bool     `json:"arbitraryOwner"`
	Singleton      *string  `json:"singletonName"`
	AzureNameField bool     `json:"azureNameField"`
	UUIDv5         string   `json:"uuidv5"`
	RandomNaming   bool     `json:"namingConventionRandom"`
	Hooks          []string `json:"hooks"`
	Operations     []string `json:"operations"`
	SpecType       string   `json:"specType"`
}

// RemovedPackage is what the catalog holds of a removed group/version: the
// facts read at the release that last had it, or the version of the same
// group whose package converts its manifests the same (SchemaOf).
type RemovedPackage struct {
	Group, Version string
	LastIn         string // the release tag read
	Commit         string // its commit
	Legacy         bool   // read in the layout before v2.11.0
	// Schema is the package as LastIn had it; nil when SchemaOf is set.
	Schema *SchemaFile
	// SchemaOf is the CRD version of the same group (shipped, or removed
	// and kept) whose facts convert every manifest of this one the same
	// (SameConversion); "" when none does.
	SchemaOf string
	// Differs says, when SchemaOf is "", how each same-api-version
	// candidate differs ("v1api20210501: …").
	Differs []string
	Kinds   []KindRow
	Entries []RemovedEntry
	// ExplicitEmpty are the ARM fields sent empty when unset because the
	// release marked them on the spec side (SpecExplicitEmpty).
	ExplicitEmpty []string
}

// Current is what the generator knows of the pinned commit: its packages
// and kind rows, for aliases and for the facts a removed kind inherits
// from its group and kind.
type Current struct {
	Packages map[string]*SchemaFile // "group/version"
	Kinds    []KindRow
}

// RemovedPackages reads every removed group/version of entries from the
// release that last had it in repo (exported under work) and decides, for
// each, between an alias to a package with the same conversion and its own
// facts. Packages are returned in group/version order.
func RemovedPackages(repo *Repo, entries []RemovedEntry, cur *Current, work string) ([]*RemovedPackage, error) {
	byGV := map[string]*RemovedPackage{}
	var keys []string
	for _, e := range entries {
		key := e.Group + "/" + e.Version
		p := byGV[key]
		if p == nil {
			p = &RemovedPackage{Group: e.Group, Version: e.Version, LastIn: e.LastIn}
			byGV[key] = p
			keys = append(keys, key)
		}
		if p.LastIn != e.LastIn {
			return nil, fmt.Errorf("%s: kinds last in %s and %s", key, p.LastIn, e.LastIn)
		}
		p.Entries = append(p.Entries, e)
	}
	sort.Strings(keys)
	// Newest release first, so that an older version can stand on a newer
	// removed one (v1beta20210501 on v1api20210501, both removed).
	order := append([]string(nil), keys...)
	sort.SliceStable(order, func(i, j int) bool {
		return releaseLess(byGV[order[j]].LastIn, byGV[order[i]].LastIn)
	})
	kept := map[string]*SchemaFile{} // removed packages with their own facts
	for _, key := range order {
		p := byGV[key]
		if err := p.read(repo, work); err != nil {
			return nil, err
		}
		p.alias(cur, kept)
		if p.SchemaOf == "" {
			kept[key] = p.Schema
		}
		if err := p.kindRows(cur, kept, work); err != nil {
			return nil, err
		}
	}
	out := make([]*RemovedPackage, len(keys))
	for i, k := range keys {
		out[i] = byGV[k]
	}
	return out, nil
}

// treeDir is where a release's files are exported.
func treeDir(work, tag string) string { return filepath.Join(work, tag) }

func groupDir(group string) string { return strings.TrimSuffix(group, ".azure.com") }

// read exports the package, its group's customizations and reference docs
// at LastIn and extracts its facts.
func (p *RemovedPackage) read(repo *Repo, work string) error {
	g := groupDir(p.Group)
	commit, err := repo.Commit(p.LastIn)
	if err != nil {
		return err
	}
	p.Commit = commit
	root := treeDir(work, p.LastIn)
	if _, err := repo.Export(p.LastIn, []string{
		path.Join("v2/api", g, p.Version),
		path.Join("docs/hugo/content/reference", g),
	}, root); err != nil {
		return err
	}
	p.Legacy = IsLegacyLayout(root, p.Group, p.Version)
	s, err := Schema(root, p.Group, p.Version)
	if err != nil {
		return fmt.Errorf("%s at %s: %w", p.LastIn, p.Group+"/"+p.Version, err)
	}
	if p.ExplicitEmpty, err = SpecExplicitEmpty(root, s); err != nil {
		return fmt.Errorf("%s: %w", p.LastIn, err)
	}
	p.Schema = s
	return nil
}

// alias picks the first candidate of the same group and api-version, the
// same date's v1api… first, then the pinned commit's other versions, then
// removed packages already kept, whose facts convert p's manifests the same.
func (p *RemovedPackage) alias(cur *Current, kept map[string]*SchemaFile) {
	type cand struct {
		version string
		s       *SchemaFile
	}
	var cands []cand
	add := func(m map[string]*SchemaFile) {
		var vs []cand
		for key, s := range m {
			g, v, _ := strings.Cut(key, "/")
			if g == p.Group && v != p.Version && s.APIVersion == p.Schema.APIVersion {
				vs = append(vs, cand{v, s})
			}
		}
		sort.Slice(vs, func(i, j int) bool { return vs[i].version < vs[j].version })
		cands = append(cands, vs...)
	}
	add(cur.Packages)
	add(kept)
	same := "v1api" + versionDate(p.Version)
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].version == same && cands[j].version != same })
	for _, c := range cands {
		d := SameConversion(p.Schema, c.s)
		if d == "" {
			p.SchemaOf = c.version
			p.Schema = nil
			return
		}
		p.Differs = append(p.Differs, c.version+": "+d)
	}
}

var dateRe = regexp.MustCompile(`\d{8}(preview)?$`)

func versionDate(v string) string { return dateRe.FindString(v) }

// releaseLess orders release tags v2.<minor>.<patch>.
func releaseLess(a, b string) bool {
	var am, ap, bm, bp int
	fmt.Sscanf(a, "v2.%d.%d", &am, &ap)
	fmt.Sscanf(b, "v2.%d.%d", &bm, &bp)
	if am != bm {
		return am < bm
	}
	return ap < bp
}

// kindRows builds the catalog rows of p's kinds from the resource methods
// at LastIn, the facts, the docs index and, for what gitaso implements per
// group and kind (hooks) or only documents (the ID template), the pinned
// commit's rows of the same group and kind.
func (p *RemovedPackage) kindRows(cur *Current, kept map[string]*SchemaFile, work string) error {
	root := treeDir(work, p.LastIn)
	dir := apiDir(p.Group, p.Version)
	k8s, err := parseKindPkg(os.DirFS(root), dir, func(n string) bool {
		return strings.HasSuffix(n, "_types_gen.go") && !strings.HasSuffix(n, "_arm_types_gen.go")
	})
	if err != nil {
		return fmt.Errorf("%s/%s at %s: %w", p.Group, p.Version, p.LastIn, err)
	}
	defaults := defaultsSource(filepath.Join(root, filepath.FromSlash(dir)))
	s := p.Schema
	if s == nil {
		if s = cur.Packages[p.Group+"/"+p.SchemaOf]; s == nil {
			s = kept[p.Group+"/"+p.SchemaOf]
		}
	}
	types := typesByName(s)
	docs := supportedFrom(filepath.Join(root, "docs", "hugo", "content", "reference", groupDir(p.Group), "_index.md"))
	for _, e := range p.Entries {
		ks := kindSchema(s, e.Kind)
		if ks == nil {
			return fmt.Errorf("%s/%s %s: not a resource of the package read at %s", p.Group, p.Version, e.Kind, p.LastIn)
		}
		r := KindRow{Group: p.Group, CRDVersion: p.Version, Kind: e.Kind, Status: "removed", APIVersion: s.APIVersion,
			ARMType: ks.ARMType, SpecType: ks.Spec, SupportedFrom: docs[p.Version+"/"+e.Kind]}
		// The resource methods of the release (the kinds side's reader, which
		// knows the older shapes: no GetSupportedOperations before v2.4, no
		// ARM URI comment in some releases).
		res, err := k8s.resource(e.Kind)
		if err != nil {
			return fmt.Errorf("%s/%s at %s: %w", p.Group, p.Version, p.LastIn, err)
		}
		r.Scope, r.Singleton = res.scope, res.singleton
		r.Operations = append([]string(nil), res.operations...)
		sort.Strings(r.Operations)
		r.ARMIDTemplate, _ = idTemplate(res.scope, res.armURI)
		spec := types[ks.Spec]
		for _, f := range spec.Fields {
			switch {
			case f.X == "azureName":
				r.AzureNameField = true
			case f.X == "owner" && f.T == "arbitraryOwnerRef":
				r.ArbitraryOwner = true
			case f.X == "owner":
				r.OwnerGroup, r.OwnerKind, _ = strings.Cut(f.OwnerKind, "/")
			case f.X == "operatorSpec" && f.R != "":
				if ops := types[f.R]; ops != nil {
					for _, of := range ops.Fields {
						r.RandomNaming = r.RandomNaming || of.JSON == "namingConvention"
					}
				}
			}
		}
		if r.Scope == "location" {
			r.OwnerGroup, r.OwnerKind = "", "" // ResourceGroup: no owner
		}
		// The hooks are gitaso's, per group and kind: those of the kind the
		// pinned commit ships.
		like := sameKind(cur.Kinds, r)
		if like != nil {
			r.Hooks = like.Hooks
		}
		if strings.Contains(defaults[e.Kind], "MakeUUIDName(") {
			r.UUIDv5 = "ownerScopedLegacy"
			if like != nil && like.UUIDv5 != "" {
				r.UUIDv5 = like.UUIDv5
			}
		}
		p.Kinds = append(p.Kinds, r)
	}
	sort.Slice(p.Kinds, func(i, j int) bool { return p.Kinds[i].Kind < p.Kinds[j].Kind })
	return nil
}

func kindSchema(s *SchemaFile, kind string) *KindSchema {
	for i := range s.Kinds {
		if s.Kinds[i].Kind == kind {
			return &s.Kinds[i]
		}
	}
	return nil
}

// sameKind is the pinned commit's newest row of r's group and kind.
func sameKind(rows []KindRow, r KindRow) *KindRow {
	var best *KindRow
	for i := range rows {
		c := &rows[i]
		if c.Group == r.Group && c.Kind == r.Kind && (best == nil || c.APIVersion > best.APIVersion) {
			best = c
		}
	}
	return best
}

// defaultsSource returns, per kind, the hand-written defaulting code of the
// package (<kind>_defaults.go beside the types before v2.11.0, in webhook/
// after), concatenated.
func defaultsSource(dir string) map[string]string {
	out := map[string]string{}
	for _, d := range []string{dir, filepath.Join(dir, "webhook")} {
		ms, _ := filepath.Glob(filepath.Join(d, "*_defaults.go"))
		for _, m := range ms {
			b, err := os.ReadFile(m)
			if err != nil {
				continue
			}
			for _, recv := range defaultRecv.FindAllStringSubmatch(string(b), -1) {
				out[recv[1]] += string(b)
			}
		}
	}
	return out
}

var defaultRecv = regexp.MustCompile(`func \(\w+ \*(\w+)\) defaultAzureName\(`)

// supportedFrom reads a group's reference index (docs/hugo/content/
// reference/<group>/_index.md): "version/Kind" → the Supported From column.
// The tables' headings and link styles changed across releases (Released /
// Deprecated before v2.4, Latest Released Versions / Other Supported
// Versions / Next Release since; absolute links before, relref since); the
// columns did not: Resource, ARM Version, CRD Version, Supported From.
func supportedFrom(file string) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(file)
	if err != nil {
		return out
	}
	cols := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			cols = map[string]int{}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cols) == 0 {
			for i, c := range cells {
				cols[c] = i
			}
			continue
		}
		ri, okR := cols["Resource"]
		vi, okV := cols["CRD Version"]
		si, okS := cols["Supported From"]
		if !okR || !okV || !okS || max(ri, vi, si) >= len(cells) || strings.HasPrefix(cells[vi], "-") {
			continue
		}
		kind := cells[ri]
		if i := strings.Index(kind, "]"); strings.HasPrefix(kind, "[") && i > 0 {
			kind = kind[1:i]
		}
		out[cells[vi]+"/"+kind] = cells[si]
	}
	return out
}
