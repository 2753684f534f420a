package emulator

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// resource is one stored ARM resource. body is the JSON served on GET (id, name, type and read-only fields
// included), kept serialised so that reads cost no encoding.
type resource struct {
	ID        string // canonical casing of the first create
	Type      string // as in the creating request
	Name      string
	Location  string
	key       string // lower-cased ID
	typeKey   string // lower-cased type
	parentKey string // lower-cased parent ID ("" at tenant level)
	subKey    string // lower-cased subscription ID ("" at tenant level)
	rgKey     string // lower-cased resource group name ("" outside resource groups)
	body      []byte
	opID      string // in-flight operation, "" when none
	state     string // provisioning state as last written
}

func (r *resource) decode() (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		return nil, fmt.Errorf("decode stored resource %s: %w", r.ID, err)
	}
	return m, nil
}

type keySet map[string]struct{}

// store is the generic resource store: resources keyed by lower-cased ID, with a children index (listing and
// cascade) and a type index (subscription-wide lists, Resource Graph). It is not safe for concurrent use; the
// Emulator's lock guards it.
type store struct {
	byKey    map[string]*resource
	children map[string]keySet
	byType   map[string]keySet
}

func newStore() *store {
	return &store{byKey: map[string]*resource{}, children: map[string]keySet{}, byType: map[string]keySet{}}
}

func (s *store) get(key string) *resource { return s.byKey[key] }

func (s *store) len() int { return len(s.byKey) }

// put inserts or replaces r (indexes follow).
func (s *store) put(r *resource) {
	if old := s.byKey[r.key]; old != nil {
		if old.parentKey != r.parentKey {
			delete(s.children[old.parentKey], r.key)
		}
		if old.typeKey != r.typeKey {
			delete(s.byType[old.typeKey], r.key)
		}
	}
	s.byKey[r.key] = r
	add := func(m map[string]keySet, k string) {
		set := m[k]
		if set == nil {
			set = keySet{}
			m[k] = set
		}
		set[r.key] = struct{}{}
	}
	add(s.children, r.parentKey)
	add(s.byType, r.typeKey)
}

// remove deletes the resource and every descendant (nested children and extension resources), returning the
// removed resources, descendants first.
func (s *store) remove(key string) []*resource {
	r := s.byKey[key]
	if r == nil {
		return nil
	}
	var out []*resource
	var walk func(k string)
	walk = func(k string) {
		for ck := range s.children[k] {
			walk(ck)
		}
		if res := s.byKey[k]; res != nil {
			out = append(out, res)
			delete(s.byKey, k)
			if set := s.children[res.parentKey]; set != nil {
				delete(set, k)
				if len(set) == 0 {
					delete(s.children, res.parentKey)
				}
			}
			if set := s.byType[res.typeKey]; set != nil {
				delete(set, k)
				if len(set) == 0 {
					delete(s.byType, res.typeKey)
				}
			}
		}
		delete(s.children, k)
	}
	walk(key)
	return out
}

// childrenOf returns the direct children of parentKey of the given type (any type when typeKey is ""), sorted by key.
func (s *store) childrenOf(parentKey, typeKey string) []*resource {
	var out []*resource
	for k := range s.children[parentKey] {
		r := s.byKey[k]
		if r != nil && (typeKey == "" || r.typeKey == typeKey) {
			out = append(out, r)
		}
	}
	sortResources(out)
	return out
}

// ofType returns every resource of a type whose ID lies under scopeKey ("" for all), sorted by key.
func (s *store) ofType(typeKey, scopeKey string) []*resource {
	var out []*resource
	for k := range s.byType[typeKey] {
		if scopeKey == "" || scopeContains(scopeKey, k) {
			out = append(out, s.byKey[k])
		}
	}
	sortResources(out)
	return out
}

// under returns every resource whose ID lies strictly under scopeKey, sorted by key.
func (s *store) under(scopeKey string) []*resource {
	var out []*resource
	var walk func(k string)
	walk = func(k string) {
		for ck := range s.children[k] {
			if r := s.byKey[ck]; r != nil {
				out = append(out, r)
			}
			walk(ck)
		}
	}
	walk(scopeKey)
	sortResources(out)
	return out
}

func (s *store) all() []*resource {
	out := make([]*resource, 0, len(s.byKey))
	for _, r := range s.byKey {
		out = append(out, r)
	}
	sortResources(out)
	return out
}

func sortResources(rs []*resource) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].key < rs[j].key })
}

// newResource builds the index fields of a resource from its parsed path.
func newResource(p armPath, location string, body []byte) *resource {
	r := &resource{
		ID:        p.ID,
		Type:      p.Type,
		Name:      p.Name,
		Location:  location,
		key:       strings.ToLower(p.ID),
		typeKey:   strings.ToLower(p.Type),
		parentKey: strings.ToLower(p.Parent),
		subKey:    strings.ToLower(p.Sub),
		rgKey:     strings.ToLower(p.RG),
		body:      body,
	}
	if p.Type == typeResourceGroup {
		r.rgKey = strings.ToLower(p.Name)
	}
	return r
}
