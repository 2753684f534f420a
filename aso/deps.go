package aso

import (
	"fmt"

	"github.com/gitaso/gitaso/internal/diag"
)

// DepType is the kind of an edge from a resource to something it needs.
type DepType int

const (
	DepReference DepType = iota // another ASO resource (by name in the same namespace, or by armId)
	DepSecret                   // one key of a Secret (SecretReference)
	DepSecretMap                // a whole Secret (SecretMapReference)
	DepConfigMap                // one key of a ConfigMap (*FromConfig)
)

// String returns "reference", "secret", "secretMap" or "configMap".
func (t DepType) String() string {
	switch t {
	case DepReference:
		return "reference"
	case DepSecret:
		return "secret"
	case DepSecretMap:
		return "secretMap"
	case DepConfigMap:
		return "configMap"
	}
	return fmt.Sprintf("DepType(%d)", int(t))
}

// Dep is one thing a spec uses.
type Dep struct {
	Field                    string // spec path, e.g. "spec.roleDefinitionReference" or "spec.identity.userAssignedIdentities[0].reference"
	Type                     DepType
	Group, Kind, Name, ARMID string // references (by name, same namespace, or by armId)
	Key                      string // secrets and config maps
	WellKnownName            string // RoleAssignment roleDefinitionReference.wellKnownName
}

// IsResource reports whether the dependency is an ASO resource in the same
// namespace (a DAG edge), as opposed to a raw ARM ID or a well-known name.
func (d Dep) IsResource() bool { return d.Type == DepReference && d.Name != "" }

// Dependencies returns every reference, secret and config map the spec uses
// (not the owner), in field order, with the field path of each. Malformed
// references (both armId and name, a name without group and kind, a secret
// without a key) are *diag.Error naming the field.
func Dependencies(k *Kind, spec map[string]any) ([]Dep, error) {
	td, err := k.spec()
	if err != nil {
		return nil, err
	}
	w := depWalker{}
	w.object(td, spec, newPath("spec"))
	return w.deps, w.errs.Err()
}

type depWalker struct {
	deps []Dep
	errs diag.List
}

func (w *depWalker) object(td *typeDef, m map[string]any, p *fpath) {
	for _, f := range td.fields {
		raw, ok := m[f.name]
		if !ok || raw == nil || f.x == "owner" || f.x == "azureName" {
			continue
		}
		p.push(f.name)
		w.value(f, 0, raw, p)
		p.pop()
	}
}

func (w *depWalker) value(f *field, d int, raw any, p *fpath) {
	if d < len(f.coll) {
		switch x := raw.(type) {
		case []any:
			for i, item := range x {
				if item != nil {
					p.pushIdx(i)
					w.value(f, d+1, item, p)
					p.pop()
				}
			}
		case map[string]any:
			for _, key := range sortedKeys(x) {
				if x[key] != nil {
					p.pushKey(key)
					w.value(f, d+1, x[key], p)
					p.pop()
				}
			}
		}
		return
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return // type errors are Convert's and Validate's to report
	}
	switch f.t {
	case ftObject:
		if f.ref != nil {
			w.object(f.ref, m, p)
		}
	case ftRef, ftWellKnownRef:
		r, err := readRef(m)
		if err != nil {
			w.errs = append(w.errs, &diag.Error{Field: p.String(), Msg: err.Error()})
			return
		}
		if r.ARMID == "" && r.Name == "" && r.WellKnownName == "" {
			w.errs = append(w.errs, &diag.Error{Field: p.String(), Msg: "reference needs armId or group, kind and name"})
			return
		}
		w.deps = append(w.deps, Dep{Field: p.String(), Type: DepReference, Group: r.Group, Kind: r.Kind, Name: r.Name, ARMID: r.ARMID, WellKnownName: r.WellKnownName})
	case ftSecretRef, ftConfigMapRef:
		name, _ := m["name"].(string)
		key, _ := m["key"].(string)
		if name == "" || key == "" {
			w.errs = append(w.errs, &diag.Error{Field: p.String(), Msg: "name and key are required"})
			return
		}
		t := DepSecret
		if f.t == ftConfigMapRef {
			t = DepConfigMap
		}
		w.deps = append(w.deps, Dep{Field: p.String(), Type: t, Name: name, Key: key})
	case ftSecretMapRef:
		name, _ := m["name"].(string)
		if name == "" {
			w.errs = append(w.errs, &diag.Error{Field: p.String(), Msg: "name is required"})
			return
		}
		w.deps = append(w.deps, Dep{Field: p.String(), Type: DepSecretMap, Name: name})
	}
}
