package render

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/api/krusty"
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
	yaml string
}

// kustomizeBuild builds the kustomization in dir from the in-memory file
// system and returns its objects in kustomize's output order (the order of
// the kustomization's inputs).
func kustomizeBuild(fs filesys.FileSystem, dir, kfile string) ([]builtObject, *diag.Error) {
	k := krusty.MakeKustomizer(&krusty.Options{
		Reorder:          krusty.ReorderOptionUnspecified, // kustomize build's order; sortOptions honoured
		LoadRestrictions: types.LoadRestrictionsNone,      // the file system holds the repository's files only
		PluginConfig:     types.DisabledPluginConfig(),
	})
	m, err := k.Run(fs, "/"+dir)
	if err != nil {
		var hint string
		if s := err.Error(); strings.Contains(s, "no such file") || strings.Contains(s, "not exist") || strings.Contains(s, "doesn't exist") {
			hint = " (gitaso gives kustomize only the *.yaml/*.yml files below the source path)"
		}
		return nil, &diag.Error{File: kfile, Err: fmt.Errorf("%w: %w%s", ErrKustomizeBuild, err, hint)}
	}
	res := m.Resources()
	out := make([]builtObject, 0, len(res))
	for _, r := range res {
		y, err := r.AsYAML()
		if err != nil {
			return nil, &diag.Error{File: kfile, Msg: "serialise kustomize output", Err: err}
		}
		ns := r.GetNamespace()
		if ns == "" {
			ns = source.DefaultNamespace
		}
		out = append(out, builtObject{id: ns + "/" + r.GetKind() + "/" + r.GetName(), yaml: string(y)})
	}
	return out, nil
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
	if err := fs.WriteFile("/"+kfile, out); err != nil {
		return nil
	}
	msgs := make([]string, 0, len(*warnings))
	for _, w := range *warnings {
		msgs = append(msgs, strings.TrimPrefix(w, "# Warning: "))
	}
	return msgs
}
