package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// ParseFile parses a multi-document YAML file ("---" separated) into objects.
//
// name is the slash path of the file relative to the repository root; it is
// recorded in every Object and every error. Empty documents (only comments,
// or nothing) are skipped. A document of kind List (or a core v1 *List such
// as ConfigMapList) is expanded into its items. Every object must
// have apiVersion, kind and metadata.name (strings); metadata.namespace,
// annotations and labels must be strings when set. A null label or
// annotation value (and a null value in a ConfigMap's or Secret's data,
// binaryData or stringData) becomes "", as in Kubernetes.
//
// Values are normalised to JSON-compatible Go values: map[string]any, []any,
// string, bool, nil, int64 for integers and float64 for other numbers.
// Timestamps and !!binary values keep their text. Duplicate mapping keys, NaN
// and infinities are errors.
//
// Errors are a diag.List naming file and line. A YAML syntax error stops the
// file there (the YAML stream cannot be resynchronised); other errors are
// collected per document. A file beyond DefaultLimits (size, YAML nodes
// with aliases expanded, nesting depth) is refused with one error naming
// the limit (ErrLimit) before anything of it is expanded. ParseFile never
// returns objects together with an error.
func ParseFile(name string, data []byte) (objs []manifest.Object, err error) {
	objs, _, err = parseFile(name, data, DefaultLimits())
	return objs, err
}

// parseFile is ParseFile with limits; it also returns the number of YAML
// nodes the file holds with its aliases expanded (Limits.MaxTotalNodes
// counts them).
func parseFile(name string, data []byte, lim Limits) (objs []manifest.Object, nodes int64, err error) {
	return parseText(name, data, lim, false)
}

// parseGenerated is parseFile for generated text (File.Generated), such as
// the output of a kustomize build named after its kustomization file. Its
// lines are not lines of the file at name, so an object carries the file
// and line its origin comment (OriginComment) names, or else Line 0; so do
// its errors. Errors outside any object (YAML syntax, limits) name the file
// at Line 0.
func parseGenerated(name string, data []byte, lim Limits) (objs []manifest.Object, nodes int64, err error) {
	objs, nodes, err = parseText(name, data, lim, true)
	for _, e := range diag.AsList(err) {
		if le := (*LimitError)(nil); errors.As(e, &le) {
			le.What = strings.Replace(le.What, "the file", "the build output of this kustomization", 1)
		}
	}
	return objs, nodes, err
}

// parseText parses a file's text; generated: see parseGenerated.
func parseText(name string, data []byte, lim Limits, generated bool) (objs []manifest.Object, nodes int64, err error) {
	return parseTextWith(name, data, lim, generated, !generated)
}

// parseTextWith is parseText; fast reads the text with fastParse when it
// can (never generated text, whose origin comments yaml.v3 keeps).
func parseTextWith(name string, data []byte, lim Limits, generated, fast bool) (objs []manifest.Object, nodes int64, err error) {
	lim = lim.WithDefaults()
	var errs diag.List
	m := newMeter(name, lim, nil)
	defer func() {
		// yaml.v3 is fuzzed upstream, but a panic must never take the daemon down.
		if r := recover(); r != nil {
			objs, nodes = nil, m.nodes
			err = diag.List{&diag.Error{File: name, Msg: fmt.Sprintf("cannot parse YAML: %v", r)}}
		}
	}()
	if int64(len(data)) > lim.MaxFileSize {
		return nil, 0, diag.List{fileSizeError(name, int64(len(data)), lim.MaxFileSize)}
	}
	if fast {
		if objs, nodes, ok := fastParse(name, data, lim); ok {
			return objs, nodes, nil
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	p := parser{file: name, max: lim.MaxNodes, generated: generated} // one node budget for the whole file
	for index := 0; ; index++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			e := yamlError(name, data, err, !generated)
			if generated {
				e.Line = 0 // a line of the generated text points nowhere
			}
			errs = append(errs, e)
			break
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
			continue // empty document
		}
		// Measure before expanding anything: a limit stops the file, once.
		if e := m.document(&doc); e != nil {
			if generated {
				e.Line = 0
			}
			errs = append(errs, e)
			break
		}
		// Where the document's objects and errors are: its own file and
		// line, or for generated text the origin its renderer named.
		file, line := name, root.Line
		if generated {
			line = 0
			if or, ok := docOrigin(&doc); ok {
				file, line = or.File, or.Line
			}
		}
		first := len(errs)
		objs, errs = appendDocument(objs, errs, &p, index, root, file, line, generated)
		if generated {
			for _, e := range errs[first:] {
				switch {
				case errors.Is(e, ErrLimit):
					e.File, e.Line = name, 0 // the build output's size, not the object's
				case e.File == name: // a line of the generated text
					e.File, e.Line = file, line
				}
			}
		}
		if p.tooLarge {
			break
		}
	}
	if len(errs) > 0 {
		return nil, m.nodes, errs
	}
	return objs, m.nodes, nil
}

// appendDocument converts one YAML document (root) into objects, appended
// to objs, and its problems, appended to errs. file and line are where its
// objects are (for a List, items of generated text keep line; items of a
// file their own lines).
func appendDocument(objs []manifest.Object, errs diag.List, p *parser, index int, root *yaml.Node, file string, line int, generated bool) ([]manifest.Object, diag.List) {
	p.errs = nil
	v := p.value(root)
	if len(p.errs) > 0 {
		return objs, append(errs, p.errs...)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return objs, append(errs, &diag.Error{File: file, Line: line,
			Msg: fmt.Sprintf("document is a %s, want a mapping (a Kubernetes-style object)", kindName(root))})
	}
	if isList(m) {
		items, ok := m["items"].([]any)
		if !ok && m["items"] != nil {
			return objs, append(errs, &diag.Error{File: file, Line: line, Field: "items", Msg: "must be a list"})
		}
		itemNodes := listItemNodes(root)
		for i, it := range items {
			itemLine := line
			if i < len(itemNodes) && !generated {
				itemLine = itemNodes[i].Line
			}
			im, ok := it.(map[string]any)
			if !ok {
				errs = append(errs, &diag.Error{File: file, Line: itemLine, Field: fmt.Sprintf("items[%d]", i), Msg: "must be a mapping"})
				continue
			}
			o := manifest.Object{File: file, Line: itemLine, Index: index, Content: im}
			emptyNulls(o)
			if es := validate(o); len(es) > 0 {
				errs = append(errs, es...)
				continue
			}
			objs = append(objs, o)
		}
		return objs, errs
	}
	o := manifest.Object{File: file, Line: line, Index: index, Content: m}
	emptyNulls(o)
	if es := validate(o); len(es) > 0 {
		return objs, append(errs, es...)
	}
	return append(objs, o), errs
}

// isList reports whether m is a List wrapper (kind "List" or "*List" in the
// core group, as kubectl accepts: v1/List, v1/ConfigMapList, ...).
func isList(m map[string]any) bool {
	kind, _ := m["kind"].(string)
	av, _ := m["apiVersion"].(string)
	if kind == "List" {
		return true
	}
	return strings.HasSuffix(kind, "List") && av == "v1" && m["items"] != nil
}

func listItemNodes(root *yaml.Node) []*yaml.Node {
	for root.Kind == yaml.AliasNode {
		root = root.Alias
	}
	if root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "items" {
			n := root.Content[i+1]
			for n.Kind == yaml.AliasNode {
				n = n.Alias
			}
			if n.Kind == yaml.SequenceNode {
				return n.Content
			}
		}
	}
	return nil
}

// docOrigin reads the origin comment (OriginComment) a Renderer wrote
// before a document. yaml.v3 attaches a comment at the start of a document
// to the document, to its root node or to the root's first key, depending
// on blank lines.
func docOrigin(doc *yaml.Node) (origin, bool) {
	comments := []string{doc.HeadComment}
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		comments = append(comments, root.HeadComment)
		if root.Kind == yaml.MappingNode && len(root.Content) > 0 {
			comments = append(comments, root.Content[0].HeadComment)
		}
	}
	for _, c := range comments {
		if o, ok := parseOrigin(c); ok {
			return o, true
		}
	}
	return origin{}, false
}

// emptyNulls turns null values of the string maps Kubernetes declares as
// map[string]string or map[string][]byte into "", as the API server's JSON
// decoding does ("key:" with nothing after it, or a Helm template whose
// lookup found nothing): metadata.labels and metadata.annotations of every
// object, data and binaryData of a v1 ConfigMap, data and stringData of a v1
// Secret. Values of other types are left for validate and SecretData /
// ConfigMapData to refuse.
func emptyNulls(o manifest.Object) {
	fields := func(m map[string]any, keys ...string) {
		for _, key := range keys {
			vals, _ := m[key].(map[string]any)
			for k, v := range vals {
				if v == nil {
					vals[k] = ""
				}
			}
		}
	}
	if md, ok := o.Content["metadata"].(map[string]any); ok {
		fields(md, "labels", "annotations")
	}
	switch {
	case o.IsConfigMap():
		fields(o.Content, "data", "binaryData")
	case o.IsSecret():
		fields(o.Content, "data", "stringData")
	}
}

// validate checks the fields every object needs.
func validate(o manifest.Object) diag.List {
	var errs diag.List
	fail := func(field, msg string) {
		errs = append(errs, &diag.Error{File: o.File, Line: o.Line, Field: field, Msg: msg})
	}
	requireString := func(m map[string]any, key, field string) {
		switch v := m[key].(type) {
		case nil:
			fail(field, "required field is missing")
		case string:
			if v == "" {
				fail(field, "required field is empty")
			}
		default:
			fail(field, fmt.Sprintf("must be a string, got %s", manifest.TypeName(v)))
		}
	}
	requireString(o.Content, "apiVersion", "apiVersion")
	requireString(o.Content, "kind", "kind")
	switch md := o.Content["metadata"].(type) {
	case nil:
		fail("metadata.name", "required field is missing")
	case map[string]any:
		requireString(md, "name", "metadata.name")
		if v, ok := md["namespace"]; ok && v != nil {
			if _, ok := v.(string); !ok {
				fail("metadata.namespace", fmt.Sprintf("must be a string, got %s", manifest.TypeName(v)))
			}
		}
		for _, key := range []string{"annotations", "labels"} {
			switch m := md[key].(type) {
			case nil:
			case map[string]any:
				for _, k := range sortedKeys(m) {
					if _, ok := m[k].(string); !ok {
						fail("metadata."+key+"."+k, fmt.Sprintf("must be a string, got %s (quote it)", manifest.TypeName(m[k])))
					}
				}
			default:
				fail("metadata."+key, fmt.Sprintf("must be a mapping, got %s", manifest.TypeName(m)))
			}
		}
	default:
		fail("metadata", fmt.Sprintf("must be a mapping, got %s", manifest.TypeName(md)))
	}
	if len(errs) > 0 {
		if obj := partialID(o); obj != "" {
			for _, e := range errs {
				e.Object = obj
			}
		}
	}
	return errs
}

// partialID names the object in an error when kind and name are known.
func partialID(o manifest.Object) string {
	if o.Kind() == "" || o.Name() == "" {
		return ""
	}
	return o.ID()
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns a yaml.v3 error into a diag.Error with a line. The line
// yaml.v3 puts in its message is often not where the error is: for parser
// errors it is the line before the construct the parser was in (a 0-based
// line of the enclosing mapping's start: "did not find expected key" of a
// mis-indented line 15 reads "line 6"), it omits "line N" on the first
// line, and alias and reader errors (bad encoding, control characters)
// carry no position. With locate, the line is found instead (see
// errorLine): the first line up to which the text fails with the same
// error. Otherwise, or when that cannot be told, yaml.v3's line is kept,
// and the first offending character is looked for in reader errors.
func yamlError(file string, data []byte, err error, locate bool) *diag.Error {
	msg := err.Error()
	found := 0
	if locate {
		found = errorLine(data, msg)
	}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if found > 0 {
			line = found
		}
		return &diag.Error{File: file, Line: line, Msg: "invalid YAML: " + m[2]}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 1
	switch {
	case found > 0:
		line = found
	case strings.Contains(msg, "anchor"):
		line = 0 // alias errors carry no position
	case strings.Contains(msg, "UTF"), strings.Contains(msg, "Unicode"), strings.Contains(msg, "octet"),
		strings.Contains(msg, "control characters"), strings.Contains(msg, "surrogate"):
		line = badCharLine(data)
	}
	return &diag.Error{File: file, Line: line, Msg: "invalid YAML: " + msg}
}

// maxLocateSize bounds the YAML documents whose errors errorLine locates:
// it parses about log2(lines) prefixes of the document.
const maxLocateSize = 1 << 20

// errorLine returns the 1-based line where yaml.v3 fails on data with the
// error message msg: the smallest n such that the text up to the end of
// line n fails alike (the same construct: yaml.v3's line, or its message
// when it names no line). yaml.v3 reads a stream in order, so a prefix
// that holds the offending token fails as the whole does, and one that
// stops before it does not, or fails in another construct (a multi-line
// flow collection or quoted string cut short, which names its own line).
// For an unclosed flow collection or quoted string that is the line where
// it opens, for a mis-indented key the key's line. Only the document that
// holds yaml.v3's line is parsed again (from its "---"), so that one error
// in a file of many documents costs a few parses of one. 0 when it cannot
// be told (the document is above maxLocateSize, or no prefix fails alike).
func errorLine(data []byte, msg string) int {
	ends := lineEnds(data)
	line := func(n int) []byte { // line n, 1-based
		if n == 1 {
			return data[:ends[0]]
		}
		return data[ends[n-2]:ends[n-1]]
	}
	// The lines [first, last] of the document holding yaml.v3's line
	// (itself at or before the error), or of the whole stream.
	first, last, reported := 1, len(ends), 0
	want := yamlLineRE.FindStringSubmatch(msg)
	if want != nil {
		reported, _ = strconv.Atoi(want[1])
		reported = min(max(reported, 1), len(ends))
		for first = reported; first > 1 && !isDocumentStart(line(first)); first-- {
		}
		for last = reported + 1; last <= len(ends) && !isDocumentStart(line(last)); last++ {
		}
		last--
	}
	if last < 1 {
		return 0
	}
	from := 0
	if first > 1 {
		from = ends[first-2]
	}
	if ends[last-1]-from > maxLocateSize {
		return 0
	}
	// With a line in msg, a prefix fails alike when its error names the
	// same line, whatever it says: cut inside the string or collection
	// that fails, it fails at its end ("found unexpected end of stream")
	// where the whole fails at what follows.
	same := func(n int) bool {
		err := firstYAMLError(data[from:ends[n-1]])
		if err == nil {
			return false
		}
		if want == nil {
			return err.Error() == msg
		}
		m := yamlLineRE.FindStringSubmatch(err.Error())
		if m == nil {
			return false
		}
		l, _ := strconv.Atoi(m[1])
		return l+first-1 == reported
	}
	lo, hi := max(first, reported), last
	if !same(hi) {
		return 0
	}
	for lo < hi { // same(hi) holds
		mid := lo + (hi-lo)/2
		if same(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi
}

// isDocumentStart reports whether a line is a YAML document marker
// ("---" at the start of a line, alone or followed by a space): outside a
// quoted string it always starts a document, and inside one it is an
// error.
func isDocumentStart(line []byte) bool {
	return bytes.HasPrefix(line, []byte("---")) && (len(line) == 3 || strings.ContainsRune(" \t\r\n", rune(line[3])))
}

// lineEnds returns the offset just past each line of data (its newline
// included).
func lineEnds(data []byte) []int {
	var ends []int
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			ends = append(ends, len(data))
			break
		}
		i += j + 1
		ends = append(ends, i)
	}
	return ends
}

// firstYAMLError decodes every document of data into yaml.v3 nodes and
// returns the first error (nil at the end of the stream).
func firstYAMLError(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot parse YAML: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// badCharLine returns the 1-based line of the first character YAML does not
// allow (invalid UTF-8 or a control character), 0 if there is none.
func badCharLine(data []byte) int {
	if bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) {
		return 0 // UTF-16: not worth decoding for a position
	}
	line := 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line
		case r == '\n':
			line++
		case r == '\t' || r == '\r' || r == 0x85 || r == 0xFEFF:
		case r < 0x20 || (r >= 0x7F && r < 0xA0) || (r >= 0xD800 && r <= 0xDFFF) || r == 0xFFFE || r == 0xFFFF:
			return line
		}
		i += size
	}
	return 0
}

// parser converts a yaml.Node tree into JSON-compatible values, collecting
// errors with their lines.
type parser struct {
	file     string
	max      int64 // nodes the file may expand to (Limits.MaxNodes)
	count    int64 // nodes produced in the file so far (keys and values)
	tooLarge bool  // the budget was exceeded (reported once)
	// generated: the text is a renderer's output (see parseGenerated)
	generated bool
	errs      diag.List
}

func (p *parser) fail(n *yaml.Node, format string, args ...any) {
	p.errs = append(p.errs, &diag.Error{File: p.file, Line: n.Line, Msg: fmt.Sprintf(format, args...)})
}

// budget counts one node; false once the file's budget is exceeded. The
// meter refuses such a file before the parser sees it: this is a second
// line of defence for the parser's own alias expansion.
func (p *parser) budget(n *yaml.Node) bool {
	p.count++
	if p.count <= p.max {
		return true
	}
	if !p.tooLarge {
		p.tooLarge = true
		p.errs = append(p.errs, &diag.Error{File: p.file, Line: n.Line, Err: &LimitError{Limit: "yaml-nodes", Max: p.max,
			What: fmt.Sprintf("the file expands to more than %d YAML nodes with its aliases expanded", p.max)}})
	}
	return false
}

func (p *parser) value(n *yaml.Node) any {
	if p.tooLarge {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return p.value(n.Alias)
	}
	if n.Kind != yaml.DocumentNode && !p.budget(n) {
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return p.value(n.Content[0])
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, p.value(c))
		}
		return out
	case yaml.MappingNode:
		return p.mapping(n)
	case yaml.ScalarNode:
		return p.scalar(n)
	}
	p.fail(n, "unsupported YAML node")
	return nil
}

func (p *parser) mapping(n *yaml.Node) map[string]any {
	out := make(map[string]any, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if !p.budget(k) {
			return out
		}
		key, ok := p.key(k)
		if !ok {
			continue
		}
		if _, dup := out[key]; dup { // merged keys come in after the loop
			if p.generated {
				p.fail(k, "duplicate key %q", key) // lines of generated text point nowhere
			} else {
				p.fail(k, "duplicate key %q (first at line %d)", key, firstKeyLine(n.Content[:i], key))
			}
			continue
		}
		out[key] = p.value(v)
	}
	// Merge keys (<<): explicit keys win; earlier merged mappings win over later ones.
	for _, m := range merges {
		for m.Kind == yaml.AliasNode {
			m = m.Alias
		}
		var sources []*yaml.Node
		switch m.Kind {
		case yaml.MappingNode:
			sources = []*yaml.Node{m}
		case yaml.SequenceNode:
			sources = m.Content
		default:
			p.fail(m, "merge key << needs a mapping or a list of mappings")
			continue
		}
		for _, s := range sources {
			v := p.value(s)
			sm, ok := v.(map[string]any)
			if !ok {
				if v != nil || len(p.errs) == 0 {
					p.fail(s, "merge key << needs a mapping or a list of mappings")
				}
				continue
			}
			for k, val := range sm {
				if _, exists := out[k]; !exists {
					out[k] = val
				}
			}
		}
	}
	return out
}

// firstKeyLine returns the line of the first of a mapping's keys (content:
// keys and values) that reads key.
func firstKeyLine(content []*yaml.Node, key string) int {
	for i := 0; i+1 < len(content); i += 2 {
		k := content[i]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			continue
		}
		r := k
		for r.Kind == yaml.AliasNode {
			r = r.Alias
		}
		if r.Kind == yaml.ScalarNode && r.ShortTag() != "!!null" && r.Value == key {
			return k.Line
		}
	}
	return 0
}

// key renders a mapping key as a string, as Kubernetes' YAML→JSON conversion
// does for plain scalars (1 → "1", true → "true").
func (p *parser) key(k *yaml.Node) (string, bool) {
	for k.Kind == yaml.AliasNode {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		p.fail(k, "mapping key must be a scalar, got a %s", kindName(k))
		return "", false
	}
	if k.ShortTag() == "!!null" {
		p.fail(k, "mapping key must not be null")
		return "", false
	}
	return k.Value, true
}

func (p *parser) scalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!str", "!!timestamp", "!!binary", "!!merge":
		return n.Value
	case "!!null":
		return nil
	case "!!bool":
		switch n.Value {
		case "true":
			return true
		case "false":
			return false
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			p.fail(n, "invalid boolean %q", n.Value)
			return nil
		}
		return b
	case "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			p.fail(n, "invalid number %q", n.Value)
			return nil
		}
		switch x := v.(type) {
		case int:
			return int64(x)
		case int64:
			return x
		case uint64:
			return float64(x)
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				p.fail(n, "number %q cannot be represented in JSON (quote it to make it a string)", n.Value)
				return nil
			}
			return x
		}
		p.fail(n, "invalid number %q", n.Value)
		return nil
	default:
		// Application tags (!Foo) and other standard tags: keep the text.
		return n.Value
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "node"
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
