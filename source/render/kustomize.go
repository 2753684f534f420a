package render

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/internal/diag"
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

// originAnnotation is the annotation kustomize writes on every object of a
// build whose kustomization asks for buildMetadata: [originAnnotations]
// (resource.Origin as YAML).
const originAnnotation = "config.kubernetes.io/origin"

// kustomizeBuild builds the kustomization in dir from the in-memory file
// system and returns its objects in kustomize's output order (the order of
// the kustomization's inputs). Each object says where it came from: the
// build runs with origin annotations on, which name a resource's file (a
// patched resource's too) or a generator's kustomization; the object's
// document in that file is found by kind and name (see locator). The
// annotation is removed from the objects, whether gitaso or the
// kustomization asked for it: it is build metadata, not part of the object.
func kustomizeBuild(fs filesys.FileSystem, dir, kfile string) ([]builtObject, *diag.Error) {
	k := krusty.MakeKustomizer(&krusty.Options{
		Reorder:          krusty.ReorderOptionUnspecified, // kustomize build's order; sortOptions honoured
		LoadRestrictions: types.LoadRestrictionsNone,      // the file system holds the repository's files only
		PluginConfig:     types.DisabledPluginConfig(),
	})
	restore := enableOrigins(fs, kfile)
	m, err := k.Run(fs, "/"+dir)
	restore()
	if err != nil {
		var hint string
		if s := err.Error(); strings.Contains(s, "no such file") || strings.Contains(s, "not exist") || strings.Contains(s, "doesn't exist") {
			hint = " (gitaso gives kustomize only the *.yaml/*.yml files below the source path)"
		}
		return nil, &diag.Error{File: kfile, Err: fmt.Errorf("%w: %w%s", ErrKustomizeBuild, err, hint)}
	}
	res := m.Resources()
	out := make([]builtObject, 0, len(res))
	loc := newLocator(fs, dir, kfile)
	for _, r := range res {
		or, err := r.GetOrigin()
		if err != nil {
			or = nil // unreadable origin: the kustomization file, line 0
		}
		if err := r.SetOrigin(nil); err != nil {
			return nil, &diag.Error{File: kfile, Msg: "remove kustomize's origin annotation", Err: err}
		}
		y, err := r.AsYAML()
		if err != nil {
			return nil, &diag.Error{File: kfile, Msg: "serialise kustomize output", Err: err}
		}
		ns := r.GetNamespace()
		if ns == "" {
			ns = source.DefaultNamespace
		}
		file, line := loc.locate(or, r.GetKind(), r.GetName(), r.GetNamespace())
		text := string(y)
		if file != kfile || line > 0 {
			text = source.OriginComment(file, line) + text
		}
		out = append(out, builtObject{id: ns + "/" + r.GetKind() + "/" + r.GetName(), file: file, line: line, yaml: text})
	}
	return out, nil
}

// originalDir holds, in the in-memory file system, the text of a
// kustomization file as committed when gitaso rewrites it for the build
// (fixDeprecated, enableOrigins), so that lines are found in what the user
// wrote. A dot directory: the sources never list one, so no kustomization
// can name it.
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

// enableOrigins adds originAnnotations to the buildMetadata of the
// kustomization file (in the in-memory file system) so that kustomize
// records where each object came from, and returns the function that puts
// the file back. A kustomization that cannot be read as a YAML mapping is
// left alone (kustomize reports it; its objects keep the kustomization file).
func enableOrigins(fs filesys.FileSystem, kfile string) (restore func()) {
	nothing := func() {}
	data, err := fs.ReadFile("/" + kfile)
	if err != nil {
		return nothing
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nothing
	}
	root := doc.Content[0]
	opt := &yaml.Node{Kind: yaml.ScalarNode, Value: types.OriginAnnotations}
	found := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "buildMetadata" {
			continue
		}
		found = true
		v := root.Content[i+1]
		if v.Kind != yaml.SequenceNode {
			if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
				root.Content[i+1] = &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{opt}}
				break
			}
			return nothing // kustomize reports the odd value
		}
		for _, c := range v.Content {
			if c.Value == types.OriginAnnotations {
				return nothing
			}
		}
		v.Content = append(v.Content, opt)
	}
	if !found {
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "buildMetadata"},
			&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{opt}})
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nothing
	}
	saveOriginal(fs, kfile, data)
	if err := fs.WriteFile("/"+kfile, out); err != nil {
		return nothing
	}
	return func() { _ = fs.WriteFile("/"+kfile, data) }
}

// locator finds where the objects of one build came from.
type locator struct {
	fs    filesys.FileSystem
	dir   string // the built directory ("" for the root)
	kfile string
	docs  map[string][]docEntry // file → its documents
	seen  map[string]int        // file + "\x00" + kind → objects of it located so far
}

// docEntry is one document (or List item) of a resource file.
type docEntry struct {
	kind, name, namespace string
	line                  int
}

func newLocator(fs filesys.FileSystem, dir, kfile string) *locator {
	return &locator{fs: fs, dir: dir, kfile: kfile, docs: map[string][]docEntry{}, seen: map[string]int{}}
}

// repoPath turns a path of an origin (relative to the built directory) into
// a path relative to the repository root; ok is false when it leaves the
// repository or names no file given to kustomize.
func (l *locator) repoPath(p string) (string, bool) {
	if p == "" || path.IsAbs(p) {
		return "", false
	}
	f := path.Clean(path.Join(l.dir, p))
	if f == "." || f == ".." || strings.HasPrefix(f, "../") || !l.fs.Exists("/"+f) || l.fs.IsDir("/"+f) {
		return "", false
	}
	return f, true
}

// locate returns the file and line an object of the build came from (kind,
// name and namespace as built): for a resource, its file and the line of
// its document there; for a generated object, the kustomization holding
// the generator and the line of the generator's entry (0 if not found);
// else the built kustomization file, line 0.
func (l *locator) locate(or *resource.Origin, kind, name, namespace string) (string, int) {
	if or == nil || or.Repo != "" {
		return l.kfile, 0
	}
	if or.ConfiguredIn != "" {
		f, ok := l.repoPath(or.ConfiguredIn)
		if !ok {
			return l.kfile, 0
		}
		return f, generatorLine(readOriginal(l.fs, f), or.ConfiguredBy.Kind, name)
	}
	f, ok := l.repoPath(or.Path)
	if !ok {
		return l.kfile, 0
	}
	docs, ok := l.docs[f]
	if !ok {
		docs = documents(readOriginal(l.fs, f))
		l.docs[f] = docs
	}
	key := f + "\x00" + kind
	n := l.seen[key]
	l.seen[key] = n + 1
	return f, matchDocument(docs, kind, name, namespace, n)
}

// matchDocument picks the document an object came from among the documents
// of its file: the only one; else among those of its kind, the only one, or
// the one whose name is the longest part of the built name (namePrefix,
// nameSuffix), preferring the same name and then the same namespace; else
// the n-th of its kind (kustomize keeps a file's order). 0 if none fits.
func matchDocument(docs []docEntry, kind, name, namespace string, n int) int {
	if len(docs) == 1 {
		return docs[0].line
	}
	var cands []docEntry
	for _, d := range docs {
		if d.kind == kind {
			cands = append(cands, d)
		}
	}
	if len(cands) == 1 {
		return cands[0].line
	}
	best, bestScore := 0, -1
	for _, d := range cands {
		if d.name == "" || !strings.Contains(name, d.name) {
			continue
		}
		score := 4 * len(d.name)
		if d.name == name {
			score += 2
		}
		if d.namespace == namespace {
			score++
		}
		if score > bestScore {
			best, bestScore = d.line, score
		}
	}
	if bestScore >= 0 {
		return best
	}
	if n < len(cands) {
		return cands[n].line
	}
	return 0
}

// documents lists the documents of a resource file with their kind, name,
// namespace and line (a List's items each), without expanding aliases.
func documents(data []byte) (out []docEntry) {
	defer func() {
		if recover() != nil {
			out = nil // yaml.v3 is fuzzed upstream; a panic only costs the lines
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return out
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		root := doc.Content[0]
		kind := scalarAt(root, "kind")
		if items := nodeAt(root, "items"); items != nil && items.Kind == yaml.SequenceNode &&
			(kind == "List" || strings.HasSuffix(kind, "List")) {
			for _, it := range items.Content {
				if it.Kind == yaml.MappingNode {
					out = append(out, entryOf(it))
				}
			}
			continue
		}
		out = append(out, entryOf(root))
	}
}

func entryOf(n *yaml.Node) docEntry {
	md := nodeAt(n, "metadata")
	return docEntry{kind: scalarAt(n, "kind"), name: scalarAt(md, "name"), namespace: scalarAt(md, "namespace"), line: n.Line}
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

// generatorFields are the kustomization fields of the built-in generators,
// by the kind kustomize names in an origin's configuredBy.
var generatorFields = map[string]string{"ConfigMapGenerator": "configMapGenerator", "SecretGenerator": "secretGenerator"}

// generatorLine returns the line of the entry of a kustomization that
// generated an object named name (the generator's name is the longest part
// of it: prefixes, suffixes and the content hash are added), 0 if not found.
func generatorLine(kdata []byte, kind, name string) int {
	field, ok := generatorFields[kind]
	if !ok {
		return 0
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(kdata, &doc); err != nil || len(doc.Content) == 0 {
		return 0
	}
	list := nodeAt(doc.Content[0], field)
	if list == nil || list.Kind != yaml.SequenceNode {
		return 0
	}
	best, bestLen := 0, 0
	for _, e := range list.Content {
		if n := scalarAt(e, "name"); n != "" && strings.Contains(name, n) && len(n) > bestLen {
			best, bestLen = e.Line, len(n)
		}
	}
	return best
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
	warnings := k.CheckDeprecatedFields()
	if warnings == nil {
		return nil
	}
	k.FixKustomization()
	dir := dirOf(kfile)
	for _, p := range k.PatchesStrategicMerge {
		if exists(path.Join(dir, string(p))) {
			k.Patches = append(k.Patches, types.Patch{Path: string(p)})
		} else {
			k.Patches = append(k.Patches, types.Patch{Patch: string(p)})
		}
	}
	k.PatchesStrategicMerge = nil
	if err := k.FixKustomizationPreMarshalling(filesys.MakeFsInMemory()); err != nil {
		return nil // e.g. a label in both commonLabels and labels: let kustomize build as written
	}
	out, err := sigyaml.Marshal(&k)
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
