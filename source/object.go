package source

import (
	"encoding/json"
	"log/slog"
	"path"
	"strconv"
	"strings"
)

// Object is one Kubernetes-style object read from a manifest file.
//
// An object of generated text (File.Generated, e.g. a kustomize build) is
// where its renderer's origin comment says (OriginComment): a resource
// file and the line of its document, or a kustomization and the line of
// the generator's entry; else the generated file at Line 0. Index is then
// the position in the generated text.
type Object struct {
	File    string         // slash path relative to the repo root (not the sub-path)
	Line    int            // 1-based line where the object's YAML mapping starts; 0 if unknown
	Index   int            // document index within the file (0-based, empty documents count)
	Content map[string]any // the object, JSON-compatible values only
}

// String names the object and where it is: "file:line namespace/Kind/name".
// It never prints the content (a Secret's values).
func (o Object) String() string { return o.File + ":" + strconv.Itoa(o.Line) + " " + o.ID() }

// LogValue logs where the object is and its ID, never its content.
func (o Object) LogValue() slog.Value {
	return slog.GroupValue(slog.String("file", o.File), slog.Int("line", o.Line),
		slog.String("apiVersion", o.APIVersion()), slog.String("id", o.ID()))
}

// DefaultNamespace is the namespace of an object without metadata.namespace.
const DefaultNamespace = "default"

// APIVersion returns apiVersion, e.g. "storage.azure.com/v1api20230101".
func (o Object) APIVersion() string { return str(o.Content["apiVersion"]) }

// Kind returns kind, e.g. "StorageAccount".
func (o Object) Kind() string { return str(o.Content["kind"]) }

// Name returns metadata.name.
func (o Object) Name() string { return str(o.metadata()["name"]) }

// Namespace returns metadata.namespace, or "default" when it is empty.
func (o Object) Namespace() string {
	if ns := str(o.metadata()["namespace"]); ns != "" {
		return ns
	}
	return DefaultNamespace
}

// Group returns the API group of apiVersion ("" for the core group "v1").
func (o Object) Group() string {
	g, _ := splitAPIVersion(o.APIVersion())
	return g
}

// Version returns the version part of apiVersion.
func (o Object) Version() string {
	_, v := splitAPIVersion(o.APIVersion())
	return v
}

// Annotations returns metadata.annotations (string values only; ParseFile
// refuses others). The map is a copy; it is nil when there are none.
func (o Object) Annotations() map[string]string { return stringMap(o.metadata()["annotations"]) }

// Labels returns metadata.labels as a copy; nil when there are none.
func (o Object) Labels() map[string]string { return stringMap(o.metadata()["labels"]) }

// ID returns "namespace/Kind/name".
func (o Object) ID() string { return o.Namespace() + "/" + o.Kind() + "/" + o.Name() }

// Spec returns the spec mapping, or nil.
func (o Object) Spec() map[string]any {
	m, _ := o.Content["spec"].(map[string]any)
	return m
}

// IsASO reports whether the object is an Azure Service Operator resource:
// its API group ends in ".azure.com".
func (o Object) IsASO() bool { return strings.HasSuffix(o.Group(), ".azure.com") }

// IsConfigMap reports whether the object is a core v1 ConfigMap.
func (o Object) IsConfigMap() bool { return o.APIVersion() == "v1" && o.Kind() == "ConfigMap" }

// IsSecret reports whether the object is a core v1 Secret.
func (o Object) IsSecret() bool { return o.APIVersion() == "v1" && o.Kind() == "Secret" }

func (o Object) metadata() map[string]any {
	m, _ := o.Content["metadata"].(map[string]any)
	return m
}

func splitAPIVersion(av string) (group, version string) {
	if i := strings.LastIndexByte(av, '/'); i >= 0 {
		return av[:i], av[i+1:]
	}
	return "", av
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// DeepCopy returns a copy of the object that shares nothing with it.
func (o Object) DeepCopy() Object {
	o.Content, _ = deepCopy(o.Content).(map[string]any)
	return o
}

func copyObjects(objs []Object) []Object {
	if objs == nil {
		return nil
	}
	out := make([]Object, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}

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
