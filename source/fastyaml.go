package source

import (
	"bytes"

	"gopkg.in/yaml.v3"
)

// fastDocuments parses the plain block YAML most manifests are written in
// into the yaml.v3 node trees yaml.v3's Decoder would give, one per document
// of the stream (nil for an empty document), several times faster. ok is
// false, with nothing parsed, for anything outside that subset: then the
// caller decodes the file with yaml.v3, which also reports its errors. The
// subset is ASCII text (no tab, no carriage return, no control character)
// of block mappings and block sequences (compact ones included) whose keys
// are plain words ([A-Za-z0-9_./] then also '-'), whose values are
// one-line plain, single-quoted or double-quoted (without escapes) scalars
// or empty flow collections ([] and {}), comments on lines of their own,
// and "---" lines between documents. Anchors, aliases, tags, block scalars,
// multi-line scalars, flow collections with content, trailing comments,
// directives and "..." are left to yaml.v3.
//
// The nodes carry what the parser and the meter read: Kind, Style, Tag (as
// yaml.v3 resolves it), Value, Line, Column and Content; never comments, so
// generated text (whose origin comments matter) is not parsed here.
func fastDocuments(data []byte) (docs []*yaml.Node, ok bool) {
	defer func() {
		// A gap in this parser must never be a crash: yaml.v3 decides.
		if recover() != nil {
			docs, ok = nil, false
		}
	}()
	for _, c := range data {
		if c >= 0x7f || (c < 0x20 && c != '\n') {
			return nil, false
		}
	}
	f := fastParser{data: data}
	if !f.split() {
		return nil, false
	}
	for f.i < len(f.lines) || f.pendingDoc {
		doc, ok := f.document()
		if !ok {
			return nil, false
		}
		docs = append(docs, doc)
	}
	return docs, true
}

// fastMaxDepth bounds the nesting fastDocuments parses (recursion); deeper
// text goes to yaml.v3, and to the depth limit.
const fastMaxDepth = 64

// fastLine is one line holding content (not blank, not only a comment).
type fastLine struct {
	no     int // 1-based line number
	indent int // column of the first character of text, 0-based
	text   []byte
	sep    bool // a "---" line
}

type fastParser struct {
	data  []byte
	lines []fastLine
	i     int // the next line
	// pendingDoc: a "---" line was consumed, its document not yet returned.
	pendingDoc bool
	slab       []yaml.Node
	depth      int
}

// split cuts the text into content lines; false for what the subset leaves
// out at the line level.
func (f *fastParser) split() bool {
	data := f.data
	f.lines = make([]fastLine, 0, bytes.Count(data, []byte{'\n'})+1)
	for no := 1; len(data) > 0; no++ {
		line := data
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			line, data = data[:j], data[j+1:]
		} else {
			data = nil
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
				f.lines = append(f.lines, fastLine{no: no, sep: true})
				continue
			case bytes.HasPrefix(text, []byte("---")), bytes.HasPrefix(text, []byte("...")), text[0] == '%':
				return false
			}
		}
		f.lines = append(f.lines, fastLine{no: no, indent: indent, text: text})
	}
	return true
}

func (f *fastParser) node(kind yaml.Kind, tag string, l *fastLine, col int) *yaml.Node {
	if len(f.slab) == 0 {
		// Nodes are allocated together: about two a line (key and value).
		f.slab = make([]yaml.Node, min(max(2*(len(f.lines)-f.i), 16), 1024))
	}
	n := &f.slab[0]
	f.slab = f.slab[1:]
	n.Kind, n.Tag, n.Line, n.Column = kind, tag, l.no, col+1
	return n
}

// document parses one document: nil when it is empty.
func (f *fastParser) document() (*yaml.Node, bool) {
	start := 0 // the line of an explicit document's "---"
	if f.i < len(f.lines) && f.lines[f.i].sep {
		start = f.lines[f.i].no
		f.i++
		f.pendingDoc = true
	}
	if f.i >= len(f.lines) || f.lines[f.i].sep {
		if !f.pendingDoc {
			return nil, false // cannot happen: the loop stops first
		}
		f.pendingDoc = false
		return nil, true // an empty document ("---" then "---" or the end)
	}
	f.pendingDoc = false
	l := &f.lines[f.i]
	root, ok := f.block(l.indent)
	if !ok || root.Kind == yaml.ScalarNode {
		return nil, false // a document of one scalar: left to yaml.v3
	}
	if f.i < len(f.lines) && !f.lines[f.i].sep {
		return nil, false // text below the root's indentation
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Line: start, Column: 1, Content: []*yaml.Node{root}}
	if start == 0 {
		doc.Line, doc.Column = root.Line, root.Column
	}
	return doc, true
}

// block parses the node starting at the current line, whose text starts at
// column indent: a sequence, a mapping or a scalar on its own line.
func (f *fastParser) block(indent int) (*yaml.Node, bool) {
	if f.depth++; f.depth > fastMaxDepth {
		return nil, false
	}
	defer func() { f.depth-- }()
	l := &f.lines[f.i]
	if isItem(l.text) {
		return f.sequence(indent)
	}
	if _, _, isKey := splitKey(l.text); isKey {
		return f.mapping(indent)
	}
	if hasMappingIndicator(l.text) {
		return nil, false // a key yaml.v3 would read differently (quoted, ...)
	}
	n, ok := f.scalar(l, l.text, l.indent)
	f.i++
	return n, ok
}

// isItem reports whether a line's text is a block sequence entry.
func isItem(text []byte) bool { return text[0] == '-' && (len(text) == 1 || text[1] == ' ') }

// sequence parses a block sequence whose "-" are at column indent.
func (f *fastParser) sequence(indent int) (*yaml.Node, bool) {
	seq := f.node(yaml.SequenceNode, "!!seq", &f.lines[f.i], indent)
	for f.i < len(f.lines) {
		l := &f.lines[f.i]
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
		var item *yaml.Node
		if len(rest) == 0 {
			f.i++
			if f.i < len(f.lines) && !f.lines[f.i].sep && f.lines[f.i].indent > indent {
				var ok bool
				if item, ok = f.block(f.lines[f.i].indent); !ok {
					return nil, false
				}
			} else {
				item = f.null(l, len(l.text)+l.indent)
			}
		} else {
			// The rest of the line is a node at column col: read it as a
			// line of its own, which the following lines at col continue.
			l.text, l.indent = rest, col
			var ok bool
			if item, ok = f.block(col); !ok {
				return nil, false
			}
		}
		seq.Content = append(seq.Content, item)
	}
	return seq, true
}

// mapping parses a block mapping whose keys are at column indent.
func (f *fastParser) mapping(indent int) (*yaml.Node, bool) {
	m := f.node(yaml.MappingNode, "!!map", &f.lines[f.i], indent)
	for f.i < len(f.lines) {
		l := &f.lines[f.i]
		if l.sep || l.indent < indent {
			break
		}
		if l.indent > indent || isItem(l.text) {
			return nil, false
		}
		key, value, isKey := splitKey(l.text)
		if !isKey {
			return nil, false
		}
		k, ok := f.scalar(l, key, l.indent)
		if !ok || k.Tag != "!!str" && k.Tag != "!!int" && k.Tag != "!!float" && k.Tag != "!!bool" {
			return nil, false // null keys, merge keys, timestamps: yaml.v3
		}
		var v *yaml.Node
		if len(value) > 0 {
			col := l.indent + len(l.text) - len(value)
			if v, ok = f.scalar(l, value, col); !ok {
				return nil, false
			}
			f.i++
		} else {
			f.i++
			next := (*fastLine)(nil)
			if f.i < len(f.lines) && !f.lines[f.i].sep {
				next = &f.lines[f.i]
			}
			switch {
			case next != nil && next.indent > indent:
				if v, ok = f.block(next.indent); !ok {
					return nil, false
				}
			case next != nil && next.indent == indent && isItem(next.text):
				if v, ok = f.sequence(indent); !ok {
					return nil, false
				}
			default:
				v = f.null(l, l.indent+len(key)+1)
			}
		}
		m.Content = append(m.Content, k, v)
	}
	return m, true
}

// null is the empty value after "key:" or "-", as yaml.v3 places it.
func (f *fastParser) null(l *fastLine, col int) *yaml.Node {
	return f.node(yaml.ScalarNode, "!!null", l, col)
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
// scalar, or an empty flow collection.
func (f *fastParser) scalar(l *fastLine, text []byte, col int) (*yaml.Node, bool) {
	switch text[0] {
	case '"':
		if len(text) < 2 || text[len(text)-1] != '"' {
			return nil, false
		}
		s := text[1 : len(text)-1]
		if bytes.IndexByte(s, '"') >= 0 || bytes.IndexByte(s, '\\') >= 0 {
			return nil, false
		}
		n := f.node(yaml.ScalarNode, "!!str", l, col)
		n.Style, n.Value = yaml.DoubleQuotedStyle, string(s)
		return n, true
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
		n := f.node(yaml.ScalarNode, "!!str", l, col)
		n.Style, n.Value = yaml.SingleQuotedStyle, string(bytes.ReplaceAll(s, []byte("''"), []byte("'")))
		return n, true
	case '[', '{':
		switch string(text) {
		case "[]":
			n := f.node(yaml.SequenceNode, "!!seq", l, col)
			n.Style = yaml.FlowStyle
			return n, true
		case "{}":
			n := f.node(yaml.MappingNode, "!!map", l, col)
			n.Style = yaml.FlowStyle
			return n, true
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
	n := f.node(yaml.ScalarNode, "", l, col)
	n.Value = string(text)
	n.Tag = plainTag(n)
	return n, true
}

// plainTag is the tag yaml.v3 resolves a plain scalar to. A word starting
// with a letter is a string unless it is one of YAML's booleans or nulls
// (yaml.v3's resolve table); anything else is asked of yaml.v3.
func plainTag(n *yaml.Node) string {
	switch c := n.Value[0]; {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '/':
		switch n.Value {
		case "true", "True", "TRUE", "false", "False", "FALSE":
			return "!!bool"
		case "null", "Null", "NULL":
			return "!!null"
		}
		return "!!str"
	case c == '<' && n.Value == "<<":
		return "!!merge" // yaml.v3's parser tags it so, its resolve does not
	}
	return n.ShortTag()
}
