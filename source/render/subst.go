package render

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"gopkg.in/yaml.v3"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// DisableAnnotation, set to "disabled" as an annotation or a label of an
// object, turns substitution off for that object (as in Flux).
const DisableAnnotation = "kustomize.toolkit.fluxcd.io/substitute"

// varNameRE is the variable name Flux accepts (its varsubRegex).
var varNameRE = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// ErrUnsetVariable is returned (wrapped in a *diag.Error) when strict
// substitution meets ${VAR} with no value and no default.
var ErrUnsetVariable = errors.New("variable is not set")

// ErrBadSubstitution is returned (wrapped in a *diag.Error) when a ${...}
// expression cannot be parsed.
var ErrBadSubstitution = errors.New("bad substitution")

// Vars is a set of substitution variables. Values never contain newlines
// (they are removed as Flux removes them), so substitution keeps line
// numbers.
type Vars map[string]string

// ValidName reports whether name is a variable name Flux accepts:
// a letter or underscore, then letters, digits and underscores.
func ValidName(name string) bool { return varNameRE.MatchString(name) }

// cleanValue removes newlines from a value, as Flux does.
func cleanValue(v string) string {
	if strings.IndexByte(v, '\n') < 0 {
		return v
	}
	return strings.ReplaceAll(v, "\n", "")
}

// Substitute runs Flux post-build substitution over the text of one object
// (one YAML document): ${VAR}, ${VAR:=default}, ${VAR:-default},
// ${VAR=default} (and the other bash forms envsubst knows), with $${VAR}
// standing for a literal ${VAR}. Without strict, an unset variable becomes
// the empty string; with strict it is an error. file and line (the
// document's first line) locate errors: a *diag.Error naming the line of the
// failing expression and the variable, wrapping ErrUnsetVariable or
// ErrBadSubstitution. The text is returned unchanged when it holds no '$'.
func Substitute(file string, line int, text string, vars Vars, strict bool) (string, error) {
	return substitute(file, line, text, vars, strict, false)
}

// substitute is Substitute; with pending, a variable vars does not hold
// (its source does not exist yet) becomes manifest.PendingValue(name), even
// where the expression has a default: the source may well set it.
func substitute(file string, line int, text string, vars Vars, strict, pending bool) (string, error) {
	if strings.IndexByte(text, '$') < 0 {
		return text, nil
	}
	lookup := mapping(vars, strict, nil)
	if pending {
		lookup = func(name string) (string, bool) {
			if v, ok := vars[name]; ok {
				return v, true
			}
			return manifest.PendingValue(name), true
		}
	}
	out, err := envsubst.Eval(text, lookup)
	if err == nil {
		return out, nil
	}
	return "", locate(file, line, text, vars, strict, err)
}

// mapping is the variable lookup envsubst calls: in strict mode an unset
// variable reports exists=false; missing records the last name not found.
func mapping(vars Vars, strict bool, missing *string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		if !ok && missing != nil {
			*missing = name
		}
		if !strict {
			return v, true
		}
		return v, ok
	}
}

// locate turns an envsubst error over text into a *diag.Error naming the line
// of the first expression that fails on its own, and the variable.
func locate(file string, line int, text string, vars Vars, strict bool, cause error) *diag.Error {
	for _, sp := range expressions(text) {
		expr := text[sp[0]:sp[1]]
		var missing string
		if _, err := envsubst.Eval(expr, mapping(vars, strict, &missing)); err != nil {
			return exprError(file, line+strings.Count(text[:sp[0]], "\n"), expr, missing, err)
		}
	}
	// The expression scanner and envsubst disagree (an unterminated "${"
	// the scanner could not delimit): report the document.
	e := exprError(file, line, "", "", cause)
	if i := strings.Index(text, "${"); i >= 0 {
		e.Line = line + strings.Count(text[:i], "\n")
	}
	return e
}

func exprError(file string, line int, expr, missing string, err error) *diag.Error {
	if strings.Contains(err.Error(), "variable not set") && missing != "" {
		return &diag.Error{File: file, Line: line, Msg: "${" + missing + "}", Err: fmt.Errorf(
			"%w and has no default (strict substitution; set %s with --substitute %s=... or in a --substitute-from ConfigMap or Secret, or write ${%s:=default}; $${%s} is a literal)",
			ErrUnsetVariable, missing, missing, missing, missing)}
	}
	what := "${...}"
	if expr != "" {
		what, _, _ = strings.Cut(expr, "\n")
		if len(what) > 80 {
			what = what[:77] + "..."
		}
	}
	return &diag.Error{File: file, Line: line, Msg: what,
		Err: fmt.Errorf("%w: %v (write $${ for a literal ${)", ErrBadSubstitution, err)}
}

// unsetAll returns an error for every expression of text that fails on its
// own in strict mode because its variable is unset (nil when another kind of
// error is among them: that one stops the document).
func unsetAll(file string, line int, text string, vars Vars) []*diag.Error {
	var out []*diag.Error
	for _, sp := range expressions(text) {
		expr := text[sp[0]:sp[1]]
		var missing string
		if _, err := envsubst.Eval(expr, mapping(vars, true, &missing)); err != nil {
			e := exprError(file, line+strings.Count(text[:sp[0]], "\n"), expr, missing, err)
			if !errors.Is(e, ErrUnsetVariable) {
				return nil
			}
			out = append(out, e)
		}
	}
	return out
}

// expressions returns the [start, end) spans of the ${...} expressions in
// text in order, skipping $$ escapes and matching nested braces. An
// unterminated expression runs to the end of the text.
func expressions(text string) [][2]int {
	var spans [][2]int
	for i := 0; i < len(text); i++ {
		if text[i] != '$' || i+1 >= len(text) {
			continue
		}
		switch text[i+1] {
		case '$':
			i++ // $$: escape, the second '$' is literal
		case '{':
			depth, j := 0, i+1
			for ; j < len(text); j++ {
				if text[j] == '{' {
					depth++
				} else if text[j] == '}' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			end := min(j+1, len(text))
			spans = append(spans, [2]int{i, end})
			i = end - 1
		}
	}
	return spans
}

// disabled reports whether a document turns substitution off with the
// DisableAnnotation (as an annotation or a label). Only documents that
// mention the key are parsed.
func disabled(text string) bool {
	if !strings.Contains(text, DisableAnnotation) {
		return false
	}
	var m struct {
		Metadata struct {
			Annotations map[string]any `yaml:"annotations"`
			Labels      map[string]any `yaml:"labels"`
		} `yaml:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		return false // the parser reports the document's syntax error later
	}
	return m.Metadata.Annotations[DisableAnnotation] == "disabled" || m.Metadata.Labels[DisableAnnotation] == "disabled"
}

// document is one YAML document of a file: its text (including the "---"
// line that opens it, if any) and the 1-based line where it starts.
type document struct {
	text string
	line int
}

// splitDocuments splits a multi-document YAML file at lines starting with
// "---" (a document marker can never be content, not even in a block
// scalar). Concatenating the texts gives back the file.
func splitDocuments(data []byte) []document {
	var docs []document
	start, startLine, line := 0, 1, 1
	for i := 0; i < len(data); {
		end := bytes.IndexByte(data[i:], '\n')
		next := len(data)
		if end >= 0 {
			next = i + end + 1
		}
		if i > start && isDocStart(data[i:next]) {
			docs = append(docs, document{text: string(data[start:i]), line: startLine})
			start, startLine = i, line
		}
		i = next
		line++
	}
	if start < len(data) || len(docs) == 0 {
		docs = append(docs, document{text: string(data[start:]), line: startLine})
	}
	return docs
}

func isDocStart(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("---")) {
		return false
	}
	return len(l) == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\n' || l[3] == '\r'
}

// docID names the object of a document for errors ("namespace/Kind/name"),
// "" when it cannot tell.
func docID(text string) string {
	var m struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(text), &m); err != nil || m.Kind == "" || m.Metadata.Name == "" {
		return ""
	}
	ns := m.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + m.Kind + "/" + m.Metadata.Name
}
