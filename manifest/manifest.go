package manifest

import (
	"log/slog"
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
	// Secrets are the values substitution took from Secrets that the
	// object holds (see SecretValue): every field holding one is masked
	// wherever the object is shown or stored.
	Secrets []SecretValue
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
func (o Object) Name() string { return str(o.Metadata()["name"]) }

// Namespace returns metadata.namespace, or "default" when it is empty.
func (o Object) Namespace() string {
	if ns := str(o.Metadata()["namespace"]); ns != "" {
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
func (o Object) Annotations() map[string]string { return stringMap(o.Metadata()["annotations"]) }

// Labels returns metadata.labels as a copy; nil when there are none.
func (o Object) Labels() map[string]string { return stringMap(o.Metadata()["labels"]) }

// ID returns "namespace/Kind/name".
func (o Object) ID() string { return o.Namespace() + "/" + o.Kind() + "/" + o.Name() }

// Spec returns the spec mapping, or nil.
func (o Object) Spec() map[string]any {
	m, _ := o.Content["spec"].(map[string]any)
	return m
}

// IsConfigMap reports whether the object is a core v1 ConfigMap.
func (o Object) IsConfigMap() bool { return o.APIVersion() == "v1" && o.Kind() == "ConfigMap" }

// IsSecret reports whether the object is a core v1 Secret.
func (o Object) IsSecret() bool { return o.APIVersion() == "v1" && o.Kind() == "Secret" }

// Metadata returns the metadata mapping (not a copy), or nil.
func (o Object) Metadata() map[string]any {
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

// CopyObjects deep-copies every object of objs (nil stays nil).
func CopyObjects(objs []Object) []Object {
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

// External is a source outside the repository that a revision's objects
// depend on, such as the chart a HelmRelease took from a Helm repository or
// an OCI registry. A change of one (a new chart version matching a semver
// range) is a new revision.
type External struct {
	Kind    string `json:"kind"`          // "HelmChart"
	User    string `json:"user"`          // what uses it, e.g. the HelmRelease "namespace/name"
	Name    string `json:"name"`          // e.g. the chart's name
	Version string `json:"version"`       // e.g. the chart's version
	Digest  string `json:"digest"`        // e.g. "sha256:…" of the chart archive
	URL     string `json:"url,omitempty"` // where it came from
}

// Less orders externals by user, then kind, name, version, digest.
func (e External) Less(o External) bool {
	a := [...]string{e.User, e.Kind, e.Name, e.Version, e.Digest, e.URL}
	b := [...]string{o.User, o.Kind, o.Name, o.Version, o.Digest, o.URL}
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Snapshot is everything gitaso read at one revision.
type Snapshot struct {
	Revision string   // full commit SHA; directory mode: "dir-" + first 12 hex of sha256 over sorted (path, content)
	Objects  []Object // ASO resources, ConfigMaps and Secrets, sorted by File, then Index
	Ignored  []Object // kinds that are neither ASO kinds (*.azure.com) nor ConfigMap/Secret; reported once by caller
	// External are the sources outside the repository the objects came
	// from (charts of HelmReleases), sorted; when there are any, Revision is
	// the commit's followed by "+" and a digest of them (see source.Build).
	External []External `json:"external,omitempty"`
	// Texts are the files the objects were parsed from, by File, for the
	// files whose lines are their own (not text a renderer generated): an
	// error about a field can point at the field's line (source.LocateFields).
	Texts Texts `json:"-"`
	// Units are the revision's Flux Kustomizations and HelmReleases (none
	// for a repository without Flux objects), sorted by ID. A unit that
	// did not render has a Reason and none of its objects are in Objects:
	// the reconciler keeps what it last applied.
	Units []Unit `json:"units,omitempty"`
}

// Texts gives the files a snapshot's objects were parsed from: nil for a
// file it does not know. A source may read them again when asked rather
// than hold them (a Git source reads its blobs back from the cache).
type Texts interface {
	Text(file string) []byte
}

// TextMap is Texts held in memory, by file.
type TextMap map[string][]byte

// Text returns the file's content, nil when m does not hold it.
func (m TextMap) Text(file string) []byte { return m[file] }
