package source

import (
	"encoding/json"
	"path"
	"strings"
)

// originPrefix starts the comment a Renderer writes before a document of
// generated text to say where the object came from (see OriginComment).
const originPrefix = "# gitaso.io/origin: "

// origin is the payload of an origin comment.
type origin struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
}

// OriginComment returns the comment line (with its newline) that a Renderer
// writes before a document of generated text, such as an object of a
// kustomize build, to name the file and line the object came from: ParseFile
// then records them in Object.File and Object.Line (and in the object's
// errors) instead of the generated file's path and position. file is a
// slash path relative to the repository root; line is 1-based, 0 when
// unknown. The comment is not part of the object's content.
func OriginComment(file string, line int) string {
	b, _ := json.Marshal(origin{File: file, Line: max(line, 0)})
	// "$" written as \u0024 so that substitution (${VAR}) never touches it.
	return originPrefix + strings.ReplaceAll(string(b), "$", `\u0024`) + "\n"
}

// parseOrigin finds an origin comment among the lines of a YAML head
// comment; ok is false when there is none or it is not well formed (a
// clean relative path, a line not below 0).
func parseOrigin(comment string) (o origin, ok bool) {
	for l := range strings.Lines(comment) {
		l = strings.TrimRight(l, "\r\n")
		rest, found := strings.CutPrefix(l, originPrefix)
		if !found {
			continue
		}
		if err := json.Unmarshal([]byte(rest), &o); err != nil {
			return origin{}, false
		}
		if o.File == "" || o.Line < 0 || strings.HasPrefix(o.File, "/") || path.Clean(o.File) != o.File ||
			o.File == ".." || strings.HasPrefix(o.File, "../") {
			return origin{}, false
		}
		return o, true
	}
	return origin{}, false
}
