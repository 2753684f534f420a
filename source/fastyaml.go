package source

import (
	"bytes"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/gitaso/gitaso/manifest"
)

// fastParse parses the plain block YAML most manifests are written in
// straight into objects, several times faster than yaml.v3 and the node
// walk of parseText, which give the same objects and node count. ok is
// false, with nothing returned, for anything outside that subset and for
// any problem at all (a duplicate key, a missing name, a List, a limit):
// then parseText reads the file with yaml.v3 and reports them.
//
// The subset is ASCII text (no tab, no carriage return, no control
// character) of block mappings and block sequences (compact ones included)
// whose keys are plain words ([A-Za-z0-9_./] then also '-'), whose values
// are one-line plain, single-quoted or double-quoted (without escapes)
// scalars or empty flow collections ([] and {}), comments on lines of their
// own, and "---" lines between documents. Anchors, aliases, tags, block
// scalars, multi-line scalars, flow collections with content, trailing
// comments, directives and "..." are left to yaml.v3.
func fastParse(name string, data []byte, lim Limits) (objs []manifest.Object, nodes int64, ok bool) {
	nodes, ok = fastDocuments(data, lim, func(index int, root map[string]any, line int) bool {
		if isList(root) {
			return false // items keep their own lines: yaml.v3
		}
		o := manifest.Object{File: name, Line: line, Index: index, Content: root}
		emptyNulls(o)
		if len(validate(o)) > 0 {
			return false
		}
		objs = append(objs, o)
		return true
	})
	if !ok {
		return nil, 0, false
	}
	return objs, nodes, true
}

// fastDocuments reads the documents of data within fastParse's subset and
// lim: for each one that is not empty, doc gets its index in the stream,
// its root (a mapping; any other root leaves the subset) and the root's
// line. nodes are the YAML nodes read, as the meter counts them. ok is false
// as soon as the text leaves the subset or doc returns false.
func fastDocuments(data []byte, lim Limits, doc func(index int, root map[string]any, line int) bool) (nodes int64, ok bool) {
	defer func() {
		// A gap in this parser must never be a crash: yaml.v3 decides.
		if recover() != nil {
			nodes, ok = 0, false
		}
	}()
	for _, c := range data {
		if c >= 0x7f || (c < 0x20 && c != '\n') {
			return 0, false
		}
	}
	f := fastParser{rest: data, maxNodes: lim.MaxNodes, maxDepth: min(lim.MaxDepth, fastMaxDepth), p: parser{max: lim.MaxNodes}}
	f.advance()
	for index := 0; f.have || f.pendingDoc; index++ {
		root, line, ok := f.document()
		if !ok || f.bad {
			return 0, false
		}
		if root != nil && !doc(index, root, line) {
			return 0, false
		}
	}
	return f.nodes, !f.bad
}

// fastMaxDepth bounds the nesting fastParse reads (recursion); deeper text
// goes to yaml.v3, and to the depth limit.
const fastMaxDepth = 64

// fastLine is one line holding content (not blank, not only a comment).
type fastLine struct {
	no     int // 1-based line number
	indent int // column of the first character of text, 0-based
	text   []byte
	sep    bool // a "---" line
}

type fastParser struct {
	rest []byte   // the text after the current line
	no   int      // the number of the last line cut from the text
	cur  fastLine // the current line, when have
	have bool
	bad  bool // a line outside the subset was met
	// pendingDoc: a "---" line was consumed, its document not yet returned.
	pendingDoc bool

	nodes, maxNodes int64 // YAML nodes so far (as the meter counts them), and the limit
	maxDepth        int   // mappings and lists nested in one another

	// Entries and items of the mappings and lists being read, innermost
	// last: a collection is made once its size is known.
	entries []fastEntry
	items   []any

	p parser // scalar conversions beyond the common ones
}

type fastEntry struct {
	key string
	val any
}

// advance makes the next content line current (have is false at the end
// of the text, and after a line outside the subset, which sets bad).
func (f *fastParser) advance() {
	for len(f.rest) > 0 {
		f.no++
		line := f.rest
		if j := bytes.IndexByte(f.rest, '\n'); j >= 0 {
			line, f.rest = f.rest[:j], f.rest[j+1:]
		} else {
			f.rest = nil
		}
		indent := 0
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		text := bytes.TrimRight(line[indent:], " ")
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		if indent == 0 {
			switch {
			case bytes.Equal(text, []byte("---")):
				f.cur, f.have = fastLine{no: f.no, sep: true}, true
				return
			case bytes.HasPrefix(text, []byte("---")), bytes.HasPrefix(text, []byte("...")), text[0] == '%':
				f.bad, f.have, f.rest = true, false, nil
				return
			}
		}
		f.cur, f.have = fastLine{no: f.no, indent: indent, text: text}, true
		return
	}
	f.have = false
}

// count counts one YAML node; false beyond the file's limit.
func (f *fastParser) count() bool {
	f.nodes++
	return f.nodes <= f.maxNodes
}

// document reads one document: its root mapping and the root's line, or a
// nil root for an empty document.
func (f *fastParser) document() (root map[string]any, line int, ok bool) {
	if f.have && f.cur.sep {
		f.advance()
		f.pendingDoc = true
	}
	if !f.have || f.cur.sep {
		if !f.pendingDoc {
			return nil, 0, false // cannot happen: the loop stops first
		}
		f.pendingDoc = false
		return nil, 0, true // an empty document ("---" then "---" or the end)
	}
	f.pendingDoc = false
	if isItem(f.cur.text) {
		return nil, 0, false // a list: "document is a list" is yaml.v3's to say
	}
	line = f.cur.no
	v, ok := f.block(f.cur.indent, 0)
	root, isMap := v.(map[string]any)
	if !ok || !isMap {
		return nil, 0, false
	}
	if f.have && !f.cur.sep {
		return nil, 0, false // text below the root's indentation
	}
	return root, line, true
}

// block reads the node starting at the current line, whose text starts at
// column indent: a sequence, a mapping or a scalar on its own line. depth
// is the number of mappings and lists it is in.
func (f *fastParser) block(indent, depth int) (any, bool) {
	l := &f.cur
	if isItem(l.text) {
		return f.sequence(indent, depth+1)
	}
	if _, _, isKey := splitKey(l.text); isKey {
		return f.mapping(indent, depth+1)
	}
	if hasMappingIndicator(l.text) {
		return nil, false // a key yaml.v3 would read differently (quoted, ...)
	}
	v, ok := f.scalar(l, l.text, l.indent, depth)
	f.advance()
	return v, ok
}

// isItem reports whether a line's text is a block sequence entry.
func isItem(text []byte) bool { return text[0] == '-' && (len(text) == 1 || text[1] == ' ') }

// sequence reads a block sequence whose "-" are at column indent; depth
// counts it.
func (f *fastParser) sequence(indent, depth int) (any, bool) {
	if depth > f.maxDepth || !f.count() {
		return nil, false
	}
	base := len(f.items)
	for f.have {
		l := &f.cur
		if l.sep || l.indent < indent {
			break
		}
		if l.indent > indent {
			return nil, false
		}
		if !isItem(l.text) {
			break // the next key of a mapping at the same column (compact sequence)
		}
		rest := l.text[1:]
		col := indent + 1
		for len(rest) > 0 && rest[0] == ' ' {
			rest, col = rest[1:], col+1
		}
		var item any
		if len(rest) == 0 {
			f.advance()
			if f.have && !f.cur.sep && f.cur.indent > indent {
				var ok bool
				if item, ok = f.block(f.cur.indent, depth); !ok {
					return nil, false
				}
			} else if !f.count() {
				return nil, false // an empty item: null
			}
		} else {
			// The rest of the line is a node at column col: read it as a
			// line of its own, which the following lines at col continue.
			l.text, l.indent = rest, col
			var ok bool
			if item, ok = f.block(col, depth); !ok {
				return nil, false
			}
		}
		f.items = append(f.items, item)
	}
	out := make([]any, len(f.items)-base)
	copy(out, f.items[base:])
	clear(f.items[base:])
	f.items = f.items[:base]
	return out, true
}

// mapping reads a block mapping whose keys are at column indent; depth
// counts it.
func (f *fastParser) mapping(indent, depth int) (any, bool) {
	if depth > f.maxDepth || !f.count() {
		return nil, false
	}
	base := len(f.entries)
	for f.have {
		l := &f.cur
		if l.sep || l.indent < indent {
			break
		}
		if l.indent > indent || isItem(l.text) {
			return nil, false
		}
		key, value, isKey := splitKey(l.text)
		if !isKey || !f.count() {
			return nil, false
		}
		switch plainTag(key) {
		case "!!str", "!!int", "!!float", "!!bool":
		default:
			return nil, false // null keys, timestamps: yaml.v3
		}
		k := internKey(key)
		var v any
		var ok bool
		if len(value) > 0 {
			col := l.indent + len(l.text) - len(value)
			if v, ok = f.scalar(l, value, col, depth); !ok {
				return nil, false
			}
			f.advance()
		} else {
			f.advance()
			next := (*fastLine)(nil)
			if f.have && !f.cur.sep {
				next = &f.cur
			}
			switch {
			case next != nil && next.indent > indent:
				if v, ok = f.block(next.indent, depth); !ok {
					return nil, false
				}
			case next != nil && next.indent == indent && isItem(next.text):
				if v, ok = f.sequence(indent, depth+1); !ok {
					return nil, false
				}
			default:
				if !f.count() {
					return nil, false // "key:" and nothing: null
				}
			}
		}
		f.entries = append(f.entries, fastEntry{k, v})
	}
	out := make(map[string]any, len(f.entries)-base)
	for _, e := range f.entries[base:] {
		if _, dup := out[e.key]; dup {
			return nil, false // the parser's error to report, with lines
		}
		out[e.key] = e.val
	}
	clear(f.entries[base:])
	f.entries = f.entries[:base]
	return out, true
}

// splitKey splits "key: value" and "key:" (a key of plain word characters).
func splitKey(text []byte) (key, value []byte, ok bool) {
	i := 0
	for i < len(text) && keyChar(text[i], i == 0) {
		i++
	}
	if i == 0 || i >= len(text) || text[i] != ':' {
		return nil, nil, false
	}
	key = text[:i]
	switch {
	case i+1 == len(text):
		return key, nil, true
	case text[i+1] == ' ':
		return key, bytes.TrimLeft(text[i+2:], " "), true
	}
	return nil, nil, false
}

func keyChar(c byte, first bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '/':
		return true
	case c == '-':
		return !first
	}
	return false
}

// hasMappingIndicator reports whether a line's text holds ": " or ends in
// ":", which would make it a key.
func hasMappingIndicator(text []byte) bool {
	return bytes.Contains(text, []byte(": ")) || text[len(text)-1] == ':'
}

// scalar reads a value at column col of line l: a one-line quoted or plain
// scalar, or an empty flow collection (nested in depth collections).
func (f *fastParser) scalar(l *fastLine, text []byte, col, depth int) (any, bool) {
	if !f.count() {
		return nil, false
	}
	switch text[0] {
	case '"':
		if len(text) < 2 || text[len(text)-1] != '"' {
			return nil, false
		}
		s := text[1 : len(text)-1]
		if bytes.IndexByte(s, '"') >= 0 || bytes.IndexByte(s, '\\') >= 0 {
			return nil, false
		}
		return string(s), true
	case '\'':
		if len(text) < 2 || text[len(text)-1] != '\'' {
			return nil, false
		}
		s := text[1 : len(text)-1]
		// Inside, a quote is written twice; a lone one ends the scalar.
		for i := 0; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 >= len(s) || s[i+1] != '\'' {
					return nil, false
				}
				i++
			}
		}
		return string(bytes.ReplaceAll(s, []byte("''"), []byte("'"))), true
	case '[', '{':
		if depth+1 > f.maxDepth {
			return nil, false
		}
		switch string(text) {
		case "[]":
			return []any{}, true
		case "{}":
			return map[string]any{}, true
		}
		return nil, false
	case ']', '}', ',', '#', '&', '*', '!', '|', '>', '%', '@', '`', '?', ':':
		return nil, false
	case '-':
		if len(text) == 1 || text[1] == ' ' || text[1] == '-' {
			return nil, false
		}
	}
	if bytes.Contains(text, []byte(" #")) || hasMappingIndicator(text) {
		return nil, false
	}
	for _, c := range text {
		switch c {
		case '[', ']', '{', '}':
			return nil, false // allowed in a block scalar, but rare: yaml.v3 decides
		}
	}
	switch tag := plainTag(text); tag {
	case "!!str", "!!timestamp", "!!merge":
		return string(text), true
	case "!!null":
		return nil, true
	case "!!bool":
		switch string(text) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	case "!!int":
		if i, ok := decimal(text); ok {
			return i, true
		}
	}
	// The parser's own conversion, on the node yaml.v3 would give.
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: string(text), Line: l.no, Column: col + 1}
	n.Tag = plainTag(text)
	v := f.p.scalar(n)
	if len(f.p.errs) > 0 {
		return nil, false
	}
	return v, true
}

// decimal reads a plain decimal integer without a leading zero or sign
// other than '-', of at most 18 digits: what yaml.v3 reads as the same
// int64 (base prefixes, '_', '+' and leading zeros are left to it).
func decimal(text []byte) (int64, bool) {
	digits := text
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	i, err := strconv.ParseInt(string(text), 10, 64)
	return i, err == nil
}

// plainTag is the tag yaml.v3 gives a plain scalar. A word starting with a
// letter is a string unless it is one of YAML's booleans or nulls (yaml.v3's
// resolve table); anything else is asked of yaml.v3.
func plainTag(text []byte) string {
	switch c := text[0]; {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '/':
		switch string(text) {
		case "true", "True", "TRUE", "false", "False", "FALSE":
			return "!!bool"
		case "null", "Null", "NULL":
			return "!!null"
		}
		return "!!str"
	case c == '<' && string(text) == "<<":
		return "!!merge" // yaml.v3's parser tags it so, its resolve does not
	}
	n := yaml.Node{Kind: yaml.ScalarNode, Value: string(text)}
	return n.ShortTag()
}

// commonKeys are keys most manifests repeat: their strings are shared
// rather than allocated once per object.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"apiVersion", "kind", "metadata", "name", "namespace", "labels", "annotations",
		"spec", "owner", "location", "azureName", "tags", "sku", "properties", "operatorSpec", "configMaps",
		"secrets", "key", "group", "armId", "data", "stringData", "type", "value", "tier", "items"} {
		m[k] = k
	}
	return m
}()

func internKey(b []byte) string {
	if s, ok := commonKeys[string(b)]; ok {
		return s
	}
	return string(b)
}
