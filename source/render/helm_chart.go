package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/ignore"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/charts"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// helmRun is the state of rendering the HelmReleases of one Render: the
// repository's objects the releases name, and the charts loaded (each
// once, however many releases use it).
type helmRun struct {
	w     *fluxWalk
	caps  *chartutil.Capabilities
	index *objectIndex
	paths []string // every file of the repository, sorted
	// dependedOn are the releases another release's dependsOn names:
	// never ignored by memory (helm_ignore.go).
	dependedOn map[string]bool

	mu       sync.Mutex
	repo     map[string]*chartEntry // repository chart directory → chart
	fetched  map[string]*chartEntry // fetch request → chart
	archives map[string]*chartEntry // archive digest → loaded chart
}

// chartEntry is a chart loaded once: done closes when c (never mutated:
// each release renders a copy) or err is set.
type chartEntry struct {
	once    sync.Once
	c       *chart.Chart
	fetched *FetchedChart // charts from outside the repository
	err     error
	uses    []ChartUse // dependencies fetched from outside the repository
}

func newHelmRun(w *fluxWalk) *helmRun {
	run := &helmRun{w: w, index: newObjectIndex(), repo: map[string]*chartEntry{},
		fetched: map[string]*chartEntry{}, archives: map[string]*chartEntry{}}
	for _, c := range w.built {
		run.index.addCandidate(c)
	}
	for _, c := range w.raw {
		run.index.addCandidate(c)
	}
	run.paths = slices.Sorted(maps.Keys(w.byPath))
	run.caps, _ = w.r.capabilities() // checked by New
	return run
}

// charts is the number of charts loaded, for the log.
func (run *helmRun) charts() int {
	run.mu.Lock()
	defer run.mu.Unlock()
	return len(run.repo) + len(run.archives)
}

// objectIndex finds the repository's ConfigMaps, Secrets and Flux source
// objects by kind, namespace and name (the first one found wins; the
// parser reports duplicates).
type objectIndex struct {
	mu   sync.RWMutex
	objs map[string]manifest.Object
}

func newObjectIndex() *objectIndex { return &objectIndex{objs: map[string]manifest.Object{}} }

// indexedKinds are the kinds HelmReleases name.
var indexedKinds = []string{"ConfigMap", "Secret", "HelmRepository", "OCIRepository", "GitRepository", "HelmChart", "Bucket"}

func (x *objectIndex) addCandidate(c candidate) {
	if !slices.ContainsFunc(indexedKinds, func(k string) bool { return strings.Contains(c.text, k) }) {
		return
	}
	objs, err := source.ParseFile(c.file, []byte(c.text))
	if err != nil {
		return
	}
	for _, o := range objs {
		switch {
		case c.generated:
			if f, l, ok := originOf(c.text); ok && o.File == c.file {
				o.File, o.Line = f, l
			} else if o.File == c.file {
				o.Line = 0
			}
		case o.File == c.file:
			o.Line += c.line - 1
		}
		x.put(o)
	}
}

// add indexes the ConfigMaps and Secrets of rendered objects.
func (x *objectIndex) add(docs []string) {
	for _, d := range docs {
		if strings.Contains(d, "ConfigMap") || strings.Contains(d, "Secret") {
			x.addCandidate(candidate{file: "helm", generated: true, text: d})
		}
	}
}

func (x *objectIndex) put(o manifest.Object) {
	switch {
	case o.IsConfigMap(), o.IsSecret():
	case o.Group() == SourceGroup && slices.Contains(indexedKinds, o.Kind()):
	default:
		return
	}
	key := o.Kind() + "/" + o.Namespace() + "/" + o.Name()
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, dup := x.objs[key]; !dup {
		x.objs[key] = o
	}
}

func (x *objectIndex) get(kind, ns, name string) (manifest.Object, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	o, ok := x.objs[kind+"/"+ns+"/"+name]
	return o, ok
}

// resolved is the chart a release renders, a private copy.
type resolved struct {
	c      *chart.Chart
	uses   []ChartUse // charts from outside the repository
	field  string     // the HelmRelease field that named it
	inRepo bool
}

// chart resolves and loads the chart of a release: spec.chart.spec or
// spec.chartRef (OCIRepository or HelmChart).
func (run *helmRun) chart(ctx context.Context, h *helmRelease) (*resolved, error) {
	if ref := h.spec.ChartRef; ref != nil {
		ns := ref.Namespace
		if ns == "" {
			ns = h.obj.Namespace()
		}
		switch ref.Kind {
		case "OCIRepository":
			src, ok := run.index.get("OCIRepository", ns, ref.Name)
			if !ok {
				return nil, h.err("spec.chartRef.name", ErrHelmSource, "no OCIRepository %s/%s (%s) in the repository", ns, ref.Name, SourceGroup)
			}
			return run.fetch(ctx, h, "spec.chartRef", src, "", "", nil, false)
		case "HelmChart":
			hc, ok := run.index.get("HelmChart", ns, ref.Name)
			if !ok {
				return nil, h.err("spec.chartRef.name", ErrHelmSource, "no HelmChart %s/%s (%s) in the repository", ns, ref.Name, SourceGroup)
			}
			var cs chartSpec
			b, _ := sigyaml.Marshal(hc.Content["spec"])
			if err := sigyaml.Unmarshal(b, &cs); err != nil {
				return nil, h.err("spec.chartRef.name", ErrHelmChart, "HelmChart %s/%s (%s:%d): invalid spec: %v", ns, ref.Name, hc.File, hc.Line, err)
			}
			return run.chartSpec(ctx, h, "spec.chartRef", cs, ns)
		default:
			return nil, h.err("spec.chartRef.kind", ErrHelmSource, "%q: want OCIRepository or HelmChart", ref.Kind)
		}
	}
	return run.chartSpec(ctx, h, "spec.chart.spec", h.spec.Chart.Spec, h.obj.Namespace())
}

// chartSpec resolves a chart.spec (or a HelmChart's spec, whose namespace
// is ns).
func (run *helmRun) chartSpec(ctx context.Context, h *helmRelease, field string, cs chartSpec, ns string) (*resolved, error) {
	files := cs.ValuesFiles
	if cs.ValuesFile != "" && !slices.Contains(files, cs.ValuesFile) {
		files = append([]string{cs.ValuesFile}, files...)
	}
	srcNS := cs.SourceRef.Namespace
	if srcNS == "" {
		srcNS = ns
	}
	if cs.Chart == "" {
		return nil, h.err(field+".chart", ErrHelmChart, "required")
	}
	switch cs.SourceRef.Kind {
	case "GitRepository":
		src, known := run.index.get("GitRepository", srcNS, cs.SourceRef.Name)
		u := ""
		if known {
			spec, _ := src.Content["spec"].(map[string]any)
			s, _ := spec["url"].(string)
			u = normRepoURL(s)
		}
		if u != "" && len(run.w.homes) > 0 && !slices.Contains(run.w.homes, u) {
			// Another Git repository: the fetcher reads it.
			r, err := run.fetch(ctx, h, field, src, cs.Chart, cs.Version, files, cs.IgnoreMissingValuesFiles)
			return r, err
		}
		dir := cleanFluxPath(cs.Chart)
		e := run.repoChart(ctx, dir)
		if e.err != nil {
			return nil, h.err(field+".chart", ErrHelmChart, "%s", e.err)
		}
		c := cloneChart(e.c)
		if len(files) > 0 {
			vals, err := run.repoValuesFiles(files, cs.IgnoreMissingValuesFiles)
			if err != nil {
				return nil, h.err(field+".valuesFiles", ErrHelmValues, "%s", err)
			}
			c.Values = vals
		}
		uses := slices.Clone(e.uses)
		for i := range uses {
			uses[i].Release = h.id
		}
		return &resolved{c: c, field: field, inRepo: true, uses: uses}, nil
	case "HelmRepository":
		src, ok := run.index.get("HelmRepository", srcNS, cs.SourceRef.Name)
		if !ok {
			return nil, h.err(field+".sourceRef.name", ErrHelmSource, "no HelmRepository %s/%s (%s) in the repository", srcNS, cs.SourceRef.Name, SourceGroup)
		}
		return run.fetch(ctx, h, field, src, cs.Chart, cs.Version, files, cs.IgnoreMissingValuesFiles)
	case "Bucket":
		return nil, h.err(field+".sourceRef.kind", ErrHelmSource, "Bucket %s: gitaso does not read buckets; publish the chart to a Helm repository or OCI registry, or keep it in Git", cs.SourceRef.Name)
	default:
		return nil, h.err(field+".sourceRef.kind", ErrHelmSource, "%q: want HelmRepository, GitRepository or (not supported) Bucket", cs.SourceRef.Kind)
	}
}

// fetch resolves a chart from outside the repository with the fetcher,
// once per Render for each request.
func (run *helmRun) fetch(ctx context.Context, h *helmRelease, field string, src manifest.Object, chartName, version string, valuesFiles []string, ignoreMissing bool) (*resolved, error) {
	f := run.w.r.opts.Charts
	what := fmt.Sprintf("%s %s/%s", src.Kind(), src.Namespace(), src.Name())
	if f == nil {
		return nil, h.err(field, ErrHelmSource, "the chart is in %s (%s:%d), outside the repository, and gitaso has no chart fetcher (render.Options.Charts)", what, src.File, src.Line)
	}
	spec, _ := src.Content["spec"].(map[string]any)
	var secret map[string]string
	if ref, _ := spec["secretRef"].(map[string]any); ref != nil {
		name, _ := ref["name"].(string)
		so, ok := run.index.get("Secret", src.Namespace(), name)
		if !ok {
			return nil, h.err(field, ErrHelmSource, "%s (%s:%d): spec.secretRef names Secret %s/%s, which is not in the repository", what, src.File, src.Line, src.Namespace(), name)
		}
		data, err := manifest.SecretData(so)
		if err != nil {
			return nil, h.err(field, ErrHelmSource, "%s: Secret %s/%s: %v", what, src.Namespace(), name, err)
		}
		secret = data
	}
	req := ChartRequest{
		Source: ChartSource{Kind: src.Kind(), Namespace: src.Namespace(), Name: src.Name(), Spec: spec, File: src.File, Line: src.Line},
		Secret: secret, Chart: chartName, Version: version,
	}
	key := fmt.Sprintf("%s/%s/%s\x00%s\x00%s", src.Kind(), src.Namespace(), src.Name(), chartName, version)
	run.mu.Lock()
	e, ok := run.fetched[key]
	if !ok {
		e = &chartEntry{}
		run.fetched[key] = e
	}
	run.mu.Unlock()
	e.once.Do(func() {
		start := time.Now()
		fc, err := f.Fetch(ctx, req)
		if err != nil {
			e.err = err
			return
		}
		e.fetched = fc
		a := run.archive(fc)
		e.c, e.err = a.c, a.err
		run.w.r.logger.Debug("helm chart fetched", "source", what, "chart", fc.Name, "version", fc.Version,
			"digest", fc.Digest, "cached", fc.Cached, "duration", time.Since(start))
	})
	if e.err != nil {
		cause := ErrHelmChart
		if charts.Unavailable(e.err) {
			// The registry, not the commit: a source failure, tried
			// again at the next poll, not a refusal (source.ErrUnavailable).
			cause = unavailable{ErrHelmChart}
		}
		if strings.HasPrefix(e.err.Error(), what) {
			return nil, h.err(field, cause, "%v", e.err) // the fetcher named the source already
		}
		return nil, h.err(field, cause, "%s: %v", what, e.err)
	}
	c := cloneChart(e.c)
	if len(valuesFiles) > 0 {
		vals, err := chartValuesFiles(c, valuesFiles, ignoreMissing)
		if err != nil {
			return nil, h.err(field+".valuesFiles", ErrHelmValues, "%s", err)
		}
		c.Values = vals
	}
	fc := e.fetched
	name := fc.Name
	if name == "" {
		name = c.Name()
	}
	ver := fc.Version
	if ver == "" {
		ver = c.Metadata.Version
	}
	return &resolved{c: c, field: field, uses: []ChartUse{{Release: h.id, Chart: name, Version: ver, Digest: fc.Digest, URL: fc.URL}}}, nil
}

// archive loads a chart archive once per digest.
func (run *helmRun) archive(fc *FetchedChart) *chartEntry {
	key := fc.Digest
	if key == "" {
		key = "sha256:" + sha256Hex(fc.Archive)
	}
	run.mu.Lock()
	e, ok := run.archives[key]
	if !ok {
		e = &chartEntry{}
		run.archives[key] = e
	}
	run.mu.Unlock()
	e.once.Do(func() {
		e.c, e.err = loader.LoadArchive(bytes.NewReader(fc.Archive))
		if e.err == nil {
			e.err = checkDependencies(e.c)
		}
	})
	return e
}

// repoChart loads the chart in a directory of the repository, once per
// Render, resolving its file:// dependencies in the repository and the
// others with the fetcher, as source-controller builds a chart from Git.
func (run *helmRun) repoChart(ctx context.Context, dir string) *chartEntry {
	run.mu.Lock()
	e, ok := run.repo[dir]
	if !ok {
		e = &chartEntry{}
		run.repo[dir] = e
	}
	run.mu.Unlock()
	e.once.Do(func() {
		e.c, e.uses, e.err = run.loadRepoChart(ctx, dir, nil)
	})
	return e
}

// loadRepoChart loads the chart in dir; stack holds the charts whose
// file:// dependencies led here.
func (run *helmRun) loadRepoChart(ctx context.Context, dir string, stack []string) (*chart.Chart, []ChartUse, error) {
	if slices.Contains(stack, dir) {
		return nil, nil, fmt.Errorf("file:// dependencies form a cycle: %s → %s", strings.Join(stack, " → "), dir)
	}
	if len(stack) > 32 {
		return nil, nil, fmt.Errorf("file:// dependencies nest more than 32 deep")
	}
	chartFile := path.Join(dir, source.ChartFile)
	if _, ok := run.w.byPath[chartFile]; !ok {
		return nil, nil, fmt.Errorf("%q: no %s there in the repository (the chart path is relative to the repository root)", dir, source.ChartFile)
	}
	rules := ignore.Empty()
	if b, ok := run.w.byPath[path.Join(dir, ignore.HelmIgnore)]; ok {
		r, err := ignore.Parse(bytes.NewReader(b))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path.Join(dir, ignore.HelmIgnore), err)
		}
		rules = r
	}
	rules.AddDefaults()
	var files []*loader.BufferedFile
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	i, _ := slices.BinarySearch(run.paths, prefix)
	for ; i < len(run.paths) && strings.HasPrefix(run.paths[i], prefix); i++ {
		p := run.paths[i]
		rel := strings.TrimPrefix(p, prefix)
		if charts.HelmIgnored(rules, rel) {
			continue
		}
		files = append(files, &loader.BufferedFile{Name: rel, Data: run.w.byPath[p]})
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	var uses []ChartUse
	for _, dep := range c.Metadata.Dependencies {
		if hasDependency(c, dep.Name) {
			continue // vendored in charts/
		}
		var sub *chart.Chart
		repo := strings.TrimSpace(dep.Repository)
		switch {
		case strings.HasPrefix(repo, "file://"):
			p := path.Clean(path.Join(dir, strings.TrimPrefix(repo, "file://")))
			if path.IsAbs(strings.TrimPrefix(repo, "file://")) || p == ".." || strings.HasPrefix(p, "../") {
				return nil, nil, fmt.Errorf("%s: dependency %s: %q is outside the repository", chartFile, dep.Name, repo)
			}
			if p == "." {
				p = ""
			}
			s, u, err := run.loadRepoChart(ctx, p, append(stack, dir))
			if err != nil {
				return nil, nil, fmt.Errorf("%s: dependency %s (%s): %w", chartFile, dep.Name, repo, err)
			}
			if dep.Version != "" {
				if err := checkVersion(dep.Version, s.Metadata.Version); err != nil {
					return nil, nil, fmt.Errorf("%s: dependency %s (%s): %w", chartFile, dep.Name, repo, err)
				}
			}
			sub, uses = s, append(uses, u...)
		case strings.HasPrefix(repo, "https://"), strings.HasPrefix(repo, "http://"), strings.HasPrefix(repo, "oci://"):
			f := run.w.r.opts.Charts
			if f == nil {
				return nil, nil, fmt.Errorf("%s: dependency %s is in %s, outside the repository, and gitaso has no chart fetcher", chartFile, dep.Name, repo)
			}
			fc, err := f.FetchURL(ctx, repo, dep.Name, dep.Version, nil)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: dependency %s (%s): %w", chartFile, dep.Name, repo, err)
			}
			a := run.archive(fc)
			if a.err != nil {
				return nil, nil, fmt.Errorf("%s: dependency %s (%s): %w", chartFile, dep.Name, repo, a.err)
			}
			sub = cloneChart(a.c)
			uses = append(uses, ChartUse{Chart: fc.Name, Version: fc.Version, Digest: fc.Digest, URL: fc.URL})
		default:
			return nil, nil, fmt.Errorf("%s: dependency %s: repository %q: want file://, https:// or oci:// (repository aliases need a helm CLI's repositories.yaml)", chartFile, dep.Name, repo)
		}
		c.AddDependency(sub)
	}
	if err := checkDependencies(c); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	return c, uses, nil
}

// checkVersion checks a dependency's version against its constraint.
func checkVersion(constraint, version string) error {
	cs, err := semver.NewConstraint(constraint)
	if err != nil {
		return fmt.Errorf("version %q: %w", constraint, err)
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return fmt.Errorf("chart version %q: %w", version, err)
	}
	if !cs.Check(v) {
		return fmt.Errorf("chart version %s does not satisfy %q", version, constraint)
	}
	return nil
}

// hasDependency reports whether a chart holds a subchart of that name.
func hasDependency(c *chart.Chart, name string) bool {
	return slices.ContainsFunc(c.Dependencies(), func(d *chart.Chart) bool { return d.Name() == name })
}

// checkDependencies refuses a chart whose Chart.yaml lists a dependency
// it does not hold (helm install: "found in Chart.yaml, but missing in
// charts/ directory").
func checkDependencies(c *chart.Chart) error {
	var missing []string
	for _, d := range c.Metadata.Dependencies {
		if !hasDependency(c, d.Name) {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("found in Chart.yaml, but missing in charts/ directory: %s", strings.Join(missing, ", "))
	}
	for _, d := range c.Dependencies() {
		if err := checkDependencies(d); err != nil {
			return fmt.Errorf("%s: %w", d.Name(), err)
		}
	}
	return nil
}

// repoValuesFiles merges values files of the repository (paths relative to
// its root, as source-controller reads them from a GitRepository), later
// ones winning; they replace the chart's values.yaml.
func (run *helmRun) repoValuesFiles(files []string, ignoreMissing bool) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range files {
		p := cleanFluxPath(f)
		data, ok := run.w.byPath[p]
		if !ok {
			if ignoreMissing {
				continue
			}
			return nil, fmt.Errorf("%q: no such file in the repository (paths are relative to the repository root)", f)
		}
		v, err := chartutil.ReadValues(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = mergeMaps(out, v)
	}
	return out, nil
}

// chartValuesFiles merges values files of a packaged chart (paths relative
// to the chart), later ones winning; "values.yaml" is the chart's own.
func chartValuesFiles(c *chart.Chart, files []string, ignoreMissing bool) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range files {
		name := strings.TrimPrefix(path.Clean("/"+f), "/")
		if name == chartutil.ValuesfileName {
			out = mergeMaps(out, c.Values)
			continue
		}
		var data []byte
		for _, cf := range c.Files {
			if cf.Name == name {
				data = cf.Data
			}
		}
		if data == nil {
			if ignoreMissing {
				continue
			}
			return nil, fmt.Errorf("%q: no such file in chart %s", f, c.Name())
		}
		v, err := chartutil.ReadValues(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = mergeMaps(out, v)
	}
	return out, nil
}

// mergeMaps merges b into a copy of a: nested maps merge, anything else in
// b replaces (Flux's transform.MergeMaps).
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	maps.Copy(out, a)
	for k, v := range b {
		if vm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// cloneChart copies what rendering changes in a chart (values, the
// dependencies' enabled flags and list, import-values) so that one loaded
// chart serves every release; templates and files are shared, read-only.
func cloneChart(c *chart.Chart) *chart.Chart {
	n := *c
	if c.Metadata != nil {
		md := *c.Metadata
		md.Dependencies = make([]*chart.Dependency, len(c.Metadata.Dependencies))
		for i, d := range c.Metadata.Dependencies {
			dd := *d
			dd.Tags = slices.Clone(d.Tags)
			dd.ImportValues = slices.Clone(d.ImportValues)
			md.Dependencies[i] = &dd
		}
		n.Metadata = &md
	}
	n.Values = copyValues(c.Values)
	deps := make([]*chart.Chart, len(c.Dependencies()))
	for i, d := range c.Dependencies() {
		deps[i] = cloneChart(d)
	}
	n.SetDependencies(deps...)
	return &n
}

// copyValues deep-copies JSON-compatible values.
func copyValues(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyValues(t)
	case chartutil.Values:
		return copyValues(t)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = copyValue(x)
		}
		return out
	}
	return v
}

// unavailable marks an input error whose cause is a source that cannot be read now (source.ErrUnavailable); it
// reads as the error it wraps.
type unavailable struct{ error }

func (u unavailable) Unwrap() []error { return []error{u.error, source.ErrUnavailable} }
