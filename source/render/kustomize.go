package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// ErrRemoteBase is returned (wrapped in a *diag.Error) for a kustomization
// entry that is a URL or Git reference: gitaso builds offline, from the
// repository only.
var ErrRemoteBase = errors.New("remote kustomize bases are not supported")

// ErrKustomizeBuild is returned (wrapped in a *diag.Error) when kustomize
// fails to build a kustomization.
var ErrKustomizeBuild = errors.New("kustomize build failed")

// kustomizationNames are the file names kustomize reads, in its order of
// preference (gitaso lists only *.yaml/*.yml files).
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// tree indexes the files given to Render: which paths exist, which
// directories exist and which directories hold a kustomization file.
type tree struct {
	files  map[string]bool
	dirs   map[string]bool
	kfiles map[string]string // directory ("" for the root) → kustomization file path
}

func newTree(files []source.File) *tree {
	t := &tree{files: map[string]bool{}, dirs: map[string]bool{"": true}, kfiles: map[string]string{}}
	for _, f := range files {
		t.files[f.Path] = true
		for d := path.Dir(f.Path); d != "." && d != "/" && !t.dirs[d]; d = path.Dir(d) {
			t.dirs[d] = true
		}
		dir := dirOf(f.Path)
		base := path.Base(f.Path)
		if i := slices.Index(kustomizationNames, base); i >= 0 {
			if cur, ok := t.kfiles[dir]; !ok || slices.Index(kustomizationNames, path.Base(cur)) > i {
				t.kfiles[dir] = f.Path
			}
		}
	}
	return t
}

// dirOf is path.Dir with "" for the repository root.
func dirOf(p string) string {
	d := path.Dir(p)
	if d == "." || d == "/" {
		return ""
	}
	return d
}

// within reports whether p is dir or below it ("" is the root).
func within(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

// inKustomizeTree reports whether a file is below (or in) a directory that
// holds a kustomization file: kustomize decides what of it is used.
func (t *tree) inKustomizeTree(p string) bool {
	for d := dirOf(p); ; d = dirOf(d) {
		if _, ok := t.kfiles[d]; ok {
			return true
		}
		if d == "" {
			return false
		}
	}
}

// roots returns the directories to build: those given (each must hold a
// kustomization file), or else every topmost directory holding one, as
// Flux's generated kustomization includes a sub-directory that has its own.
func (t *tree) roots(dirs []string) ([]string, diag.List) {
	if len(dirs) > 0 {
		var out []string
		var errs diag.List
		for _, d := range dirs {
			d = strings.Trim(path.Clean("/"+strings.ReplaceAll(d, "\\", "/")), "/")
			if _, ok := t.kfiles[d]; !ok {
				errs = append(errs, &diag.Error{File: d, Msg: "kustomize directory: no kustomization.yaml there among the files read (the directory is relative to the repository root and must be below the source path)"})
				continue
			}
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
		slices.Sort(out)
		return out, errs
	}
	var out []string
	for d := range t.kfiles {
		top := true
		for p := d; p != ""; {
			p = dirOf(p)
			if _, ok := t.kfiles[p]; ok {
				top = false
				break
			}
		}
		if top {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out, nil
}

// kustomizeRefKeys are the kustomization fields whose entries kustomize may
// load from a URL or Git repository.
var kustomizeRefKeys = []string{"resources", "bases", "components", "generators", "transformers", "validators"}

// checkRefs walks the kustomization of dir and every local kustomization it
// reaches, refusing remote entries and entries that do not exist among the
// files (kustomize would try to clone those with git). data returns a file's
// content. seen collects the kustomization files reached, files the other
// files their entries name.
func (t *tree) checkRefs(dir string, data func(string) []byte, seen, files map[string]bool) diag.List {
	kf, ok := t.kfiles[dir]
	if !ok || seen[kf] {
		return nil
	}
	seen[kf] = true
	var doc yaml.Node
	if err := yaml.Unmarshal(data(kf), &doc); err != nil {
		return diag.List{{File: kf, Msg: "invalid kustomization", Err: err}}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil // kustomize reports an empty or odd file itself
	}
	root := doc.Content[0]
	var errs diag.List
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i].Value, root.Content[i+1]
		if !slices.Contains(kustomizeRefKeys, key) || val.Kind != yaml.SequenceNode {
			continue
		}
		for j, item := range val.Content {
			if item.Kind != yaml.ScalarNode || strings.ContainsAny(item.Value, "\n") {
				continue // inline generator/transformer configuration
			}
			entry := strings.TrimSpace(item.Value)
			field := fmt.Sprintf("%s[%d]", key, j)
			if isRemote(entry) {
				errs = append(errs, &diag.Error{File: kf, Line: item.Line, Field: field, Err: ErrRemoteBase, Msg: fmt.Sprintf(
					"%q: gitaso builds kustomizations offline from the repository; vendor the base into the repository (below the source path) and refer to it by a relative path", entry)})
				continue
			}
			target := path.Clean(path.Join(dir, entry))
			if path.IsAbs(entry) || target == ".." || strings.HasPrefix(target, "../") {
				errs = append(errs, &diag.Error{File: kf, Line: item.Line, Field: field, Msg: fmt.Sprintf(
					"%q is outside the repository", entry)})
				continue
			}
			if target == "." {
				target = ""
			}
			switch {
			case t.files[target]:
				files[target] = true
			case t.dirs[target]:
				errs = append(errs, t.checkRefs(target, data, seen, files)...)
			default:
				errs = append(errs, &diag.Error{File: kf, Line: item.Line, Field: field, Msg: fmt.Sprintf(
					"%q does not exist among the files gitaso reads (only *.yaml/*.yml files below the source path; point the source path at a directory that holds the base too)", entry)})
			}
		}
	}
	return errs
}

// isRemote reports whether a kustomization entry is a URL or a Git
// reference (as kustomize's repospec understands them).
func isRemote(entry string) bool {
	switch {
	case strings.Contains(entry, "://"),
		strings.HasPrefix(entry, "git@"),
		strings.HasPrefix(entry, "git::"),
		strings.HasPrefix(entry, "github.com/"),
		strings.HasPrefix(entry, "gitlab.com/"),
		strings.HasPrefix(entry, "bitbucket.org/"),
		strings.Contains(entry, "?ref="),
		strings.Contains(entry, "?version="),
		strings.Contains(entry, ".git//"),
		strings.HasSuffix(entry, ".git"):
		return true
	}
	return false
}

// builtObject is one object of a kustomize build.
type builtObject struct {
	id   string // namespace/Kind/name
	file string // where it came from: the resource's file, or the generator's kustomization
	line int    // the resource's document's line, the generator's entry's line; 0 if unknown
	yaml string // source.OriginComment(file, line), then the object
}

// sourceAnnotation carries, through a kustomize build, the file and line of
// the document an object came from ("base/rg.yaml:3"): gitaso writes it
// into the resource files (in the in-memory file system) before the build
// and takes it off the objects after.
//
// Why not kustomize's own buildMetadata: [originAnnotations]: it names the
// file only, and turns on transformer tracking, which rewrites an
// annotation on every object for every transformer (each patch is one):
// 1,000 objects and 30 patches took 13 s and 8 GB instead of 1 s.
const sourceAnnotation = "gitaso.io/kustomize-source"

// kustomizeBuild builds the kustomization in dir from the in-memory file
// system and returns its objects in kustomize's output order (the order of
// the kustomization's inputs), each with the file and line it came from: a
// resource's (patched or not) from the source annotation, a generated
// ConfigMap's or Secret's the kustomization and entry of its generator,
// anything else the kustomization file at line 0.
func kustomizeBuild(fs filesys.FileSystem, dir, kfile string) ([]builtObject, *diag.Error) {
	k := krusty.MakeKustomizer(&krusty.Options{
		Reorder:          krusty.ReorderOptionUnspecified, // kustomize build's order; sortOptions honoured
		LoadRestrictions: types.LoadRestrictionsNone,      // the file system holds the repository's files only
		PluginConfig:     types.DisabledPluginConfig(),
	})
	w := walkKustomizations(fs, dir)
	restore := w.annotateSources(fs)
	m, err := k.Run(fs, "/"+dir)
	restore()
	if err != nil {
		var hint string
		if s := err.Error(); strings.Contains(s, "no such file") || strings.Contains(s, "not exist") || strings.Contains(s, "doesn't exist") {
			hint = " (gitaso gives kustomize only the *.yaml/*.yml files below the source path)"
		}
		file, line := kfile, 0
		if f, l := w.patchLine(fs, err.Error()); f != "" {
			file, line = f, l
		}
		return nil, &diag.Error{File: file, Line: line, Err: fmt.Errorf("%w: %w%s", ErrKustomizeBuild, err, hint)}
	}
	res := m.Resources()
	out := make([]builtObject, 0, len(res))
	for _, r := range res {
		file, line := kfile, 0
		if ann := r.GetAnnotations(); ann[sourceAnnotation] != "" {
			if f, l, ok := parseSource(ann[sourceAnnotation]); ok {
				file, line = f, l
			}
			delete(ann, sourceAnnotation)
			if err := r.SetAnnotations(ann); err != nil {
				return nil, &diag.Error{File: kfile, Msg: "remove gitaso's source annotation", Err: err}
			}
		} else if f, l := w.generator(fs, r.GetKind(), r.GetName()); f != "" {
			file, line = f, l
		}
		y, err := r.AsYAML()
		if err != nil {
			return nil, &diag.Error{File: kfile, Msg: "serialise kustomize output", Err: err}
		}
		ns := r.GetNamespace()
		if ns == "" {
			ns = manifest.DefaultNamespace
		}
		text := string(y)
		if file != kfile || line > 0 {
			text = source.OriginComment(file, line) + text
		}
		out = append(out, builtObject{id: ns + "/" + r.GetKind() + "/" + r.GetName(), file: file, line: line, yaml: text})
	}
	return out, nil
}

// parseSource reads a source annotation's "file:line".
func parseSource(v string) (string, int, bool) {
	i := strings.LastIndexByte(v, ':')
	if i <= 0 {
		return "", 0, false
	}
	line, err := strconv.Atoi(v[i+1:])
	if err != nil || line < 0 {
		return "", 0, false
	}
	return v[:i], line, true
}

// originalDir holds, in the in-memory file system, the text of a
// kustomization file as committed when gitaso rewrites it for the build
// (fixDeprecated), so that lines are found in what the user wrote. A dot
// directory: the sources never list one, so no kustomization can name it.
const originalDir = "/.gitaso-original/"

// saveOriginal keeps the committed text of file (once: the first rewrite
// sees it).
func saveOriginal(fs filesys.FileSystem, file string, data []byte) {
	if !fs.Exists(originalDir + file) {
		_ = fs.WriteFile(originalDir+file, data)
	}
}

// readOriginal returns the committed text of a file, nil if there is none.
func readOriginal(fs filesys.FileSystem, file string) []byte {
	if b, err := fs.ReadFile(originalDir + file); err == nil {
		return b
	}
	b, _ := fs.ReadFile("/" + file)
	return b
}

// kustomizations is what a build reads: its kustomization files (the
// built one first) and the files they list as resources.
type kustomizations struct {
	kfiles    []string
	resources []string        // files listed under resources (or bases, components), in walk order
	other     map[string]bool // files any other field names (patches, generator inputs, ...)
}

// walkKustomizations lists the kustomization files and resource files the
// build of dir reads, following resources, bases and components into
// directories. Entries that are not local files or directories are left to
// kustomize (checkRefs refused remote ones already).
func walkKustomizations(fs filesys.FileSystem, dir string) *kustomizations {
	w := &kustomizations{other: map[string]bool{}}
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		kf := ""
		for _, n := range kustomizationNames {
			if p := path.Join(dir, n); fs.Exists("/" + p) {
				kf = p
				break
			}
		}
		if kf == "" || seen[kf] {
			return
		}
		seen[kf] = true
		w.kfiles = append(w.kfiles, kf)
		data, err := fs.ReadFile("/" + kf)
		if err != nil {
			return
		}
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			return
		}
		root := doc.Content[0]
		for i := 0; i+1 < len(root.Content); i += 2 {
			key, val := root.Content[i].Value, root.Content[i+1]
			switch key {
			case "resources", "bases", "components":
				if val.Kind != yaml.SequenceNode {
					continue
				}
				for _, item := range val.Content {
					if item.Kind != yaml.ScalarNode {
						continue
					}
					p := path.Clean(path.Join(dir, strings.TrimSpace(item.Value)))
					switch {
					case p == ".." || strings.HasPrefix(p, "../") || !fs.Exists("/"+p):
					case fs.IsDir("/" + p):
						if p == "." {
							p = "" // the repository root
						}
						walk(p)
					default:
						w.resources = append(w.resources, p)
					}
				}
			default:
				// Any other string that names a file (a patch, a generator's
				// files or envs entry "key=path", a configuration): that
				// file is not annotated, since its text is used as it is.
				eachScalar(val, func(v string) {
					for _, c := range []string{v, v[strings.IndexByte(v, '=')+1:]} {
						if p := path.Clean(path.Join(dir, strings.TrimSpace(c))); fs.Exists("/"+p) && !fs.IsDir("/"+p) {
							w.other[p] = true
						}
					}
				})
			}
		}
	}
	walk(dir)
	return w
}

func eachScalar(n *yaml.Node, fn func(string)) {
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.ContainsRune(n.Value, '\n') {
			fn(n.Value)
		}
	case yaml.SequenceNode, yaml.MappingNode:
		for _, c := range n.Content {
			eachScalar(c, fn)
		}
	}
}

// annotateSources writes the source annotation ("file:line") into every
// object of every resource file of the build, in the in-memory file
// system, and returns the function that puts the files back. A file that
// any other field of a kustomization names too (as a patch or a generator
// input) is left as it is, and so is one that does not parse (kustomize
// reports it); their objects keep the kustomization file.
func (w *kustomizations) annotateSources(fs filesys.FileSystem) (restore func()) {
	saved := map[string][]byte{}
	for _, f := range w.resources {
		if w.other[f] || saved[f] != nil {
			continue
		}
		data, err := fs.ReadFile("/" + f)
		if err != nil {
			continue
		}
		out, ok := annotateFile(f, data)
		if !ok {
			continue
		}
		if err := fs.WriteFile("/"+f, out); err == nil {
			saved[f] = data
		}
	}
	return func() {
		for f, data := range saved {
			_ = fs.WriteFile("/"+f, data)
		}
	}
}

// annotateFile returns the text of a resource file with the source
// annotation on each object (each item of a List); ok is false when it
// has none to annotate or does not parse.
func annotateFile(file string, data []byte) (out []byte, ok bool) {
	defer func() {
		if recover() != nil {
			out, ok = nil, false // yaml.v3 is fuzzed upstream; a panic only costs the lines
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	n := 0
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, false
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue // empty, or not an object: kustomize reports it
		}
		root := doc.Content[0]
		if items := nodeAt(root, "items"); items != nil && items.Kind == yaml.SequenceNode && strings.HasSuffix(scalarAt(root, "kind"), "List") {
			for _, it := range items.Content {
				n += annotate(it, file)
			}
		} else {
			n += annotate(root, file)
		}
		if err := enc.Encode(&doc); err != nil {
			return nil, false
		}
	}
	if err := enc.Close(); err != nil || n == 0 {
		return nil, false
	}
	return b.Bytes(), true
}

// annotate sets the source annotation of an object's mapping node; it
// returns 1 when it did.
func annotate(obj *yaml.Node, file string) int {
	md := nodeAt(obj, "metadata")
	if md == nil || md.Kind != yaml.MappingNode {
		return 0
	}
	ann := nodeAt(md, "annotations")
	switch {
	case ann == nil:
		ann = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		md.Content = append(md.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "annotations"}, ann)
	case ann.Kind == yaml.ScalarNode && ann.ShortTag() == "!!null":
		ann.Kind, ann.Tag, ann.Value = yaml.MappingNode, "!!map", ""
	case ann.Kind != yaml.MappingNode:
		return 0
	}
	v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: file + ":" + strconv.Itoa(obj.Line)}
	if old := nodeAt(ann, sourceAnnotation); old != nil {
		*old = *v
		return 1
	}
	ann.Content = append(ann.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: sourceAnnotation}, v)
	return 1
}

// generator finds the generator of a ConfigMap or Secret of the build: the
// kustomization and the line of its configMapGenerator or secretGenerator
// entry whose name is the longest part of the object's name (prefixes,
// suffixes and the content hash are added). "" when none is.
func (w *kustomizations) generator(fs filesys.FileSystem, kind, name string) (string, int) {
	field, ok := generatorFields[kind]
	if !ok {
		return "", 0
	}
	file, line, best := "", 0, 0
	for _, kf := range w.kfiles {
		if l, n := generatorLine(readOriginal(fs, kf), field, name); n > best {
			file, line, best = kf, l, n
		}
	}
	return file, line
}

// nodeAt returns the value of key in a mapping node, nil if absent.
func nodeAt(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// scalarAt returns the scalar value of key in a mapping node, "" if absent.
func scalarAt(n *yaml.Node, key string) string {
	if v := nodeAt(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// generatorFields are the kustomization fields of the built-in generators
// by the kind they generate.
var generatorFields = map[string]string{"ConfigMap": "configMapGenerator", "Secret": "secretGenerator"}

// generatorLine returns the line of the entry of field (configMapGenerator,
// secretGenerator) of a kustomization whose name is the longest part of
// name, and the length of that name; 0, 0 if there is none.
func generatorLine(kdata []byte, field, name string) (line, length int) {
	var doc yaml.Node
	if err := yaml.Unmarshal(kdata, &doc); err != nil || len(doc.Content) == 0 {
		return 0, 0
	}
	list := nodeAt(doc.Content[0], field)
	if list == nil || list.Kind != yaml.SequenceNode {
		return 0, 0
	}
	for _, e := range list.Content {
		if n := scalarAt(e, "name"); n != "" && strings.Contains(name, n) && len(n) > length {
			line, length = e.Line, len(n)
		}
	}
	return line, length
}

// patchFiles answers kustomize's "is this patchesStrategicMerge entry a
// file?" (FixKustomizationPreMarshalling reads each entry) from the
// revision's file list, relative to the kustomization's directory.
type patchFiles struct {
	filesys.FileSystem
	dir    string
	exists func(string) bool
}

func (p patchFiles) ReadFile(name string) ([]byte, error) {
	if p.exists(path.Join(p.dir, name)) {
		return nil, nil
	}
	return nil, fs.ErrNotExist
}

// fixDeprecated rewrites, in the in-memory file system, a kustomization that
// uses deprecated fields the way "kustomize edit fix" does (bases,
// commonLabels, patchesStrategicMerge, patchesJson6902, imageTags, ...),
// because kustomize prints its deprecation warnings straight to the
// process's stderr. It returns the warnings, for the caller to log; nil when
// the file needs no fix (or cannot be read as a kustomization: the build
// reports that).
func fixDeprecated(fs filesys.FileSystem, kfile string, data []byte, exists func(string) bool) []string {
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil
	}
	warnings := k.CheckDeprecatedFields() // never nil
	if warnings == nil || len(*warnings) == 0 {
		return nil // written back, an empty "resources: []" was dropped and kustomize refused the file as empty
	}
	k.FixKustomization()
	// kustomize's own fix turns each patchesStrategicMerge entry into a
	// patch: a path when the file exists, an inline patch otherwise.
	if err := k.FixKustomizationPreMarshalling(patchFiles{filesys.MakeFsInMemory(), dirOf(kfile), exists}); err != nil {
		return nil // e.g. a label in both commonLabels and labels: let kustomize build as written
	}
	out, err := marshalKustomization(&k)
	if err != nil {
		return nil
	}
	saveOriginal(fs, kfile, data)
	if err := fs.WriteFile("/"+kfile, out); err != nil {
		return nil
	}
	msgs := make([]string, 0, len(*warnings))
	for _, w := range *warnings {
		msgs = append(msgs, strings.TrimPrefix(w, "# Warning: "))
	}
	return msgs
}
