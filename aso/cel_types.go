package aso

import (
	"fmt"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// The type of self, from the catalog.
//
// ASO declares self with ext.NativeTypes over the resource's Go type: field
// names are the json tags, escaped as Kubernetes escapes them (__dash__,
// __dot__, __slash__, __underscores__, and __true__/__false__/__null__/__in__),
// so a misspelt field fails when the expression is compiled. gitaso has the
// same facts for spec in the catalog, so it declares:
//
//   - the resource (<version>.<Kind>) with metadata, spec and status; as in
//     ASO, apiVersion and kind are not fields (ASO's TypeMeta is inlined
//     without a json name, so self.apiVersion does not compile there);
//   - metadata as v1.ObjectMeta (name, namespace, labels, annotations, uid,
//     generation, finalizers, ...);
//   - spec with the CRD version's spec types (strings, enums, ints, doubles,
//     bools, lists, maps, nested objects, references and secret/config map
//     destinations as genruntime's types); arbitrary JSON is dyn;
//   - status as dyn: the catalog has no status types, so a misspelt status
//     field is reported when the expression is evaluated ("no such key").
//
// At evaluation a declared field that the manifest does not set reads as its
// zero value ("" , 0, false, an empty list, map or object), as a nil pointer
// of ASO's Go types does; has() is false for it. Values are coerced to the
// declared scalar type (a YAML 1 in a double field is 1.0).

// selfType returns the CEL type of self for kind k and the option that
// declares it.
func selfType(k *Kind) (*cel.Type, cel.EnvOption, error) {
	root, err := k.spec()
	if err != nil {
		return nil, nil, err
	}
	s := &celSchema{objs: map[string]*celObj{}, version: k.Version}
	resName := k.Version + "." + k.Kind
	specName := s.object(root)
	meta := objectMeta()
	s.objs[meta.name] = meta
	for _, g := range genruntimeTypes() {
		s.objs[g.name] = g
	}
	s.objs[resName] = &celObj{name: resName, fields: map[string]*celField{
		"metadata": {json: "metadata", typ: cel.ObjectType(meta.name)},
		"spec":     {json: "spec", typ: cel.ObjectType(specName)},
		"status":   {json: "status", typ: cel.DynType},
	}}
	opt := func(env *cel.Env) (*cel.Env, error) {
		p := &schemaProvider{s: s, base: env.CELTypeProvider()}
		return cel.CustomTypeProvider(p)(env)
	}
	return cel.ObjectType(resName), opt, nil
}

type celSchema struct {
	version string
	objs    map[string]*celObj
}

// celObj is a declared object type.
type celObj struct {
	name   string
	fields map[string]*celField // by CEL (escaped) name
}

type celField struct {
	json string // member name in the JSON object
	typ  *cel.Type
}

// object declares a spec type (and the types it reaches) and returns its
// CEL name.
func (s *celSchema) object(td *typeDef) string {
	name := s.version + "." + td.name
	if s.objs[name] != nil {
		return name
	}
	o := &celObj{name: name, fields: map[string]*celField{}}
	s.objs[name] = o // before the fields: types may be recursive
	for _, f := range td.fields {
		o.fields[escapeCELField(f.name)] = &celField{json: f.name, typ: s.fieldType(f)}
	}
	return name
}

func (s *celSchema) fieldType(f *field) *cel.Type {
	var t *cel.Type
	switch f.t {
	case ftString:
		t = cel.StringType
	case ftBool:
		t = cel.BoolType
	case ftInt:
		t = cel.IntType
	case ftNumber:
		t = cel.DoubleType
	case ftEnum:
		t = cel.StringType
		if len(f.enum) > 0 {
			switch f.enum[0].(type) {
			case int64, int:
				t = cel.IntType
			case float64:
				t = cel.DoubleType
			case bool:
				t = cel.BoolType
			}
		}
	case ftObject:
		if f.ref == nil {
			t = cel.DynType
		} else {
			t = cel.ObjectType(s.object(f.ref))
		}
	case ftRef:
		t = cel.ObjectType("genruntime.ResourceReference")
	case ftKnownRef:
		t = cel.ObjectType("genruntime.KnownResourceReference")
	case ftArbitraryOwnerRef:
		t = cel.ObjectType("genruntime.ArbitraryOwnerReference")
	case ftWellKnownRef:
		t = cel.ObjectType("genruntime.WellKnownResourceReference")
	case ftSecretRef:
		t = cel.ObjectType("genruntime.SecretReference")
	case ftSecretMapRef:
		t = cel.ObjectType("genruntime.SecretMapReference")
	case ftConfigMapRef:
		t = cel.ObjectType("genruntime.ConfigMapReference")
	case ftSecretDest:
		t = cel.ObjectType("genruntime.SecretDestination")
	case ftConfigMapDest:
		t = cel.ObjectType("genruntime.ConfigMapDestination")
	case ftDestExpr:
		t = cel.ObjectType("core.DestinationExpression")
	default: // ftJSON
		t = cel.DynType
	}
	for i := len(f.coll) - 1; i >= 0; i-- {
		if f.coll[i] == collList {
			t = cel.ListType(t)
		} else {
			t = cel.MapType(cel.StringType, t)
		}
	}
	return t
}

func plainObject(name string, fields map[string]*cel.Type) *celObj {
	o := &celObj{name: name, fields: map[string]*celField{}}
	for n, t := range fields {
		o.fields[n] = &celField{json: n, typ: t}
	}
	return o
}

// objectMeta is Kubernetes' ObjectMeta as ASO's self has it.
func objectMeta() *celObj {
	str, strs := cel.StringType, cel.MapType(cel.StringType, cel.StringType)
	return plainObject("v1.ObjectMeta", map[string]*cel.Type{
		"name": str, "generateName": str, "namespace": str, "selfLink": str, "uid": str, "resourceVersion": str,
		"generation": cel.IntType, "creationTimestamp": cel.DynType, "deletionTimestamp": cel.DynType,
		"deletionGracePeriodSeconds": cel.IntType, "labels": strs, "annotations": strs,
		"ownerReferences": cel.ListType(cel.DynType), "finalizers": cel.ListType(str), "managedFields": cel.ListType(cel.DynType),
	})
}

// genruntimeTypes are ASO's reference and destination types.
func genruntimeTypes() []*celObj {
	str := cel.StringType
	return []*celObj{
		plainObject("genruntime.ResourceReference", map[string]*cel.Type{"group": str, "kind": str, "name": str, "armId": str}),
		plainObject("genruntime.KnownResourceReference", map[string]*cel.Type{"name": str, "armId": str}),
		plainObject("genruntime.ArbitraryOwnerReference", map[string]*cel.Type{"group": str, "kind": str, "name": str, "armId": str}),
		plainObject("genruntime.WellKnownResourceReference", map[string]*cel.Type{"group": str, "kind": str, "name": str, "armId": str, "wellKnownName": str}),
		plainObject("genruntime.SecretReference", map[string]*cel.Type{"name": str, "key": str}),
		plainObject("genruntime.SecretMapReference", map[string]*cel.Type{"name": str}),
		plainObject("genruntime.ConfigMapReference", map[string]*cel.Type{"name": str, "key": str}),
		plainObject("genruntime.SecretDestination", map[string]*cel.Type{"name": str, "key": str}),
		plainObject("genruntime.ConfigMapDestination", map[string]*cel.Type{"name": str, "key": str}),
		plainObject("core.DestinationExpression", map[string]*cel.Type{"name": str, "key": str, "value": str}),
	}
}

var celFieldEscaper = strings.NewReplacer("__", "__underscores__", ".", "__dot__", "-", "__dash__", "/", "__slash__")

// escapeCELField escapes a JSON member name as ASO's ParseStructTag does
// (Kubernetes' rules; of CEL's reserved words only true, false, null and in).
func escapeCELField(name string) string {
	switch name {
	case "true", "false", "null", "in":
		return "__" + name + "__"
	}
	return celFieldEscaper.Replace(name)
}

// schemaProvider declares the catalog's object types and reads their fields
// from the JSON maps self is made of; everything else goes to the base
// provider.
type schemaProvider struct {
	s    *celSchema
	base types.Provider
}

var _ types.Provider = (*schemaProvider)(nil)

func (p *schemaProvider) EnumValue(name string) ref.Val { return p.base.EnumValue(name) }

func (p *schemaProvider) FindIdent(name string) (ref.Val, bool) { return p.base.FindIdent(name) }

func (p *schemaProvider) FindStructType(name string) (*types.Type, bool) {
	if p.s.objs[name] != nil {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.base.FindStructType(name)
}

func (p *schemaProvider) FindStructFieldNames(name string) ([]string, bool) {
	o := p.s.objs[name]
	if o == nil {
		return p.base.FindStructFieldNames(name)
	}
	out := make([]string, 0, len(o.fields))
	for n := range o.fields {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, true
}

func (p *schemaProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	o := p.s.objs[name]
	if o == nil {
		return p.base.FindStructFieldType(name, field)
	}
	f := o.fields[field]
	if f == nil {
		return nil, false
	}
	return &types.FieldType{
		Type: f.typ,
		IsSet: func(target any) bool {
			m, _ := target.(map[string]any)
			v, ok := m[f.json]
			return ok && v != nil
		},
		GetFrom: func(target any) (any, error) {
			m, ok := target.(map[string]any)
			if !ok && target != nil {
				return nil, fmt.Errorf("field %s of %s: got %T, not an object", field, name, target)
			}
			v := m[f.json]
			if v == nil {
				return zeroCEL(f.typ), nil
			}
			return coerceCEL(f.typ, v), nil
		},
	}, true
}

// NewValue refuses to build the catalog's types: gitaso's self is JSON, not
// Go structs (ASO can construct its native types; no output needs it).
func (p *schemaProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if p.s.objs[name] != nil {
		return types.NewErr("cannot construct %s in an export expression", name)
	}
	return p.base.NewValue(name, fields)
}

// zeroCEL is the value of an unset field of type t (a nil pointer, slice or
// map of ASO's Go types reads as the zero value).
func zeroCEL(t *cel.Type) any {
	switch t.Kind() {
	case types.StringKind:
		return ""
	case types.IntKind:
		return int64(0)
	case types.DoubleKind:
		return float64(0)
	case types.BoolKind:
		return false
	case types.ListKind:
		return []any{}
	case types.MapKind, types.StructKind:
		return map[string]any{}
	}
	return nil
}

// coerceCEL converts JSON numbers to the declared scalar type.
func coerceCEL(t *cel.Type, v any) any {
	switch t.Kind() {
	case types.DoubleKind:
		switch n := v.(type) {
		case int:
			return float64(n)
		case int64:
			return float64(n)
		case uint64:
			return float64(n)
		}
	case types.IntKind:
		switch n := v.(type) {
		case int:
			return int64(n)
		case uint64:
			return int64(n)
		case float64:
			if n == float64(int64(n)) {
				return int64(n)
			}
		}
	case types.ListKind:
		if l, ok := v.([]any); ok && len(t.Parameters()) == 1 && isScalarKind(t.Parameters()[0]) {
			out := make([]any, len(l))
			for i, x := range l {
				out[i] = coerceCEL(t.Parameters()[0], x)
			}
			return out
		}
	case types.MapKind:
		if m, ok := v.(map[string]any); ok && len(t.Parameters()) == 2 && isScalarKind(t.Parameters()[1]) {
			out := make(map[string]any, len(m))
			for k, x := range m {
				out[k] = coerceCEL(t.Parameters()[1], x)
			}
			return out
		}
	}
	return v
}

func isScalarKind(t *cel.Type) bool {
	switch t.Kind() {
	case types.IntKind, types.DoubleKind:
		return true
	}
	return false
}
