package aso

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

//go:embed catalog/catalog.json.gz
var catalogGz []byte

//go:embed catalog/packages.bin
var packagesBin []byte

// Scopes of a kind, as in kinds.json.
const (
	ScopeResourceGroup = "resourceGroup" // under a resource group (possibly nested under other resources)
	ScopeExtension     = "extension"     // {owner ARM ID}/providers/{ARMType}/{name}
	ScopeLocation      = "location"      // ResourceGroup itself: /subscriptions/{sub}/resourceGroups/{name}
	ScopeTenant        = "tenant"        // subscription Alias: /providers/Microsoft.Subscription/aliases/{name}
)

// Kind is one ASO kind in one CRD version.
type Kind struct {
	Group, Version, Kind  string // e.g. "storage.azure.com", "v1api20230101", "StorageAccount"
	APIVersion            string // ARM api-version
	ARMType               string // e.g. "Microsoft.Storage/storageAccounts/blobServices" (the kind's own casing)
	Scope                 string // "resourceGroup" | "extension" | "location" (ResourceGroup) | "tenant"
	OwnerGroup, OwnerKind string
	ArbitraryOwner        bool   // extension resources: owner may be any kind or an armId
	Singleton             string // fixed azureName ("default"), "" otherwise
	Hooks                 []string
	Operations            []string // PUT/GET/DELETE/HEAD

	Status        string // latest | released | supported | deprecated | next | unlisted | removed ...
	SupportedFrom string // ASO release that introduced the kind version, e.g. "v2.4.0"
	// Generated is false for ASO's hand-written non-ARM kinds (mysql/postgres/sql
	// User, entra SecurityGroup): they are known but cannot be converted.
	Generated bool
	// AzureNameField tells whether the spec has an azureName field.
	AzureNameField bool
	// UUIDv5 is "ownerScopedLegacy" or "ownerScoped" for kinds whose azureName
	// defaults to a UUIDv5 (RoleAssignment, RoleDefinition, SqlRoleAssignment).
	UUIDv5 string
	// RandomNaming tells whether operatorSpec.namingConvention: random exists.
	RandomNaming bool
	SpecType     string // root spec type in the package schema
	IDTemplate   string // the ARM ID as ASO builds it, with {placeholders}

	// Removed is set for a CRD version that an ASO release since v2.0.0
	// shipped and the catalog's commit no longer has (Status "removed"): the
	// kind converts with the facts of the release that last had it (or,
	// where that release's package had the same schema as one the catalog
	// ships, with that package: Removed.SchemaOf), and a plan of it carries
	// Removed.Warning(). Nil for the versions ASO ships today.
	Removed *Removed

	pkgKey string
	pkg    *pkgEntry
}

// APIGroupVersion returns "group/version", the manifest's apiVersion.
func (k *Kind) APIGroupVersion() string { return k.Group + "/" + k.Version }

// String returns "group/version Kind".
func (k *Kind) String() string { return k.Group + "/" + k.Version + " " + k.Kind }

// HasHook reports whether ASO implements the named hand-written hook for k.
func (k *Kind) HasHook(name string) bool {
	for _, h := range k.Hooks {
		if h == name {
			return true
		}
	}
	return false
}

// Provenance says where the embedded catalog comes from.
type Provenance struct {
	Source           string `json:"source"`
	License          string `json:"license"`
	Commit           string `json:"commit"`
	CommitDate       string `json:"commitDate"`
	Generator        string `json:"generator"`
	GeneratedAt      string `json:"generatedAt"`
	FactsSHA256      string `json:"factsSha256"`
	Kinds            int    `json:"kinds"`
	ConvertibleKinds int    `json:"convertibleKinds"`
	Packages         int    `json:"packages"`
	SchemaVersion    int    `json:"schemaVersion"`
	// RemovedKinds counts the removed versions the catalog holds (RemovedKinds()),
	// read at the release tags listed in Releases ("v2.3.0 <commit>").
	RemovedKinds  int      `json:"removedKinds,omitempty"`
	Releases      []string `json:"releases,omitempty"`
	RemovedSHA256 string   `json:"removedSha256,omitempty"` // the removed kinds and packages
}

type kindJSON struct {
	Group          string   `json:"g"`
	Version        string   `json:"v"`
	Kind           string   `json:"k"`
	Status         string   `json:"status"`
	SupportedFrom  string   `json:"from"`
	NotGenerated   bool     `json:"notGenerated"`
	APIVersion     string   `json:"api"`
	ARMType        string   `json:"armType"`
	IDTemplate     string   `json:"idTemplate"`
	Scope          string   `json:"scope"`
	OwnerGroup     string   `json:"ownerGroup"`
	OwnerKind      string   `json:"ownerKind"`
	ArbitraryOwner bool     `json:"arbitraryOwner"`
	Singleton      string   `json:"singleton"`
	AzureNameField bool     `json:"azureNameField"`
	UUIDv5         string   `json:"uuidv5"`
	RandomNaming   bool     `json:"randomNaming"`
	Hooks          []string `json:"hooks"`
	Operations     []string `json:"ops"`
	SpecType       string   `json:"spec"`
	Package        string   `json:"pkg"`
	Removed        *struct {
		LastIn       string   `json:"lastIn"`
		RemovedIn    string   `json:"removedIn"`
		Replacements []string `json:"replacements"`
		SchemaOf     string   `json:"schemaOf"`
	} `json:"removed"`
}

type catalog struct {
	prov     Provenance
	kinds    []*Kind // the versions the catalog's commit ships
	removed  []*Kind // removed versions with their release's facts
	byGVK    map[gvk]*Kind
	packages map[string]*pkgEntry
}

type gvk struct{ g, v, k string }

type pkgEntry struct {
	gz   []byte // one gzip member of packages.bin
	once sync.Once
	pkg  *pkg
	err  error
}

var (
	catOnce sync.Once
	cat     *catalog
	catErr  error
)

func loadCatalog() (*catalog, error) {
	catOnce.Do(func() {
		cat, catErr = decodeCatalog(catalogGz, packagesBin)
	})
	return cat, catErr
}

func mustCatalog() *catalog {
	c, err := loadCatalog()
	if err != nil {
		// The catalog is embedded and checked by tests; failing to decode it is a build defect.
		panic(fmt.Sprintf("aso: embedded catalog: %v", err))
	}
	return c
}

func gunzip(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func decodeCatalog(gz, pkgs []byte) (*catalog, error) {
	raw, err := gunzip(gz)
	if err != nil {
		return nil, fmt.Errorf("decompress catalog: %w", err)
	}
	var in struct {
		Provenance Provenance        `json:"provenance"`
		Kinds      []kindJSON        `json:"kinds"`
		Packages   map[string][2]int `json:"packages"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("decode catalog: %w", err)
	}
	c := &catalog{prov: in.Provenance, byGVK: make(map[gvk]*Kind, len(in.Kinds)), packages: make(map[string]*pkgEntry, len(in.Packages))}
	for key, p := range in.Packages {
		if p[0] < 0 || p[1] < 0 || p[0]+p[1] > len(pkgs) {
			return nil, fmt.Errorf("catalog package %s: bad offset %v", key, p)
		}
		c.packages[key] = &pkgEntry{gz: pkgs[p[0] : p[0]+p[1]]}
	}
	for _, kj := range in.Kinds {
		k := &Kind{
			Group: kj.Group, Version: kj.Version, Kind: kj.Kind, APIVersion: kj.APIVersion, ARMType: kj.ARMType,
			Scope: kj.Scope, OwnerGroup: kj.OwnerGroup, OwnerKind: kj.OwnerKind, ArbitraryOwner: kj.ArbitraryOwner,
			Singleton: kj.Singleton, Hooks: kj.Hooks, Operations: kj.Operations, Status: kj.Status,
			SupportedFrom: kj.SupportedFrom, Generated: !kj.NotGenerated, AzureNameField: kj.AzureNameField,
			UUIDv5: kj.UUIDv5, RandomNaming: kj.RandomNaming, SpecType: kj.SpecType, IDTemplate: kj.IDTemplate,
			pkgKey: kj.Package, pkg: c.packages[kj.Package],
		}
		if k.Generated && k.pkg == nil {
			return nil, fmt.Errorf("catalog kind %s: no package %s", k, kj.Package)
		}
		if _, dup := c.byGVK[gvk{k.Group, k.Version, k.Kind}]; dup {
			return nil, fmt.Errorf("catalog kind %s: listed twice", k)
		}
		c.byGVK[gvk{k.Group, k.Version, k.Kind}] = k
		if r := kj.Removed; r != nil {
			k.Removed = &Removed{Group: k.Group, Version: k.Version, Kind: k.Kind, LastIn: r.LastIn, RemovedIn: r.RemovedIn,
				Replacements: r.Replacements, SchemaOf: r.SchemaOf}
			c.removed = append(c.removed, k)
			continue
		}
		c.kinds = append(c.kinds, k)
	}
	sortKinds(c.kinds)
	sortKinds(c.removed)
	return c, nil
}

func sortKinds(ks []*Kind) {
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Version < b.Version
	})
}

// Lookup finds a kind by API group, CRD version and kind, all matched exactly
// (as the Kubernetes API server does). It finds the versions ASO ships today
// and the removed versions the catalog holds the facts of (k.Removed set).
func Lookup(group, version, kind string) (*Kind, bool) {
	return mustCatalog().lookup(group, version, kind)
}

func (c *catalog) lookup(group, version, kind string) (*Kind, bool) {
	k, ok := c.byGVK[gvk{group, version, kind}]
	return k, ok
}

// LookupAPIVersion is Lookup for a manifest's "group/version" apiVersion.
func LookupAPIVersion(apiVersion, kind string) (*Kind, bool) {
	g, v, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return nil, false
	}
	return Lookup(g, v, kind)
}

// Kinds returns every kind the catalog's ASO commit ships, sorted by group,
// kind and version; removed versions are in RemovedKinds. The slice is
// shared: do not modify it.
func Kinds() []*Kind { return mustCatalog().kinds }

// RemovedKinds returns the removed versions the catalog holds the facts of,
// sorted as Kinds. The slice is shared: do not modify it.
func RemovedKinds() []*Kind { return mustCatalog().removed }

// IsASOGroup reports whether group is an ASO API group (*.azure.com).
func IsASOGroup(group string) bool { return strings.HasSuffix(group, ".azure.com") }

// CatalogProvenance returns where the embedded catalog comes from.
func CatalogProvenance() Provenance { return mustCatalog().prov }

// schema returns the decoded package of k, decoding it on first use.
func (k *Kind) schema() (*pkg, error) {
	if !k.Generated {
		return nil, fmt.Errorf("%s: %w", k, ErrNotConvertible)
	}
	e := k.pkg
	if e == nil {
		return nil, fmt.Errorf("%s: catalog has no package %s", k, k.pkgKey)
	}
	e.once.Do(func() {
		raw, err := gunzip(e.gz)
		if err == nil {
			e.pkg, err = decodePackage(raw)
		}
		if err != nil {
			e.err = fmt.Errorf("catalog package %s: %w", k.pkgKey, err)
		}
	})
	return e.pkg, e.err
}

// spec returns the root spec type of k.
func (k *Kind) spec() (*typeDef, error) {
	p, err := k.schema()
	if err != nil {
		return nil, err
	}
	t := p.types[k.SpecType]
	if t == nil {
		return nil, fmt.Errorf("%s: spec type %s missing from catalog", k, k.SpecType)
	}
	return t, nil
}
