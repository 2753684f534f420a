package helmtpl

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/Masterminds/sprig/v3"
)

// Budget bounds one render. Each bound is checked while the templates run,
// so that a hostile template stops with an error instead of exhausting
// memory or CPU; a zero field is no bound.
type Budget struct {
	// MaxOutput is the number of bytes the chart's templates may write
	// together, and the most any one value (an include's or tpl's result,
	// a function's result, a printed value) may hold.
	MaxOutput int64
	// MaxBytes is the number of bytes the templates may produce in all:
	// what they write, and every string, list and map a function returns
	// (lists and maps count 16 bytes an element). It bounds the memory a
	// render holds, whatever it keeps in variables.
	MaxBytes int64
	// MaxSteps is the number of range iterations, template and include
	// executions and function calls the templates may make. It stops
	// loops that write nothing.
	MaxSteps int64
	// Lookup answers the templates' lookup function (apiVersion, kind,
	// namespace, name; name "" lists); nil answers an empty map, as helm
	// template does. Its error stops the render.
	Lookup func(apiVersion, kind, namespace, name string) (map[string]interface{}, error)
}

// maxNesting is how deeply include and tpl calls may nest (Helm stops a
// template including itself after 1000 levels; mutual recursion through
// many templates would exhaust the goroutine stack).
const maxNesting = 1000

// maxWalkDepth is how deeply a value a function serialises may nest (a map
// set into itself is infinitely deep: fmt and the serialisers would
// exhaust the stack).
const maxWalkDepth = 1000

// BoundError is returned by Render when a template passed one of the
// Budget's bounds, or the context ended (Err is then ctx's error).
type BoundError struct {
	// Limit names the bound: "output", "bytes", "steps", "nesting" or
	// "depth"; "" when the context ended.
	Limit string
	// Max is the bound's value.
	Max int64
	// What says what passed it.
	What string
	// Where is the template and position, "chart/templates/x.yaml:3:12",
	// or the template's name.
	Where string
	// Err is the context's error when it ended.
	Err error
}

func (e *BoundError) Error() string {
	s := e.What
	if e.Where != "" {
		s = e.Where + ": " + s
	}
	return s
}

// Unwrap returns the context's error, if any.
func (e *BoundError) Unwrap() error { return e.Err }

// Names of the functions gitaso adds to every template (calls the
// instrumented trees make; a chart cannot define functions).
const (
	stepFunc = "__gitaso_step"
	outFunc  = "__gitaso_out"
)

// state is one render's accounting.
type state struct {
	ctx      context.Context
	b        Budget
	steps    int64
	produced int64 // bytes produced, see Budget.MaxBytes
	written  int64 // bytes written to the output
	nesting  int
	fail     *BoundError
	template string // the template being rendered
	seen     map[*parse.Tree]bool
}

func newState(ctx context.Context, b Budget) *state {
	const none = int64(1) << 62
	if b.MaxOutput <= 0 {
		b.MaxOutput = none
	}
	if b.MaxBytes <= 0 {
		b.MaxBytes = none
	}
	if b.MaxSteps <= 0 {
		b.MaxSteps = none
	}
	return &state{ctx: ctx, b: b, seen: map[*parse.Tree]bool{}}
}

// failure returns the first bound passed, with its place.
func (st *state) failure() *BoundError {
	if st.fail != nil && st.fail.Where == "" {
		st.fail.Where = st.template
	}
	return st.fail
}

// stop records the first bound passed and returns it as an error.
func (st *state) stop(e *BoundError) error {
	if st.fail == nil {
		st.fail = e
	}
	return st.fail
}

// located sets the failure's place from a template execution error
// ("template: NAME:LINE:COL: ..."), innermost first, and returns err.
func (st *state) located(err, raw error) error {
	if st.fail != nil && st.fail.Where == "" {
		var ee template.ExecError
		if errors.As(raw, &ee) {
			if tokens := strings.SplitN(ee.Error(), ": ", 3); len(tokens) == 3 {
				st.fail.Where = tokens[1]
			}
		}
	}
	return err
}

// step counts one step and checks the context every 256 steps.
func (st *state) step() error {
	if st.fail != nil {
		return st.fail
	}
	st.steps++
	if st.steps > st.b.MaxSteps {
		return st.stop(&BoundError{Limit: "steps", Max: st.b.MaxSteps,
			What: fmt.Sprintf("the templates ran more than %d steps (range iterations, template and function calls)", st.b.MaxSteps)})
	}
	if st.steps&255 == 0 {
		if err := st.ctx.Err(); err != nil {
			return st.stop(&BoundError{What: "rendering stopped: " + context.Cause(st.ctx).Error(), Err: err})
		}
	}
	return nil
}

// produce counts n bytes a function or an include produced.
func (st *state) produce(what string, n int64) error {
	if n > st.b.MaxOutput {
		return st.stop(&BoundError{Limit: "output", Max: st.b.MaxOutput,
			What: fmt.Sprintf("%s would hold %d bytes, more than a chart may render", what, n)})
	}
	st.produced += n
	if st.produced > st.b.MaxBytes {
		return st.stop(&BoundError{Limit: "bytes", Max: st.b.MaxBytes,
			What: fmt.Sprintf("%s: the templates produced more than %d bytes in all (strings, lists and maps their functions returned)", what, st.b.MaxBytes)})
	}
	return nil
}

// room checks that a function may produce n more bytes before it does.
func (st *state) room(what string, n int64) error {
	if n < 0 || n > st.b.MaxOutput {
		return st.stop(&BoundError{Limit: "output", Max: st.b.MaxOutput,
			What: fmt.Sprintf("%s would produce more than %d bytes, more than a chart may render", what, st.b.MaxOutput)})
	}
	if st.produced+n > st.b.MaxBytes {
		return st.stop(&BoundError{Limit: "bytes", Max: st.b.MaxBytes,
			What: fmt.Sprintf("%s would produce %d bytes: the templates would produce more than %d bytes in all", what, n, st.b.MaxBytes)})
	}
	return nil
}

func (st *state) enter() error {
	if err := st.step(); err != nil {
		return err
	}
	if st.nesting++; st.nesting > maxNesting {
		return st.stop(&BoundError{Limit: "nesting", Max: maxNesting,
			What: fmt.Sprintf("include and tpl calls nest more than %d levels deep", maxNesting)})
	}
	return nil
}

func (st *state) leave() { st.nesting-- }

// limitedWriter is a strings.Builder that refuses to grow past a bound.
type limitedWriter struct {
	strings.Builder
	st     *state
	output bool // the chart's output: counts towards MaxOutput in all
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	n := int64(w.Len() + len(p))
	if w.output {
		if w.st.written+int64(len(p)) > w.st.b.MaxOutput {
			return 0, w.st.stop(&BoundError{Limit: "output", Max: w.st.b.MaxOutput,
				What: fmt.Sprintf("the chart's templates wrote more than %d bytes", w.st.b.MaxOutput)})
		}
		w.st.written += int64(len(p))
	} else if n > w.st.b.MaxOutput {
		return 0, w.st.stop(&BoundError{Limit: "output", Max: w.st.b.MaxOutput,
			What: fmt.Sprintf("an include or tpl result would hold more than %d bytes", w.st.b.MaxOutput)})
	}
	if w.output {
		// An include's or tpl's result is counted as its function's.
		if err := w.st.produce("the output", int64(len(p))); err != nil {
			return 0, err
		}
	}
	return w.Builder.Write(p)
}

func (w *limitedWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

func (st *state) buffer() *limitedWriter { return &limitedWriter{st: st} }
func (st *state) output() *limitedWriter { return &limitedWriter{st: st, output: true} }

// instrument adds a step at the start of every template and of every range
// body of t's templates not seen yet, and a size check to every action that
// prints, so that loops and recursion that write nothing are counted and
// stop at the deadline, and a printed value is weighed before fmt expands
// it.
func (st *state) instrument(t *template.Template) {
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Root == nil || st.seen[tt.Tree] {
			continue
		}
		st.seen[tt.Tree] = true
		instrumentList(tt.Root, true)
	}
}

func stepAction(pos parse.Pos, line int) *parse.ActionNode {
	id := parse.NewIdentifier(stepFunc).SetTree(nil).SetPos(pos)
	cmd := &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{id}}
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Line: line,
		Pipe: &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Line: line, Cmds: []*parse.CommandNode{cmd}}}
}

func instrumentList(l *parse.ListNode, counted bool) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			if len(n.Pipe.Decl) == 0 && !n.Pipe.IsAssign {
				id := parse.NewIdentifier(outFunc).SetTree(nil).SetPos(n.Pos)
				n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{id}})
			}
		case *parse.IfNode:
			instrumentList(n.List, false)
			instrumentList(n.ElseList, false)
		case *parse.WithNode:
			instrumentList(n.List, false)
			instrumentList(n.ElseList, false)
		case *parse.RangeNode:
			instrumentList(n.List, true)
			instrumentList(n.ElseList, false)
		}
	}
	if counted {
		l.Nodes = append([]parse.Node{stepAction(l.Pos, 0)}, l.Nodes...)
	}
}

// deepFuncs are the functions that serialise or copy their arguments
// whole: their arguments are weighed first (a list holding itself twice at
// every level expands exponentially; a map set into itself never ends).
var deepFuncs = map[string]bool{
	"toJson": true, "mustToJson": true, "toPrettyJson": true, "mustToPrettyJson": true, "toRawJson": true,
	"mustToRawJson": true, "toYaml": true, "toYamlPretty": true, "toToml": true, "toString": true,
	"toStrings": true, "toDecimal": true, "cat": true, "join": true, "quote": true, "squote": true,
	"print": true, "printf": true, "println": true, "html": true, "js": true, "urlquery": true,
	"deepCopy": true, "mustDeepCopy": true, "merge": true, "mustMerge": true, "mergeOverwrite": true,
	"mustMergeOverwrite": true, "sortAlpha": true, "fail": true, outFunc: true,
}

var errorType = reflect.TypeFor[error]()

// bind returns fm with every function counted as a step, its result
// counted against the budget, and the arguments of deepFuncs weighed first.
// Sprig's and Helm's functions that allocate by a count are replaced by
// bounded versions first (bounded).
func (st *state) bind(fm template.FuncMap) template.FuncMap {
	out := make(template.FuncMap, len(fm)+8)
	for name, fn := range fm {
		if name == stepFunc {
			out[name] = fn // counts itself
			continue
		}
		out[name] = st.wrap(name, fn)
	}
	return out
}

func (st *state) wrap(name string, fn any) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	deep := deepFuncs[name]
	fail := func(err error) []reflect.Value {
		if t.NumOut() == 2 && t.Out(1) == errorType {
			return []reflect.Value{reflect.Zero(t.Out(0)), reflect.ValueOf(&err).Elem()}
		}
		panic(err) // text/template reports a function's panic as its error
	}
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		if err := st.step(); err != nil {
			return fail(err)
		}
		if deep {
			budget := min(st.b.MaxOutput, st.b.MaxBytes-st.produced)
			for _, a := range args {
				if err := st.weigh(name, a, &budget); err != nil {
					return fail(err)
				}
			}
		}
		var res []reflect.Value
		if t.IsVariadic() {
			res = v.CallSlice(args)
		} else {
			res = v.Call(args)
		}
		if len(res) > 0 {
			if err := st.produce(name, shallowSize(res[0])); err != nil {
				return fail(err)
			}
		}
		return res
	}).Interface()
}

// shallowSize is what a function's result allocated: a string's bytes, 16
// bytes an element of a list or map.
func shallowSize(v reflect.Value) int64 {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return int64(v.Len())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return int64(v.Len())
		}
		return 16 * int64(v.Len())
	case reflect.Map:
		return 16 * int64(v.Len())
	}
	return 0
}

// weigh subtracts from *budget about the bytes v expands to when printed
// or serialised, and fails when it passes zero or v nests too deeply.
func (st *state) weigh(fn string, v reflect.Value, budget *int64) error {
	var walk func(v reflect.Value, depth int) bool
	deepErr := false
	walk = func(v reflect.Value, depth int) bool {
		if depth > maxWalkDepth {
			deepErr = true
			return false
		}
		*budget -= 2
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer:
			if !v.IsNil() {
				return walk(v.Elem(), depth+1)
			}
		case reflect.String:
			*budget -= int64(v.Len())
		case reflect.Slice, reflect.Array:
			if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
				*budget -= int64(v.Len())
				break
			}
			for i := range v.Len() {
				if !walk(v.Index(i), depth+1) {
					return false
				}
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				if !walk(it.Key(), depth+1) || !walk(it.Value(), depth+1) {
					return false
				}
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if !walk(v.Field(i), depth+1) {
					return false
				}
			}
		default:
			*budget -= 6
		}
		return *budget >= 0
	}
	if walk(v, 0) {
		return nil
	}
	if fn == outFunc {
		fn = "the value printed"
	}
	if deepErr {
		return st.stop(&BoundError{Limit: "depth", Max: maxWalkDepth,
			What: fmt.Sprintf("%s: its argument nests more than %d levels deep (a map or list holding itself?)", fn, maxWalkDepth)})
	}
	return st.stop(&BoundError{Limit: "bytes", Max: min(st.b.MaxOutput, st.b.MaxBytes),
		What: fmt.Sprintf("%s: its arguments expand to more bytes than the chart may still produce (a list or map holding the same value many times?)", fn)})
}

// bounded returns Helm's functions with those that allocate by a count
// (or multiply their input) checked first, and text/template's printing
// builtins weighed like sprig's (see deepFuncs), plus the functions the
// instrumented trees call.
func (st *state) bounded(fm template.FuncMap) template.FuncMap {
	count := func(fn string, n, each int64) error {
		if n < 0 {
			return fmt.Errorf("%s: negative count %d", fn, n)
		}
		if each > 0 && n > (int64(1)<<62)/each {
			return st.room(fn, -1)
		}
		return st.room(fn+fmt.Sprintf(" %d", n), n*each)
	}
	fm["repeat"] = func(n int, s string) (string, error) {
		if err := count("repeat", int64(n), int64(len(s))); err != nil {
			return "", err
		}
		return strings.Repeat(s, n), nil
	}
	indent := func(fn string, spaces int, v string) (string, error) {
		if err := count(fn, int64(spaces), int64(strings.Count(v, "\n")+1)); err != nil {
			return "", err
		}
		pad := strings.Repeat(" ", spaces)
		return pad + strings.ReplaceAll(v, "\n", "\n"+pad), nil
	}
	fm["indent"] = func(spaces int, v string) (string, error) { return indent("indent", spaces, v) }
	fm["nindent"] = func(spaces int, v string) (string, error) {
		s, err := indent("nindent", spaces, v)
		return "\n" + s, err
	}
	steps := func(start, stop, step int) int64 {
		switch {
		case stop < start && step < 0:
			return (int64(start) - int64(stop) + int64(-step) - 1) / int64(-step)
		case stop > start && step > 0:
			return (int64(stop) - int64(start) + int64(step) - 1) / int64(step)
		}
		return 0
	}
	sp := sprig.TxtFuncMap()
	untilStep := sp["untilStep"].(func(int, int, int) []int)
	fm["untilStep"] = func(start, stop, step int) ([]int, error) {
		if err := count("untilStep", steps(start, stop, step), 8); err != nil {
			return nil, err
		}
		return untilStep(start, stop, step), nil
	}
	until := sp["until"].(func(int) []int)
	fm["until"] = func(n int) ([]int, error) {
		if err := count("until", max(int64(n), -int64(n)), 8); err != nil {
			return nil, err
		}
		return until(n), nil
	}
	seq := sp["seq"].(func(...int) string)
	fm["seq"] = func(params ...int) (string, error) {
		var n int64
		switch len(params) {
		case 1:
			n = max(int64(params[0]), -int64(params[0])) + 1
		case 2:
			n = max(int64(params[1])-int64(params[0]), int64(params[0])-int64(params[1])) + 1
		case 3:
			if params[1] != 0 {
				n = max(int64(params[2])-int64(params[0]), int64(params[0])-int64(params[2]))/max(int64(params[1]), -int64(params[1])) + 1
			}
		}
		if err := count("seq", n, 24); err != nil { // as fmt prints the []int, then the joined string
			return "", err
		}
		return seq(params...), nil
	}
	for _, name := range []string{"randAlphaNum", "randAlpha", "randAscii", "randNumeric"} {
		f := sp[name].(func(int) string)
		fm[name] = func(n int) (string, error) {
			if err := count(name, int64(n), 4); err != nil { // runes
				return "", err
			}
			return f(n), nil
		}
	}
	randBytes := sp["randBytes"].(func(int) (string, error))
	fm["randBytes"] = func(n int) (string, error) {
		if err := count("randBytes", int64(n), 3); err != nil {
			return "", err
		}
		return randBytes(n)
	}
	fm["replace"] = func(old, repl, src string) (string, error) {
		if len(repl) > len(old) {
			n := int64(strings.Count(src, old))
			if err := count("replace", n, int64(len(repl)-len(old))); err != nil {
				return "", err
			}
		}
		return strings.ReplaceAll(src, old, repl), nil
	}
	wrapWith := sp["wrapWith"].(func(int, string, string) string)
	fm["wrapWith"] = func(l int, sep, s string) (string, error) {
		if err := count("wrapWith", int64(len(s))+1, int64(len(sep))+1); err != nil {
			return "", err
		}
		return wrapWith(l, sep, s), nil
	}
	for _, name := range []string{"regexReplaceAll", "regexReplaceAllLiteral", "mustRegexReplaceAll", "mustRegexReplaceAllLiteral"} {
		literal := strings.HasSuffix(name, "Literal")
		must := strings.HasPrefix(name, "must")
		fm[name] = func(regex, s, repl string) (string, error) {
			re, err := regexp.Compile(regex)
			if err != nil {
				if must {
					return "", err
				}
				panic(err) // as regexp.MustCompile in sprig
			}
			if err := st.regexRoom(name, re, s, repl, literal); err != nil {
				return "", err
			}
			if literal {
				return re.ReplaceAllLiteralString(s, repl), nil
			}
			return re.ReplaceAllString(s, repl), nil
		}
	}
	fm["print"] = fmt.Sprint
	fm["printf"] = fmt.Sprintf
	fm["println"] = fmt.Sprintln
	fm["html"] = template.HTMLEscaper
	fm["js"] = template.JSEscaper
	fm["urlquery"] = template.URLQueryEscaper
	fm[stepFunc] = func() (string, error) { return "", st.step() }
	fm[outFunc] = printable
	return fm
}

// printable returns what an action prints (its weight checked by the
// wrapper): as it is, or a pointer to a copy when only the pointer prints
// through a String or Error method (text/template uses the address of an
// addressable value, which an argument no longer is).
func printable(v any) any {
	if v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	t := rv.Type()
	if t.Kind() == reflect.Pointer || t.Implements(errorType) || t.Implements(stringerType) {
		return v
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(errorType) || pt.Implements(stringerType) {
		p := reflect.New(t)
		p.Elem().Set(rv)
		return p.Interface()
	}
	return v
}

var stringerType = reflect.TypeFor[fmt.Stringer]()

// regexRoom checks the size of a regular expression replacement before it
// is made: every match replaced by repl expanded.
func (st *state) regexRoom(fn string, re *regexp.Regexp, s, repl string, literal bool) error {
	if literal || !strings.Contains(repl, "$") {
		matches := int64(len(re.FindAllStringIndex(s, -1)))
		return st.room(fn, int64(len(s))+matches*int64(len(repl)))
	}
	total := int64(len(s))
	var dst []byte
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		dst = re.ExpandString(dst[:0], repl, s, m)
		if total += int64(len(dst)); total > st.b.MaxOutput {
			return st.room(fn, total)
		}
	}
	return st.room(fn, total)
}
