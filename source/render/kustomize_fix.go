package render

import (
	"crypto/sha256"
	"sync"

	"sigs.k8s.io/kustomize/api/types"
	sigyaml "sigs.k8s.io/yaml"
)

// marshalKustomization writes a kustomization gitaso built or rewrote.
// An empty resources list is kept: the YAML library drops it (omitempty),
// and kustomize refuses a kustomization that sets nothing else as
// "kustomization.yaml is empty", where the file as written ("resources:
// []") builds zero objects.
func marshalKustomization(k *types.Kustomization) ([]byte, error) {
	out, err := sigyaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	if len(k.Resources) == 0 {
		out = append(out, "resources: []\n"...)
	}
	return out, nil
}

// maxWarned bounds the kustomization files whose deprecation warnings a
// Renderer remembers having logged; past it, it starts again.
const maxWarned = 4096

// deprecationLog says each deprecation warning of a kustomization file
// once per content of the file: once per revision, however many Flux
// Kustomizations build it, and not again when a daemon renders the same
// revision (or a later one that did not change the file) again.
type deprecationLog struct {
	mu   sync.Mutex
	seen map[[sha256.Size]byte]bool // sha256(path, content)
}

// first reports whether the warnings of file with data have not been
// logged before, and remembers that they now are.
func (d *deprecationLog) first(file string, data []byte) bool {
	h := sha256.New()
	h.Write([]byte(file))
	h.Write([]byte{0})
	h.Write(data)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen[key] {
		return false
	}
	if d.seen == nil || len(d.seen) >= maxWarned {
		d.seen = map[[sha256.Size]byte]bool{}
	}
	d.seen[key] = true
	return true
}

// warnDeprecated logs the deprecation warnings of a kustomization file
// (fixDeprecated's), unless they were logged for this content before.
func (r *Renderer) warnDeprecated(file string, data []byte, warnings []string) {
	if len(warnings) == 0 || !r.deprecated.first(file, data) {
		return
	}
	for _, w := range warnings {
		r.logger.Warn("deprecated kustomization field", "file", file, "warning", w)
	}
}
