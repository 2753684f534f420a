package render

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// Releases that render no ASO object.
//
// A platform repository also releases cert-manager, ingress controllers and
// ASO itself. gitaso applies ASO kinds only, so such a release is counted and
// left out (manifest.Unit.Ignored), with everything it renders, ConfigMaps
// and Secrets included. Two ways spare fetching and rendering it:
//
//   - explicitly: the HelmRelease carries gitaso.io/skip: "true", or its
//     namespace/name matches a pattern of Options.SkipReleases (gitaso
//     --skip-release, path.Match globs such as "cert-manager/*"): neither
//     fetched nor rendered;
//   - remembered (Options.ReleaseMemory, a file beside the chart cache): a
//     release of a chart from outside the repository that rendered no ASO
//     kind is remembered by the chart's digest and a hash of the release's
//     values, name, namespace, post-renderers and capabilities (a chart
//     that renders objects from its values, a "raw" chart, may render ASO
//     kinds with other values; a chart may render an object only when
//     .Capabilities has its API version), and by the release and its chart
//     spec. Next time the chart resolves to the same digest with the
//     same values, it is not rendered; and when its registry does not
//     answer but the release's chart spec and values are those remembered,
//     the release is ignored rather than failed (the chart it would fetch
//     is the one that rendered nothing, unless a new version was pushed
//     meanwhile, which the next answer of the registry shows).
//
// Decision: a release whose chart is in the repository is rendered every
// time (no fetch to spare, and its templates change with commits); so is a
// release another release names in spec.dependsOn: its ConfigMaps and
// Secrets may feed that release's valuesFrom (they reach it, though the
// release is counted as ignored and its objects are left out of the
// output), so memory never stands for its render, and a registry that does
// not answer fails it as before.

// AnnotationSkip on a HelmRelease ("true") makes gitaso neither fetch nor
// render it.
const AnnotationSkip = "gitaso.io/skip"

// releaseMemory is the file of releases that rendered no ASO object.
type releaseMemory struct {
	path string
	mu   sync.Mutex
	m    *memoryFile
}

type memoryFile struct {
	// Digests are "chartDigest valuesHash" keys of renders without an
	// ASO kind.
	Digests map[string]time.Time `json:"digests"`
	// Releases are the releases remembered, by namespace/name.
	Releases map[string]memoryRelease `json:"releases"`
}

type memoryRelease struct {
	Spec   string    `json:"spec"`   // hash of the chart spec (source, chart, version)
	Values string    `json:"values"` // hash of the values
	Chart  string    `json:"chart"`  // chart@version
	Digest string    `json:"digest"`
	At     time.Time `json:"at"`
}

func newReleaseMemory(file string) *releaseMemory {
	if file == "" {
		return nil
	}
	return &releaseMemory{path: file}
}

// load reads the file once; a missing or unreadable one is empty (it is a
// cache: at worst a release is rendered again).
func (rm *releaseMemory) load() *memoryFile {
	if rm.m != nil {
		return rm.m
	}
	rm.m = &memoryFile{Digests: map[string]time.Time{}, Releases: map[string]memoryRelease{}}
	if b, err := os.ReadFile(rm.path); err == nil {
		var f memoryFile
		if json.Unmarshal(b, &f) == nil && f.Digests != nil && f.Releases != nil {
			rm.m = &f
		}
	}
	return rm.m
}

// noASO reports whether the chart of digest rendered no ASO kind with these
// values.
func (rm *releaseMemory) noASO(digest, values string) bool {
	if rm == nil || digest == "" {
		return false
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	_, ok := rm.load().Digests[digest+" "+values]
	return ok
}

// sameRelease returns what is remembered of a release whose chart spec and
// values are these.
func (rm *releaseMemory) sameRelease(id, spec, values string) (memoryRelease, bool) {
	if rm == nil {
		return memoryRelease{}, false
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	r, ok := rm.load().Releases[id]
	return r, ok && r.Spec == spec && r.Values == values
}

// remember records a release that rendered no ASO kind and writes the file
// (atomically: a temporary file renamed).
func (rm *releaseMemory) remember(id string, r memoryRelease) error {
	if rm == nil || r.Digest == "" {
		return nil
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	m := rm.load()
	m.Digests[r.Digest+" "+r.Values] = r.At
	m.Releases[id] = r
	return rm.save()
}

// save writes the file atomically (a temporary file renamed); rm.mu held.
func (rm *releaseMemory) save() error {
	b, err := json.MarshalIndent(rm.m, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(rm.path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(rm.path), ".releases-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), rm.path)
}

// forget drops a release that renders ASO kinds now.
func (rm *releaseMemory) forget(id string) error {
	if rm == nil {
		return nil
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if _, ok := rm.load().Releases[id]; !ok {
		return nil
	}
	delete(rm.m.Releases, id)
	return rm.save()
}

// skipped says why a release is skipped explicitly, "" when it is not.
func (w *fluxWalk) skipped(h *helmRelease) string {
	if v := h.obj.Annotations()[AnnotationSkip]; strings.EqualFold(v, "true") {
		return "skipped: annotation " + AnnotationSkip + ": \"true\""
	}
	for _, p := range w.r.opts.SkipReleases {
		if ok, _ := path.Match(p, h.id); ok {
			return "skipped: --skip-release " + p
		}
	}
	return ""
}

// hashJSON is a short hash of a value's JSON.
func hashJSON(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// chartSpecHash names what a release asks for: its chart spec or chartRef
// (source, chart, version) and the specs of the source objects they name
// (a HelmRepository's URL, type, provider; a HelmChart and its source),
// not the values.
func (run *helmRun) chartSpecHash(h *helmRelease) string {
	var sources []any
	get := func(kind, ns, name string) (manifest.Object, bool) {
		o, ok := run.index.get(kind, ns, name)
		if ok {
			sources = append(sources, []any{kind, ns, name, o.Content["spec"]})
		}
		return o, ok
	}
	switch {
	case h.spec.ChartRef != nil:
		ref := h.spec.ChartRef
		ns := cmp.Or(ref.Namespace, h.obj.Namespace())
		if hc, ok := get(ref.Kind, ns, ref.Name); ok && ref.Kind == "HelmChart" {
			spec, _ := hc.Content["spec"].(map[string]any)
			src, _ := spec["sourceRef"].(map[string]any)
			kind, _ := src["kind"].(string)
			name, _ := src["name"].(string)
			srcNS, _ := src["namespace"].(string)
			get(kind, cmp.Or(srcNS, ns), name)
		}
	case h.spec.Chart != nil:
		ref := h.spec.Chart.Spec.SourceRef
		get(ref.Kind, cmp.Or(ref.Namespace, h.obj.Namespace()), ref.Name)
	}
	return hashJSON([]any{h.spec.Chart, h.spec.ChartRef, sources})
}

// rendersASO reports whether rendered documents hold an ASO kind.
func rendersASO(docs []string) bool {
	for _, d := range docs {
		for _, line := range strings.Split(d, "\n") {
			if v, ok := strings.CutPrefix(line, "apiVersion:"); ok {
				g, _, _ := strings.Cut(strings.Trim(strings.TrimSpace(v), `"'`), "/")
				if aso.IsASOGroup(g) {
					return true
				}
			}
		}
	}
	return false
}

// chartDigest is the digest of the chart a release rendered (its first use
// from outside the repository), "" for a chart of the repository.
func chartDigest(uses []ChartUse) (digest, name string) {
	if len(uses) == 0 {
		return "", ""
	}
	return uses[0].Digest, uses[0].Chart + "@" + uses[0].Version
}

// ignoredUnavailable reports whether a release whose chart could not be
// fetched because its registry did not answer is one remembered to render
// no ASO object with this chart spec and these values.
func (run *helmRun) ignoredUnavailable(h *helmRelease, err error, values string) (string, bool) {
	if !errors.Is(err, source.ErrUnavailable) {
		return "", false
	}
	m, ok := run.w.r.memory.sameRelease(h.id, run.chartSpecHash(h), values)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("renders no ASO object (chart %s, remembered %s; its registry does not answer)", m.Chart, m.At.UTC().Format(time.RFC3339)), true
}

// noteRendered remembers (or forgets) a release after it rendered.
func (run *helmRun) noteRendered(h *helmRelease, values string) {
	digest, name := chartDigest(h.uses)
	if rendersASO(h.docs) {
		if err := run.w.r.memory.forget(h.id); err != nil {
			run.w.r.logger.Warn("forget a release that renders ASO objects now", "release", h.id, "file", run.w.r.memory.path, "error", err)
		}
		return
	}
	h.ignored = "renders no ASO object"
	if name != "" {
		h.ignored += " (chart " + name + ")"
	}
	h.fed, h.docs, h.secrets = h.docs, nil, nil
	if run.dependedOn[h.id] {
		return // rendered every time: its objects may feed a valuesFrom
	}
	if err := run.w.r.memory.remember(h.id, memoryRelease{Spec: run.chartSpecHash(h), Values: values, Chart: name, Digest: digest, At: time.Now().UTC()}); err != nil {
		run.w.r.logger.Warn("remember a release that renders no ASO object", "release", h.id, "file", run.w.r.memory.path, "error", err)
	}
}

// ignoredNames lists the ignored releases for the log, once per render.
func ignoredNames(rs []*helmRelease) []string {
	var out []string
	for _, h := range rs {
		if h.ignored != "" {
			out = append(out, h.id+": "+h.ignored)
		}
	}
	slices.Sort(out)
	return out
}

// dependedOn are the releases (namespace/name) another release's
// spec.dependsOn names.
func dependedOn(releases []*helmRelease) map[string]bool {
	out := map[string]bool{}
	for _, h := range releases {
		for _, d := range h.spec.DependsOn {
			ns := d.Namespace
			if ns == "" {
				ns = h.obj.Namespace()
			}
			out[ns+"/"+d.Name] = true
		}
	}
	return out
}

// inputsHash is the hash memory keys a release's render by besides its
// chart: the values, and what else templates read that could make them
// render an ASO kind: the release's name and namespace, its
// post-renderers, and .Capabilities (a chart may render an object only
// when its API version is there, --helm-api-versions).
func (run *helmRun) inputsHash(h *helmRelease, vals map[string]any) string {
	return hashJSON([]any{vals, h.releaseName(), h.releaseNamespace(), h.spec.PostRenderers,
		run.caps.KubeVersion.Version, run.w.r.opts.HelmAPIVersions})
}
