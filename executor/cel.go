package executor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
)

// CEL for operatorSpec.configMapExpressions and secretExpressions, with the
// environment ASO builds (Kubernetes' string extensions, optional types,
// cross-type numeric comparisons, UTC as the default time zone) and its two
// variables:
//
//   - self: the resource as ASO sees it: apiVersion, kind, metadata (name,
//     namespace, labels, annotations), spec (the manifest's, with azureName
//     defaulted) and status. gitaso has no ASO status types, so status is
//     approximated from ARM's final response: its top-level members (id,
//     name, type, location, tags, identity, sku, systemData, ...) plus the
//     members of its properties object lifted one level up (properties'
//     members win over top-level ones of the same name only where there is
//     no top-level one), and conditions = [Ready True]. That is ASO's
//     flattening for nearly every kind; where ASO renames a property in
//     status, the ARM name is what gitaso offers.
//   - secret: the kind's azure-generated secrets (listKeys and friends),
//     in secretExpressions only.
//
// ASO type-checks self against the Go status type, so a misspelled field is
// rejected when the expression is compiled; gitaso's self is dynamic, so the
// same mistake is reported when it is evaluated (after the resource is
// applied), with CEL's "no such key" error naming the field.

var (
	celEnvOnce sync.Once
	celEnv     *cel.Env
	celEnvErr  error
)

func env() (*cel.Env, error) {
	celEnvOnce.Do(func() {
		celEnv, celEnvErr = cel.NewEnv(
			ext.Strings(ext.StringsVersion(3)),
			cel.DefaultUTCTimeZone(true),
			cel.EagerlyValidateDeclarations(true),
			cel.OptionalTypes(),
			cel.CrossTypeNumericComparisons(true),
			cel.Variable("self", cel.DynType),
			cel.Variable("secret", cel.MapType(cel.StringType, cel.StringType)),
		)
	})
	return celEnv, celEnvErr
}

// expression is a compiled CEL expression.
type expression struct {
	prg     cel.Program
	secrets []string // the secret.X fields it reads, sorted
	err     error    // compile error
}

// expressions caches compiled expressions by their text for the life of the
// process (a plan compiles each distinct expression once; so does the next
// plan). Compiled programs are safe for concurrent use.
var expressions = struct {
	sync.Mutex
	m map[string]*expression
}{m: map[string]*expression{}}

// maxCachedExpressions bounds the cache; it is emptied when full.
const maxCachedExpressions = 4096

// compileExpression compiles (or returns the cached) expression.
func compileExpression(text string) *expression {
	expressions.Lock()
	x, ok := expressions.m[text]
	expressions.Unlock()
	if ok {
		return x
	}
	x = compile(text)
	expressions.Lock()
	if len(expressions.m) >= maxCachedExpressions {
		expressions.m = map[string]*expression{}
	}
	expressions.m[text] = x
	expressions.Unlock()
	return x
}

func compile(text string) *expression {
	e, err := env()
	if err != nil {
		return &expression{err: fmt.Errorf("CEL environment: %w", err)}
	}
	a, iss := e.Compile(text)
	if iss.Err() != nil {
		return &expression{err: fmt.Errorf("compile CEL expression %q: %w", text, iss.Err())}
	}
	if t := a.OutputType(); !outputAllowed(t) {
		return &expression{err: fmt.Errorf("expression %q must return one of [string,map(string, string)], but was %s", text, t)}
	}
	prg, err := e.Program(a, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return &expression{err: fmt.Errorf("prepare CEL expression %q: %w", text, err)}
	}
	set := map[string]bool{}
	selectedFields("secret", a.NativeRep().Expr(), set)
	x := &expression{prg: prg}
	for k := range set {
		x.secrets = append(x.secrets, k)
	}
	sort.Strings(x.secrets)
	return x
}

// outputAllowed accepts string, map(string, string) and the types that may
// turn out to be one of them once evaluated (dyn, map(string, dyn)).
func outputAllowed(t *cel.Type) bool {
	switch {
	case t.IsExactType(cel.StringType), t.IsExactType(cel.DynType),
		t.IsExactType(cel.MapType(cel.StringType, cel.StringType)),
		t.IsExactType(cel.MapType(cel.StringType, cel.DynType)),
		t.IsExactType(cel.MapType(cel.DynType, cel.DynType)):
		return true
	}
	return false
}

// CheckExpression reports whether text is a valid operatorSpec expression
// (it compiles and can return a string or a map of strings), for validation
// before anything is applied.
func CheckExpression(text string) error { return compileExpression(text).err }

// evalResult is a string (Values == nil) or a map of strings.
type evalResult struct {
	Value  string
	Values map[string]string
}

// eval runs x over self and secret.
func (x *expression) eval(text string, self map[string]any, secret map[string]string) (evalResult, error) {
	if x.err != nil {
		return evalResult{}, x.err
	}
	if secret == nil {
		secret = map[string]string{}
	}
	out, _, err := x.prg.Eval(map[string]any{"self": self, "secret": secret})
	if err != nil {
		return evalResult{}, fmt.Errorf("evaluate CEL expression %q: %w", text, err)
	}
	if s, ok := out.Value().(string); ok {
		return evalResult{Value: s}, nil
	}
	if out.Type() == types.MapType {
		if m, err := out.ConvertToNative(reflect.TypeFor[map[string]string]()); err == nil {
			if mm, ok := m.(map[string]string); ok {
				return evalResult{Values: mm}, nil
			}
		}
	}
	return evalResult{}, fmt.Errorf("expression %q must return one of [string,map(string, string)], but returned %s", text, out.Type().TypeName())
}

// selectedFields collects the fields selected from ident (secret.key1 → key1).
func selectedFields(ident string, e ast.Expr, out map[string]bool) {
	if e == nil {
		return
	}
	switch e.Kind() {
	case ast.CallKind:
		c := e.AsCall()
		selectedFields(ident, c.Target(), out)
		for _, a := range c.Args() {
			selectedFields(ident, a, out)
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		selectedFields(ident, c.IterRange(), out)
		selectedFields(ident, c.AccuInit(), out)
		selectedFields(ident, c.LoopCondition(), out)
		selectedFields(ident, c.LoopStep(), out)
		selectedFields(ident, c.Result(), out)
	case ast.ListKind:
		for _, it := range e.AsList().Elements() {
			selectedFields(ident, it, out)
		}
	case ast.MapKind:
		for _, it := range e.AsMap().Entries() {
			me := it.AsMapEntry()
			selectedFields(ident, me.Key(), out)
			selectedFields(ident, me.Value(), out)
		}
	case ast.StructKind:
		for _, it := range e.AsStruct().Fields() {
			selectedFields(ident, it.AsStructField().Value(), out)
		}
	case ast.SelectKind:
		s := e.AsSelect()
		if op := s.Operand(); op.Kind() == ast.IdentKind {
			if op.AsIdent() == ident {
				out[s.FieldName()] = true
			}
		} else {
			selectedFields(ident, op, out)
		}
	case ast.IdentKind:
		// A bare `secret` (e.g. secret["key1"] or the whole map) reads every
		// secret of the kind.
		if e.AsIdent() == ident {
			out["*"] = true
		}
	}
}

// decodeJSON decodes ARM JSON with integers as int64 (ASO's status types use
// int for them, which CEL sees as int, not double).
func decodeJSON(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return normaliseNumbers(v).(map[string]any), nil
}

func normaliseNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = normaliseNumbers(x)
		}
		return t
	case []any:
		for i, x := range t {
			t[i] = normaliseNumbers(x)
		}
		return t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, err := t.Float64()
		if err != nil || math.IsInf(f, 0) {
			return t.String()
		}
		return f
	}
	return v
}

// selfObject builds ASO's view of the resource for CEL (see the package
// comment above on the status approximation).
func selfObject(manifest map[string]any, spec map[string]any, azureName string, arm map[string]any) map[string]any {
	self := map[string]any{}
	for _, k := range []string{"apiVersion", "kind"} {
		if v, ok := manifest[k]; ok {
			self[k] = v
		}
	}
	meta := map[string]any{}
	if m, ok := manifest["metadata"].(map[string]any); ok {
		for k, v := range m {
			meta[k] = v
		}
	}
	if _, ok := meta["namespace"]; !ok {
		meta["namespace"] = "default"
	}
	self["metadata"] = meta
	sp := make(map[string]any, len(spec)+1)
	for k, v := range spec {
		sp[k] = v
	}
	if _, ok := sp["azureName"]; !ok && azureName != "" {
		sp["azureName"] = azureName
	}
	self["spec"] = sp
	status := map[string]any{}
	for k, v := range arm {
		if k != "properties" {
			status[k] = v
		}
	}
	if props, ok := arm["properties"].(map[string]any); ok {
		for k, v := range props {
			if _, taken := status[k]; !taken {
				status[k] = v
			}
		}
	}
	status["conditions"] = []any{map[string]any{"type": "Ready", "status": "True", "severity": "", "reason": "Succeeded"}}
	self["status"] = status
	return self
}
