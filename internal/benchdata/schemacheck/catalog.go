package schemacheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Kind is the part of a kinds.json entry the checker needs.
type Kind struct {
	Group      string  `json:"group"`
	CRDVersion string  `json:"crdVersion"`
	Kind       string  `json:"kind"`
	Status     string  `json:"status"`
	ARMType    string  `json:"armType"`
	Scope      string  `json:"scope"`
	SpecType   string  `json:"specType"`
	SchemaFile string  `json:"schemaFile"`
	OwnerGroup string  `json:"ownerGroup"`
	OwnerKind  string  `json:"ownerKind"`
	Singleton  *string `json:"singletonName"`
	Generated  *bool   `json:"generated"`
}

// field is one spec field of a schema type (see the aso-schema README for the letters).
type field struct {
	T         string   `json:"t"`
	C         string   `json:"c"`
	R         string   `json:"r"`
	E         []string `json:"e"`
	Req       int      `json:"req"`
	X         string   `json:"x"`
	OwnerKind string   `json:"ownerKind"`
	Pair      string   `json:"pair"`
}

type schemaType struct {
	F map[string]field `json:"f"`
}

type schemaFile struct {
	Kinds map[string]struct {
		Spec string `json:"spec"`
	} `json:"kinds"`
	Types map[string]schemaType `json:"types"`
}

// Catalog is the facts catalog: kinds.json plus the schema files, loaded on demand.
type Catalog struct {
	dir   string
	kinds map[string]*Kind // "group/version/Kind"

	mu      sync.Mutex
	schemas map[string]*schemaFile // by schemaFile path
}

// Load reads kinds.json from dir (the aso-schema directory, e.g. ../shared/aso-schema).
func Load(dir string) (*Catalog, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kinds.json"))
	if err != nil {
		return nil, fmt.Errorf("load ASO facts catalog: %w", err)
	}
	var list []*Kind
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, "kinds.json"), err)
	}
	c := &Catalog{dir: dir, kinds: make(map[string]*Kind, len(list)), schemas: map[string]*schemaFile{}}
	for _, k := range list {
		c.kinds[k.Group+"/"+k.CRDVersion+"/"+k.Kind] = k
	}
	return c, nil
}

// Lookup returns the kind of (group, version, kind).
func (c *Catalog) Lookup(group, version, kind string) (*Kind, bool) {
	k, ok := c.kinds[group+"/"+version+"/"+kind]
	return k, ok
}

// Versions lists the CRD versions that have group/kind, sorted; used for suggestions.
func (c *Catalog) Versions(group, kind string) []string {
	var out []string
	for _, k := range c.kinds {
		if k.Group == group && strings.EqualFold(k.Kind, kind) {
			out = append(out, k.Group+"/"+k.CRDVersion+" "+k.Kind)
		}
	}
	sort.Strings(out)
	return out
}

func (c *Catalog) schema(k *Kind) (*schemaFile, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.schemas[k.SchemaFile]; ok {
		return s, nil
	}
	data, err := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(k.SchemaFile)))
	if err != nil {
		return nil, fmt.Errorf("load schema of %s/%s %s: %w", k.Group, k.CRDVersion, k.Kind, err)
	}
	var s schemaFile
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parse %s: %w", k.SchemaFile, err)
	}
	c.schemas[k.SchemaFile] = &s
	return &s, nil
}
