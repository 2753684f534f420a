package render

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/internal/diag"
)

// patchTarget finds the kind and name of the patch in kustomize's error for a
// patch that matches no object ("no resource matches strategic merge patch
// "HelmRelease.v2.helm.toolkit.fluxcd.io/infra-old.[noNs]"", "failed to find
// unique target for patch ...").
var patchTarget = regexp.MustCompile(`(?:no resource matches strategic merge patch|failed to find unique target for patch) "?([A-Za-z0-9]+)\.[^/\s"]*/([^\s"/]+?)\.(?:\[noNs\]|[a-z0-9-]+)`)

// patchLine blames a patch that matches nothing on the entry of the
// kustomization that lists it (kustomize names only the patch's target, and
// after a rename the owner of the repository looks for the patch): the
// kustomization file and the line of its patches or patchesStrategicMerge
// entry whose patch (a file or inline) is of that kind and name. "", 0 when
// the error is not such a patch's or no entry is found.
func (w *kustomizations) patchLine(fs filesys.FileSystem, msg string) (string, int) {
	m := patchTarget.FindStringSubmatch(msg)
	if m == nil {
		return "", 0
	}
	kind, name := m[1], m[2]
	for _, kf := range w.kfiles {
		var doc yaml.Node
		if yaml.Unmarshal(readOriginal(fs, kf), &doc) != nil || len(doc.Content) == 0 {
			continue
		}
		dir := path.Dir(kf)
		for _, field := range []string{"patches", "patchesStrategicMerge"} {
			list := nodeAt(doc.Content[0], field)
			if list == nil || list.Kind != yaml.SequenceNode {
				continue
			}
			for _, item := range list.Content {
				if patchIs(fs, dir, item, kind, name) {
					return kf, item.Line
				}
			}
		}
	}
	return "", 0
}

// patchIs says whether an entry of patches or patchesStrategicMerge is a
// patch of an object of kind and name: its text (inline, or the file it
// names relative to dir) has a document of that kind and metadata.name.
func patchIs(fs filesys.FileSystem, dir string, item *yaml.Node, kind, name string) bool {
	var text string
	switch item.Kind {
	case yaml.ScalarNode: // patchesStrategicMerge: a file or an inline patch
		text = item.Value
	case yaml.MappingNode: // patches: path or patch
		text = scalarAt(item, "patch")
		if p := scalarAt(item, "path"); p != "" {
			text = p
		}
	}
	if text == "" {
		return false
	}
	if !strings.ContainsRune(text, '\n') {
		b, err := fs.ReadFile("/" + path.Clean(path.Join(dir, strings.TrimSpace(text))))
		if err != nil {
			return false
		}
		text = string(b)
	}
	return patchTextIs(text, kind, name)
}

// specPatchErr blames a patch of a Flux Kustomization's own spec (patches,
// patchesStrategicMerge) that matches no object on that field of the
// Kustomization (gitaso writes those patches into the kustomization it
// builds, where no line of the repository is). nil when derr is not such a
// patch's error or the patch is the kustomization files' (patchLine found it).
func (k *fluxKustomization) specPatchErr(derr *diag.Error) *diag.Error {
	if derr.Line > 0 {
		return nil
	}
	m := patchTarget.FindStringSubmatch(derr.Error())
	if m == nil {
		return nil
	}
	for i, p := range k.spec.Patches {
		if p.Path == "" && patchTextIs(p.Patch, m[1], m[2]) {
			return k.err(fmt.Sprintf("spec.patches[%d]", i), derr.Err, "")
		}
	}
	for i, p := range k.spec.PatchesSM {
		if b, err := sigyaml.Marshal(p); err == nil && patchTextIs(string(b), m[1], m[2]) {
			return k.err(fmt.Sprintf("spec.patchesStrategicMerge[%d]", i), derr.Err, "")
		}
	}
	return nil
}

// patchTextIs says whether a patch's text has a document of kind and
// metadata.name.
func patchTextIs(text, kind, name string) bool {
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var obj struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
		}
		if err := dec.Decode(&obj); err != nil {
			return false
		}
		if obj.Kind == kind && obj.Metadata.Name == name {
			return true
		}
	}
}
