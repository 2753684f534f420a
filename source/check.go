package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"gopkg.in/yaml.v3"

	"github.com/gitaso/gitaso/internal/diag"
)

// CheckFiles checks files against the limits before any YAML decoder that
// expands aliases sees them (kustomize's kyaml, SOPS metadata, the
// parser): the size of each file and of all together, and, with aliases
// counted as what they refer to, the number of YAML nodes of each file and
// of all together and how deeply they nest. Aliases are never expanded
// here: yaml.v3 keeps them as pointers, and each anchor's size is computed
// once. An anchor that contains an alias to itself is refused too (kyaml
// would recurse until the stack overflows).
//
// Files without an anchor ('&') cannot expand: only their size is checked
// here, and their nodes count towards the total only when ParseFile reads
// what was rendered from them.
//
// Errors are a diag.List with one *diag.Error per offending file, naming
// the file, the line (when known) and the limit (a *LimitError, see
// ErrLimit). Once the total of a revision is exceeded, that is reported
// once and the remaining files are not checked. YAML syntax errors are not
// reported (the parser does, for the files that are parsed): checking
// stops at them, as every decoder does.
func CheckFiles(ctx context.Context, files []File, lim Limits) error {
	lim = lim.WithDefaults()
	var errs diag.List
	var size int64
	var total atomic.Int64
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		size += int64(len(f.Data))
		if size > lim.MaxTotalSize {
			errs = append(errs, totalSizeError(f.Path, lim.MaxTotalSize))
			break
		}
		if e := checkFile(f.Path, f.Data, lim, &total); e != nil {
			errs = append(errs, e)
			if isTotal(e) {
				break
			}
		}
	}
	return errs.Err()
}

func totalSizeError(file string, max int64) *diag.Error {
	return &diag.Error{File: file, Err: &LimitError{Limit: "total-size", Max: max,
		What: "the files read up to this one (*.yaml/*.yml, and the files of Helm charts) are larger together than the limit"}}
}

// isTotal reports whether an error is about a revision's total.
func isTotal(e *diag.Error) bool {
	var le *LimitError
	return errors.As(e, &le) && (le.Limit == "total-size" || le.Limit == "total-yaml-nodes")
}

// checkFile checks one file's size, node count and depth, adding its
// nodes to total. It returns nil when the file is within the limits (or is
// not YAML the decoders can read).
func checkFile(name string, data []byte, lim Limits, total *atomic.Int64) *diag.Error {
	if int64(len(data)) > lim.MaxFileSize {
		return fileSizeError(name, int64(len(data)), lim.MaxFileSize)
	}
	if !bytes.Contains(data, []byte("&")) {
		// No anchor, so no alias: no decoder can make more of the file
		// than its bytes (bounded by the size limits), and decoding it
		// twice would double the cost of a render. The parser counts its
		// nodes and depth in the rendered text.
		return nil
	}
	// yaml.v3 is fuzzed upstream, but a panic must never take the daemon down.
	var perr *diag.Error
	func() {
		defer func() {
			if r := recover(); r != nil {
				perr = &diag.Error{File: name, Msg: fmt.Sprintf("cannot parse YAML: %v", r)}
			}
		}()
		m := newMeter(name, lim, total)
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc yaml.Node
			if err := dec.Decode(&doc); err != nil {
				// io.EOF, or a syntax error: the parser reports those of
				// the files it reads, and every decoder stops there too.
				return
			}
			if perr = m.document(&doc); perr != nil {
				return
			}
		}
	}()
	return perr
}

// MeasureFile returns the number of YAML nodes of a file with its aliases
// counted as what they refer to, decoding it even without an anchor (which
// CheckFiles skips). A file beyond lim's file size, nodes or depth, or with
// a recursive anchor, is a *diag.Error naming it (see ErrLimit); counting
// stops at a YAML syntax error. The render stage measures what a kustomize
// build will hold with it.
func MeasureFile(f File, lim Limits) (int64, error) {
	lim = lim.WithDefaults()
	if int64(len(f.Data)) > lim.MaxFileSize {
		return 0, fileSizeError(f.Path, int64(len(f.Data)), lim.MaxFileSize)
	}
	m := newMeter(f.Path, lim, nil)
	var perr *diag.Error
	func() {
		defer func() {
			if r := recover(); r != nil {
				perr = &diag.Error{File: f.Path, Msg: fmt.Sprintf("cannot parse YAML: %v", r)}
			}
		}()
		dec := yaml.NewDecoder(bytes.NewReader(f.Data))
		for {
			var doc yaml.Node
			if dec.Decode(&doc) != nil {
				return
			}
			if perr = m.document(&doc); perr != nil {
				return
			}
		}
	}()
	if perr != nil {
		return m.nodes, perr
	}
	return m.nodes, nil
}

func fileSizeError(name string, size, max int64) *diag.Error {
	return &diag.Error{File: name, Err: &LimitError{Limit: "file-size", Max: max,
		What: fmt.Sprintf("the file is %s", formatSize(size))}}
}

// meter measures yaml.v3 node trees with aliases expanded, without
// expanding them: the size and height of every anchored node are
// remembered when it is first walked, and an alias adds them.
type meter struct {
	file  string
	lim   Limits
	nodes int64         // nodes of the file so far
	total *atomic.Int64 // nodes of the revision so far (nil: not counted)
	memo  map[*yaml.Node]measure
	busy  map[*yaml.Node]bool // anchored nodes being walked
	alias bool                // an alias was expanded
	err   *diag.Error
}

// measure is an anchored node's expanded size and height.
type measure struct {
	nodes  int64
	height int
}

func newMeter(file string, lim Limits, total *atomic.Int64) *meter {
	return &meter{file: file, lim: lim, total: total}
}

// document measures one document; its nodes count towards the file's and
// the revision's totals. Anchors do not reach across documents.
func (m *meter) document(doc *yaml.Node) *diag.Error {
	m.memo, m.busy = nil, nil
	before := m.nodes
	m.walk(doc, 0)
	if m.err == nil && m.total != nil {
		if t := m.total.Add(m.nodes - before); t > m.lim.MaxTotalNodes {
			m.err = &diag.Error{File: m.file, Line: doc.Line, Err: &LimitError{Limit: "total-yaml-nodes", Max: m.lim.MaxTotalNodes,
				What: "the files read up to this one hold more YAML nodes together than the limit"}}
		}
	}
	return m.err
}

// walk adds n's nodes (aliases expanded) and returns n's height: how many
// mappings and lists nest in it, itself included. depth is the number of
// mappings and lists above n.
func (m *meter) walk(n *yaml.Node, depth int) int {
	if m.err != nil || n == nil {
		return 0
	}
	if n.Kind == yaml.AliasNode {
		t := n.Alias
		if t == nil {
			return 0
		}
		if m.busy[t] {
			m.err = &diag.Error{File: m.file, Line: n.Line, Msg: fmt.Sprintf("alias *%s refers to the anchor it is part of (a recursive YAML structure)", n.Value)}
			return 0
		}
		me, ok := m.memo[t]
		if !ok {
			// Not walked yet (yaml.v3 resolves aliases to earlier anchors,
			// so this does not happen): walk it here, counting it once.
			return m.walk(t, depth)
		}
		m.alias = true
		if m.add(n, me.nodes) && depth+me.height > m.lim.MaxDepth {
			m.depthError(n)
		}
		return me.height
	}
	if n.Kind != yaml.DocumentNode && !m.add(n, 1) {
		return 0
	}
	collection := n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode
	if collection {
		depth++
		if depth > m.lim.MaxDepth {
			m.depthError(n)
			return 0
		}
	}
	start := m.nodes
	if n.Anchor != "" {
		if m.busy == nil {
			m.busy, m.memo = map[*yaml.Node]bool{}, map[*yaml.Node]measure{}
		}
		m.busy[n] = true
	}
	h := 0
	for _, c := range n.Content {
		h = max(h, m.walk(c, depth))
		if m.err != nil {
			return 0
		}
	}
	if collection {
		h++
	}
	if n.Anchor != "" {
		delete(m.busy, n)
		m.memo[n] = measure{nodes: m.nodes - start + 1, height: h}
	}
	return h
}

// add counts k nodes at n; false (and m.err set) when the file's limit is
// exceeded.
func (m *meter) add(n *yaml.Node, k int64) bool {
	if k > math.MaxInt64-m.nodes || m.nodes+k > m.lim.MaxNodes {
		what := fmt.Sprintf("the file has more than %d YAML nodes", m.lim.MaxNodes)
		if m.alias || n.Kind == yaml.AliasNode {
			what = fmt.Sprintf("the file expands to more than %d YAML nodes with its aliases expanded (an alias bomb?)", m.lim.MaxNodes)
		}
		m.err = &diag.Error{File: m.file, Line: n.Line, Err: &LimitError{Limit: "yaml-nodes", Max: m.lim.MaxNodes, What: what}}
		return false
	}
	m.nodes += k
	return true
}

func (m *meter) depthError(n *yaml.Node) {
	what := fmt.Sprintf("mappings and lists nest more than %d deep here", m.lim.MaxDepth)
	if n.Kind == yaml.AliasNode {
		what = fmt.Sprintf("mappings and lists nest more than %d deep here with alias *%s expanded", m.lim.MaxDepth, n.Value)
	}
	m.err = &diag.Error{File: m.file, Line: n.Line, Err: &LimitError{Limit: "yaml-depth", Max: int64(m.lim.MaxDepth), What: what}}
}
