package diag

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Error is a problem in the user's input. Any of File, Object and Field may be
// empty when not known; Line is 0 when not known.
type Error struct {
	File   string // slash path relative to the source root
	Line   int    // 1-based line, 0 if unknown
	Object string // "namespace/Kind/name" (or "Kind/name" when cluster-wide)
	Field  string // dotted field path, e.g. "spec.owner.name"
	Msg    string
	Err    error // optional wrapped cause
}

// Error renders "file:line: ns/Kind/name: field: message".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Object != "" {
		b.WriteString(e.Object)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		if e.Msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// List is every input error of one commit.
type List []*Error

// Error joins the errors one per line, sorted by file, line and message.
func (l List) Error() string {
	s := l.Sorted()
	lines := make([]string, len(s))
	for i, e := range s {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the errors, so that errors.Is and errors.As see the causes
// of each one (a source.LimitError behind a refused revision).
func (l List) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Sorted returns a copy ordered by file, line, object, field and message, so
// that the same input always reports the same way.
func (l List) Sorted() List {
	s := append(List(nil), l...)
	sort.SliceStable(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Object != b.Object {
			return a.Object < b.Object
		}
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Error() < b.Error()
	})
	return s
}

// Err returns nil for an empty list and the list otherwise.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// AsList extracts every *Error from err (a List, a single *Error, or a
// joined error); it returns nil when err holds none.
func AsList(err error) List {
	var l List
	if errors.As(err, &l) {
		return l
	}
	var e *Error
	if errors.As(err, &e) {
		return List{e}
	}
	return nil
}
