package aso

import (
	"bytes"
	"context"
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

// CEL for operatorSpec.configMapExpressions and secretExpressions.
//
// The environment is ASO's (internal/util/cel/cel.go NewEnv), option by
// option: Kubernetes' extended string library version 3, UTC as the default
// time zone, eagerly validated declarations, optional types, cross-type
// numeric comparisons and two-variable comprehensions version 0
// (transformMap, transformMapEntry, all/exists with two variables), over the
// standard macros and functions; no other library (no lists, sets, math,
// encoders, regex or Kubernetes libraries), no homogeneous aggregate
// literals. Programs are planned without options, as ASO's are.
//
// self is typed from the catalog when the kind has a generated schema
// (selfType, cel_types.go): metadata (ObjectMeta), spec (the CRD version's
// spec types, field names escaped as ASO escapes them) and status (dynamic:
// gitaso has no status types). A misspelt spec or metadata field fails at
// compile time, as in ASO. Kinds without a schema get a dynamic self.
//
// secret is the kind's azure-generated secrets that the expression selects
// (secret.key1), in secretExpressions only: ASO passes exactly those
// (FindSecretUsage), so secret["key1"] finds nothing.
//
// Two limits ASO does not have: an evaluation is stopped when its cost
// exceeds MaxExpressionCost (Kubernetes' per-call limit) and when its context
// is cancelled, so a commit cannot wedge the apply loop.

// MaxExpressionCost is the largest CEL cost an export expression may use when
// it is evaluated (cel-go's runtime cost units; Kubernetes' per-call limit).
// ASO sets no limit; an expression this expensive would stall its reconciler.
const MaxExpressionCost = 1_000_000

// interruptEvery is how many comprehension iterations run between checks of
// the evaluation's context.
const interruptEvery = 100

// celOptions are ASO's environment options, before the variables.
func celOptions() []cel.EnvOption {
	return []cel.EnvOption{
		ext.Strings(ext.StringsVersion(3)),
		cel.DefaultUTCTimeZone(true),
		cel.EagerlyValidateDeclarations(true),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		ext.TwoVarComprehensions(ext.TwoVarComprehensionsVersion(0)),
	}
}

// newCELEnv builds the environment with self of the given type; extra
// options (a type provider) come before the variables, as in ASO.
func newCELEnv(self *cel.Type, extra ...cel.EnvOption) (*cel.Env, error) {
	opts := append(celOptions(), extra...)
	opts = append(opts,
		cel.Variable("self", self),
		cel.Variable("secret", cel.MapType(cel.StringType, cel.StringType)),
	)
	return cel.NewEnv(opts...)
}

var (
	dynEnvOnce sync.Once
	dynEnv     *cel.Env
	dynEnvErr  error
)

// dynamicEnv is the environment of kinds without a schema: self is dyn.
func dynamicEnv() (*cel.Env, error) {
	dynEnvOnce.Do(func() { dynEnv, dynEnvErr = newCELEnv(cel.DynType) })
	return dynEnv, dynEnvErr
}

// envs caches one environment per kind, as ASO caches one per Go type.
var envs sync.Map // *Kind → *envEntry

type envEntry struct {
	once sync.Once
	env  *cel.Env
	err  error
}

// celEnv returns the environment for expressions of kind k (nil: dynamic).
func celEnv(k *Kind) (*cel.Env, error) {
	if k == nil || !k.Generated {
		return dynamicEnv()
	}
	v, _ := envs.LoadOrStore(k, &envEntry{})
	e := v.(*envEntry)
	e.once.Do(func() {
		self, opt, err := selfType(k)
		if err != nil {
			e.err = err
			return
		}
		e.env, e.err = newCELEnv(self, opt)
	})
	return e.env, e.err
}

// Expression is a compiled export expression. Programs are safe for
// concurrent use.
type Expression struct {
	Text string
	// Secrets are the fields the expression selects from secret (secret.key1
	// → key1), sorted.
	Secrets []string
	prg     cel.Program
	err     error // compile error
}

// exprKey caches compiled expressions per kind and text.
type exprKey struct {
	k    *Kind
	text string
}

// expressions caches compiled expressions for the life of the process (a
// plan compiles each distinct expression once; so does the next plan).
var expressions = struct {
	sync.Mutex
	m map[exprKey]*Expression
}{m: map[exprKey]*Expression{}}

// maxCachedExpressions bounds the cache; it is emptied when full.
const maxCachedExpressions = 4096

// CompileExpression compiles an export expression for kind k (nil for a
// dynamic self), or returns the cached result. The error is a compile error
// (syntax, an unknown field of a typed self, a result type other than string
// or map(string, string)).
func CompileExpression(k *Kind, text string) (*Expression, error) {
	key := exprKey{k, text}
	expressions.Lock()
	x, ok := expressions.m[key]
	expressions.Unlock()
	if !ok {
		x = compileExpression(k, text)
		expressions.Lock()
		if len(expressions.m) >= maxCachedExpressions {
			expressions.m = map[exprKey]*Expression{}
		}
		expressions.m[key] = x
		expressions.Unlock()
	}
	return x, x.err
}

// CheckExpression reports whether text is a valid export expression of kind
// k (nil: any kind): it compiles and can return a string or a map of
// strings. It is what validate and plan run before anything is applied.
func CheckExpression(k *Kind, text string) error {
	_, err := CompileExpression(k, text)
	return err
}

func compileExpression(k *Kind, text string) *Expression {
	x := &Expression{Text: text}
	e, err := celEnv(k)
	if err != nil {
		x.err = fmt.Errorf("CEL environment: %w", err)
		return x
	}
	a, iss := e.Compile(text)
	if iss.Err() != nil {
		x.err = fmt.Errorf("failed to compile CEL expression: %q: %w", text, iss.Err())
		return x
	}
	if t := a.OutputType(); !outputAllowed(t) {
		x.err = fmt.Errorf("expression %q must return one of [string,map(string, string)], but was %s", text, t)
		return x
	}
	prg, err := e.Program(a, cel.CostLimit(MaxExpressionCost), cel.InterruptCheckFrequency(interruptEvery))
	if err != nil {
		x.err = fmt.Errorf("failed to generate program from CEL AST: %q: %w", text, err)
		return x
	}
	x.prg = prg
	set := map[string]bool{}
	selectedFields("secret", a.NativeRep().Expr(), set)
	for s := range set {
		x.Secrets = append(x.Secrets, s)
	}
	sort.Strings(x.Secrets)
	return x
}

// outputAllowed accepts ASO's output types, string and map(string, string),
// and the dynamic types that may turn out to be one of them once evaluated
// (ASO's status is typed; gitaso's is dyn, so self.status.x is dyn).
func outputAllowed(t *cel.Type) bool {
	switch {
	case t.IsExactType(cel.StringType), t.IsExactType(cel.DynType),
		t.IsExactType(cel.MapType(cel.StringType, cel.StringType)),
		t.IsExactType(cel.MapType(cel.StringType, cel.DynType)),
		t.IsExactType(cel.MapType(cel.DynType, cel.DynType)),
		t.IsExactType(cel.MapType(cel.DynType, cel.StringType)):
		return true
	}
	return false
}

// ExpressionResult is a string (Values == nil) or a map of strings.
type ExpressionResult struct {
	Value  string
	Values map[string]string
}

// Eval runs the expression over self (see SelfObject) and secret. It stops
// when ctx is cancelled or the cost exceeds MaxExpressionCost.
func (x *Expression) Eval(ctx context.Context, self map[string]any, secret map[string]string) (ExpressionResult, error) {
	if x.err != nil {
		return ExpressionResult{}, x.err
	}
	if secret == nil {
		secret = map[string]string{}
	}
	out, _, err := x.prg.ContextEval(ctx, map[string]any{"self": self, "secret": secret})
	if err != nil {
		return ExpressionResult{}, fmt.Errorf("failed to eval CEL expression: %q: %w", x.Text, err)
	}
	if s, ok := out.Value().(string); ok {
		return ExpressionResult{Value: s}, nil
	}
	if out.Type() == types.MapType {
		if m, err := out.ConvertToNative(reflect.TypeFor[map[string]string]()); err == nil {
			if mm, ok := m.(map[string]string); ok {
				return ExpressionResult{Values: mm}, nil
			}
		}
	}
	return ExpressionResult{}, fmt.Errorf("expression %q must return one of [string,map(string, string)], but returned %s", x.Text, out.Type().TypeName())
}

// selectedFields collects the fields selected from ident (secret.key1 →
// key1), as ASO's findExprSelectedFields does.
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
	}
}

// DecodeARM decodes an ARM response with integers as int64 (ASO's status
// types use int for them, which CEL sees as int, not double).
func DecodeARM(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if v == nil {
		return map[string]any{}, nil
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

// SelfObject builds ASO's view of an applied resource of kind k (nil when
// unknown) for CEL: apiVersion, kind, metadata (namespace defaulted), spec
// (the manifest's, azureName defaulted) and status. gitaso has no ASO status
// types, so status is built from ARM's response as ASO's generator shapes it:
// the top-level members (id, name, type, location, tags, identity, sku,
// systemData, ...) plus, for kinds whose spec flattens ARM's properties, the
// members of properties lifted one level up (a top-level member wins over a
// property of the same name); kinds whose spec has a properties field (e.g.
// cognitiveservices Account) keep status.properties as it is. conditions is
// [Ready True]. Where ASO renames a property in status, the ARM name is what
// gitaso offers.
func SelfObject(k *Kind, manifest, arm map[string]any, azureName string) map[string]any {
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
	spec, _ := manifest["spec"].(map[string]any)
	sp := make(map[string]any, len(spec)+1)
	for k, v := range spec {
		sp[k] = v
	}
	if _, ok := sp["azureName"]; !ok && azureName != "" {
		sp["azureName"] = azureName
	}
	self["spec"] = sp
	keep := specHasProperties(k)
	status := map[string]any{}
	for name, v := range arm {
		if name != "properties" || keep {
			status[name] = v
		}
	}
	if props, ok := arm["properties"].(map[string]any); ok && !keep {
		for name, v := range props {
			if _, taken := status[name]; !taken {
				status[name] = v
			}
		}
	}
	status["conditions"] = []any{map[string]any{"type": "Ready", "status": "True", "severity": "", "reason": "Succeeded"}}
	self["status"] = status
	return self
}

// specHasProperties reports whether kind k's spec keeps ARM's properties
// object as a field (ASO does not flatten it then, in spec or status).
func specHasProperties(k *Kind) bool {
	if k == nil || !k.Generated {
		return false
	}
	td, err := k.spec()
	if err != nil {
		return false
	}
	return td.byName["properties"] != nil
}
