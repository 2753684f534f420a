package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// FluxGroup is the API group of Flux's Kustomization objects.
const FluxGroup = "kustomize.toolkit.fluxcd.io"

// AnnotationFluxKustomization is set on every object rendered from a Flux
// Kustomization to "namespace/name" of that Kustomization, so that plans
// and errors can say where a resource came from.
const AnnotationFluxKustomization = "gitaso.io/flux-kustomization"

// fluxPruneAnnotation set to "disabled" on an object keeps Flux from
// deleting it when it leaves the repository.
const fluxPruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"

// ErrFluxCycle is returned (wrapped in a *diag.Error) when Flux
// Kustomizations reach one another in a cycle.
var ErrFluxCycle = errors.New("flux Kustomizations form a cycle")

// ErrFluxSource is returned (wrapped in a *diag.Error) when a Flux
// Kustomization's spec.sourceRef is not this Git repository.
var ErrFluxSource = errors.New("unsupported Flux source")

// msgNoPath begins the error of a Kustomization whose spec.path is not in
// its source: kustomize-controller's "kustomization path not found", whose
// Ready reason is ArtifactFailed (pathNotFound).
const msgNoPath = "no such directory with *.yaml files in the repository"

// fluxVersions are the Kustomization versions read (v1beta2 is still common).
var fluxVersions = []string{FluxGroup + "/v1", FluxGroup + "/v1beta2"}

// fluxSpec is the part of a Kustomization's spec gitaso reads.
type fluxSpec struct {
	Path      string `json:"path"`
	SourceRef struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"sourceRef"`
	TargetNamespace string         `json:"targetNamespace"`
	NamePrefix      string         `json:"namePrefix"`
	NameSuffix      string         `json:"nameSuffix"`
	Components      []string       `json:"components"`
	Images          []types.Image  `json:"images"`
	Patches         []types.Patch  `json:"patches"`
	PatchesSM       []any          `json:"patchesStrategicMerge"` // v1beta2
	PatchesJSON     []fluxJSON6902 `json:"patchesJson6902"`       // v1beta2
	CommonMetadata  *struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"commonMetadata"`
	Suspend       bool               `json:"suspend"`
	Prune         *bool              `json:"prune"`
	Interval      string             `json:"interval"`
	RetryInterval string             `json:"retryInterval"`
	Timeout       string             `json:"timeout"`
	Wait          bool               `json:"wait"`
	HealthChecks  []manifest.UnitRef `json:"healthChecks"`
	DependsOn     []struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"dependsOn"`
	PostBuild *struct {
		Substitute     map[string]string `json:"substitute"`
		SubstituteFrom []struct {
			Kind     string `json:"kind"`
			Name     string `json:"name"`
			Optional bool   `json:"optional"`
		} `json:"substituteFrom"`
	} `json:"postBuild"`
}

type fluxJSON6902 struct {
	Patch  []any          `json:"patch"`
	Target types.Selector `json:"target"`
}

// fluxKustomization is one Kustomization object found in rendered output.
type fluxKustomization struct {
	obj  manifest.Object
	id   string // namespace/name
	spec fluxSpec
	// invalid are the errors of an apiVersion or spec gitaso cannot read.
	invalid                          diag.List
	interval, timeout, retryInterval time.Duration
}

func (k *fluxKustomization) err(field string, cause error, format string, args ...any) *diag.Error {
	return &diag.Error{File: k.obj.File, Line: k.obj.Line, Object: k.obj.ID(), Field: field, Err: cause, Msg: fmt.Sprintf(format, args...)}
}

func (k *fluxKustomization) where() string {
	if k.obj.Line > 0 {
		return fmt.Sprintf("%s (%s:%d)", k.id, k.obj.File, k.obj.Line)
	}
	return fmt.Sprintf("%s (%s)", k.id, k.obj.File)
}

// sourceRefID is "namespace/name" of the spec.sourceRef (the
// Kustomization's namespace by default).
func (k *fluxKustomization) sourceRefID() string {
	ns := k.spec.SourceRef.Namespace
	if ns == "" {
		ns = k.obj.Namespace()
	}
	return ns + "/" + k.spec.SourceRef.Name
}

// gitRepositories finds the Flux GitRepository objects among documents:
// namespace/name → normalised spec.url.
func gitRepositories(docs []candidate) map[string]string {
	out := map[string]string{}
	for _, d := range docs {
		if !strings.Contains(d.text, "GitRepository") || !strings.Contains(d.text, "source.toolkit.fluxcd.io") {
			continue
		}
		objs, err := source.ParseFile(d.file, []byte(d.text))
		if err != nil {
			continue
		}
		for _, o := range objs {
			if o.Group() != "source.toolkit.fluxcd.io" || o.Kind() != "GitRepository" {
				continue
			}
			spec, _ := o.Content["spec"].(map[string]any)
			if u, _ := spec["url"].(string); u != "" {
				if _, seen := out[o.Namespace()+"/"+o.Name()]; !seen {
					out[o.Namespace()+"/"+o.Name()] = normRepoURL(u)
				}
			}
		}
	}
	return out
}

// normRepoURL reduces a Git URL to host/path in lower case, so that the
// https, ssh and scp-like forms of one repository compare equal.
func normRepoURL(u string) string {
	u = strings.TrimSpace(u)
	if u == "" {
		return ""
	}
	if strings.HasPrefix(u, "file://") || strings.HasPrefix(u, "/") || strings.HasPrefix(u, ".") {
		return localRepoKey(u) // localrepo.go
	}
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	} else if at, colon := strings.Index(u, "@"), strings.Index(u, ":"); at >= 0 && colon > at {
		u = u[:colon] + "/" + u[colon+1:] // git@host:org/repo
	}
	if i := strings.LastIndex(u, "@"); i >= 0 && i < strings.Index(u+"/", "/") {
		u = u[i+1:]
	}
	host, rest, _ := strings.Cut(u, "/")
	host, _, _ = strings.Cut(host, ":") // port
	rest = strings.TrimSuffix(strings.TrimSuffix(rest, "/"), ".git")
	return strings.ToLower(host + "/" + rest)
}

// isFluxKustomization reports whether o is a Flux Kustomization object.
func isFluxKustomization(o manifest.Object) bool {
	return o.Group() == FluxGroup && o.Kind() == "Kustomization"
}

// fluxHint logs, when Flux is off, that the files hold Flux Kustomization
// objects that gitaso does not follow (once per Renderer: a daemon renders
// every poll).
func (r *Renderer) fluxHint(files []source.File) {
	if r.hinted.Load() {
		return
	}
	for _, f := range files {
		if bytes.Contains(f.Data, []byte(FluxGroup)) && bytes.Contains(f.Data, []byte("Kustomization")) || bytes.Contains(f.Data, []byte(HelmGroup)) {
			if !r.hinted.Swap(true) {
				r.logger.Info("the files hold Flux Kustomization or HelmRelease objects: they are ignored; --flux follows them as Flux's kustomize- and helm-controller do", "file", f.Path)
			}
			return
		}
	}
}

// fluxWalk holds the state of one Flux render.
type fluxWalk struct {
	exported ExportedData    // the exports substituteFrom may read (Options.Exported, reported)
	stores   storeLookup     // the App Configuration stores substituteFrom may read (Options.AppConfig, reported)
	pass     *pass           // the render this walk is part of: its budget and external sources
	mounted  map[string]bool // other repositories mounted (GitRepository namespace/name)
	r        *Renderer
	lim      source.Limits
	byPath   map[string][]byte // decrypted files
	t        *tree
	entry    string
	raw      []candidate // documents of every file, for substituteFrom
	built    []candidate // rendered documents so far, for substituteFrom
	done     map[string]bool
	bad      map[string]*diag.Error // files that could not be decrypted (SOPS)
	charts   map[string]bool        // Helm chart directories (their files are no manifests)
	repos    map[string]string      // GitRepository namespace/name → normalised URL
	homes    []string               // this repository's normalised URLs (--repo, flux-system's GitRepository)
	stack    []*fluxKustomization
	// kunits are the Kustomizations found, by ID; order in the order
	// visited (a parent before its children).
	kunits map[string]*kunit
	order  []*kunit
	out    map[string][]string // output file → documents
	files  []string            // output files, in order
	// secrets are the values from Secrets substituted into an output file.
	secrets map[string][]manifest.SecretValue
	count   int
}

// pendingOut is where loadVars lists the pending sources of one
// Kustomization: nil when nobody would hear of them.
func (w *fluxWalk) pendingOut(p *[]Ref) *[]Ref {
	if w.pass.sources == nil {
		return nil
	}
	return p
}

// report records e among the render's external sources (when they are
// collected).
func (w *fluxWalk) report(e manifest.External) { w.pass.sources.add(e) }

// renderFlux renders the entry path as Render does without Flux, then
// follows every Flux Kustomization found in its output, recursively, the
// way Flux's kustomize-controller reconciles them. How Flux's behaviour is
// translated:
//
//   - Entry: the files below Options.FluxPath are rendered as without Flux
//     (kustomize builds, the global Vars/SubstituteFrom). Every
//     kustomize.toolkit.fluxcd.io/v1 or v1beta2 Kustomization among the
//     output is followed. One whose spec.path is the entry path itself (the
//     flux-system Kustomization that Flux's bootstrap writes) is the entry:
//     not rendered again.
//   - Source: spec.sourceRef must be a GitRepository, taken to be this
//     repository whatever its name; OCIRepository, Bucket and other kinds
//     are refused (ErrFluxSource), naming the object and the field.
//   - Build: spec.path relative to the repository root (cleaned, never
//     leaving it). A directory without a kustomization file gets the one
//     Flux generates (every *.yaml/*.yml below it; a sub-directory holding
//     a kustomization file as a whole). Then, as Flux's generator does, the
//     spec's targetNamespace (kustomization namespace), namePrefix,
//     nameSuffix, patches (strategic merge or JSON 6902, with target),
//     v1beta2 patchesStrategicMerge/patchesJson6902 and components (paths
//     relative to spec.path) are added to it in memory, and kustomize builds
//     it with the same checks as the entry's builds (no remote bases, limits).
//     spec.commonMetadata's labels and annotations are then set on every
//     object, overriding. spec.images become the kustomization's images.
//   - postBuild: only this Kustomization's output is substituted, only when
//     spec.postBuild is set; variables from substituteFrom (ConfigMaps and
//     Secrets of the Kustomization's namespace found anywhere in the
//     repository or in rendered output, later ones winning, optional ones
//     may be missing), then substitute (inline, winning); Options.Strict is
//     Flux's StrictPostBuildSubstitutions feature gate; objects with the
//     kustomize.toolkit.fluxcd.io/substitute: disabled annotation or label
//     are left alone. The global Vars do not apply here.
//   - Recursion: Kustomizations in a Kustomization's output are followed
//     in turn (their spec after the parent's substitution); a Kustomization
//     reached again while it is being rendered is a cycle (ErrFluxCycle,
//     naming the chain: that Kustomization fails); one reached twice
//     otherwise is rendered once.
//   - Units: each Kustomization renders and fails alone (flux_units.go,
//     and the package documentation's Units): one that cannot be built
//     is a unit with Reason BuildFailed (ArtifactFailed for its sourceRef)
//     and Errors, its objects and its children left out; the others render
//     as before. Errors of the entry path, limits and the deadline refuse
//     the revision.
//   - suspend: true: Flux stops applying but deletes nothing, so the
//     objects are rendered (never dropped: a dropped object would be
//     planned as a deletion) and ASO objects get
//     serviceoperator.azure.com/reconcile-policy: skip unless they set a
//     policy. prune: false: Flux leaves removed objects in the cluster, so
//     ASO objects get detach-on-delete unless they set a policy (removing
//     them from Git later forgets them instead of deleting them in Azure).
//     suspend wins over prune. An object annotated
//     kustomize.toolkit.fluxcd.io/prune: disabled is detach-on-delete too.
//     Neither is inherited by child Kustomizations (Flux reconciles each
//     on its own). kustomize.toolkit.fluxcd.io/reconcile: disabled (Flux
//     creates the object but never updates it) on a Kustomization is read
//     as suspend; on other objects it has no ASO policy to map to and is
//     not read.
//   - HelmReleases in the output are rendered with Helm (renderHelm in
//     helm.go) and replaced by the chart's objects; files of chart
//     directories (a directory holding Chart.yaml) are never manifests.
//   - dependsOn: Kustomizations found together render after those they
//     depend on (so a substituteFrom finds a ConfigMap a dependency
//     generates); a Kustomization whose dependsOn names one that failed,
//     waits, is unknown or does not exist (Flux would wait for it forever)
//     waits: Reason DependencyNotReady, its objects and children left out.
//     Apply order otherwise follows ASO owners and references (and the
//     reconciler's phases). Every rendered object is annotated
//     gitaso.io/flux-kustomization: namespace/name (manifest.UnitOf).
//   - Objects keep the file and line kustomize's origin gives (the
//     resource's own file) when known, else the Kustomization's file.
//     Kustomization and GitRepository objects stay ignored kinds.
func (r *Renderer) renderFlux(ctx context.Context, p *pass, files []source.File) ([]source.File, []manifest.Unit, error) {
	start := time.Now()
	entry := strings.Trim(path.Clean("/"+strings.ReplaceAll(r.opts.FluxPath, "\\", "/")), "/")
	var entryFiles []source.File
	for _, f := range files {
		if within(f.Path, entry) {
			entryFiles = append(entryFiles, f)
		}
	}
	t := newTree(files)
	if !t.dirs[entry] {
		return nil, nil, &source.PathNotFoundError{Path: entry}
	}
	out, err := r.render(ctx, p, entryFiles)
	if err != nil {
		return nil, nil, err
	}
	lim := r.opts.Limits.WithDefaults()
	dec, _, decErrs := r.decrypt(ctx, files, lim)
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	w := &fluxWalk{exported: r.exportedFor(p.sources), stores: r.storesFor(ctx, p.sources), pass: p, r: r, lim: lim, byPath: map[string][]byte{}, t: t, entry: entry,
		done: map[string]bool{}, out: map[string][]string{}, kunits: map[string]*kunit{}}
	bad := map[string]*diag.Error{}
	for _, e := range decErrs {
		bad[e.File] = e
	}
	w.bad = bad
	w.charts = chartDirs(files)
	for _, f := range dec {
		w.byPath[f.Path] = f.Data
		if bad[f.Path] != nil || slices.Contains(kustomizationNames, path.Base(f.Path)) || inChart(w.charts, f.Path) {
			continue
		}
		for _, d := range splitDocuments(f.Data) {
			w.raw = append(w.raw, candidate{file: f.Path, line: d.line, text: d.text})
		}
	}
	var roots []*fluxKustomization
	entryObjects := 0
	for _, f := range out {
		for _, d := range splitDocuments(f.Data) {
			line := d.line
			if f.Generated {
				line = 0
			}
			if hasContent(d.text) {
				entryObjects++
			}
			w.built = append(w.built, candidate{file: f.Path, line: line, generated: f.Generated, text: d.text})
		}
		roots = append(roots, findKustomizations(f.Path, f.Generated, f.Data)...)
	}
	w.repos = gitRepositories(append(slices.Clone(w.built), w.raw...))
	if u := normRepoURL(r.opts.RepositoryURL); u != "" {
		w.homes = append(w.homes, u)
		if strings.HasPrefix(u, "local:") {
			// A local clone (--repo /srv/git/fleet) of a bootstrapped
			// repository: Flux's own GitRepository flux-system/flux-system
			// names the repository it was installed from, which the clone is.
			if fs, ok := w.repos["flux-system/flux-system"]; ok {
				w.homes = append(w.homes, fs)
			}
		}
	}
	for _, k := range roots {
		if len(k.invalid) == 0 && cleanFluxPath(k.spec.Path) == entry && !w.done[k.id] {
			// The Kustomization that reconciles the entry path itself (Flux's
			// own flux-system Kustomization): its objects are the entry's,
			// and its GitRepository is this repository. It is a unit that
			// rendered (an error of the entry refuses the revision).
			w.done[k.id] = true
			w.addUnit(&kunit{k: k, entry: true, objects: entryObjects})
			r.logger.Debug("flux Kustomization reconciles the entry path itself; not rendered again", "kustomization", k.id)
			if u, ok := w.repos[k.sourceRefID()]; ok {
				w.homes = append(w.homes, u)
			}
		}
	}
	for _, k := range byDependsOn(roots) {
		w.visit(ctx, k, nil)
		if err := ctx.Err(); err != nil {
			if es := w.unitErrors(); len(es) > 0 && errors.Is(context.Cause(ctx), errRenderTimeout) {
				return nil, nil, es // a build abandoned at the deadline names its Kustomization
			}
			return nil, nil, err
		}
	}
	if es := w.revisionErrors(); len(es) > 0 {
		return nil, nil, es // a limit refuses the revision, whichever unit passed it
	}
	units, ready := w.settle()
	for _, ku := range w.order {
		if !ready[ku.k.id] || ku.entry {
			continue
		}
		file := ku.k.obj.File
		if _, ok := w.out[file]; !ok {
			w.files = append(w.files, file)
		}
		w.count += len(ku.docs)
		for _, d := range ku.docs {
			w.out[file] = append(w.out[file], d.text)
			if len(d.secrets) > 0 {
				if w.secrets == nil {
					w.secrets = map[string][]manifest.SecretValue{}
				}
				w.secrets[file] = appendSecrets(w.secrets[file], d.secrets...)
			}
		}
	}
	for _, p := range w.files {
		data := []byte(strings.Join(w.out[p], "---\n"))
		merged := false
		for i := range out {
			if out[i].Path == p && out[i].Generated {
				out[i].Data = append(append(bytes.Clone(out[i].Data), "---\n"...), data...)
				out[i].Secrets = appendSecrets(slices.Clone(out[i].Secrets), w.secrets[p]...)
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, source.File{Path: p, Data: data, Generated: true, Secrets: w.secrets[p]})
		}
	}
	r.logger.Debug("rendered Flux Kustomizations", "entry", entry, "kustomizations", len(w.done), "failed", failedCount(units),
		"objects", w.count, "duration", time.Since(start))
	out, hunits, errs := w.renderHelm(ctx, out) // HelmReleases: helm.go
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return out, append(units, hunits...), nil
}

// cleanFluxPath cleans a spec.path as Flux does (relative to the source
// root, never leaving it); "" is the root.
func cleanFluxPath(p string) string {
	return strings.Trim(path.Clean("/"+strings.ReplaceAll(p, "\\", "/")), "/")
}

// findKustomizations parses rendered text and returns its Flux
// Kustomization objects, their specs decoded. One whose apiVersion or spec
// gitaso cannot read is returned with its errors (invalid): a unit that
// fails.
func findKustomizations(file string, generated bool, data []byte) []*fluxKustomization {
	if !bytes.Contains(data, []byte(FluxGroup)) {
		return nil
	}
	var objs []manifest.Object
	for _, d := range splitDocuments(data) {
		if !strings.Contains(d.text, FluxGroup) {
			continue
		}
		parsed, err := source.ParseFile(file, []byte(d.text))
		if err != nil {
			continue // the parser reports it with the snapshot
		}
		for i := range parsed {
			switch f, l, ok := originOf(d.text); {
			case parsed[i].File != file: // the parser read the origin comment
			case ok:
				parsed[i].File, parsed[i].Line = f, l
			case generated:
				parsed[i].Line = 0 // a line of generated text
			default:
				parsed[i].Line += d.line - 1
			}
		}
		objs = append(objs, parsed...)
	}
	var out []*fluxKustomization
	for _, o := range objs {
		if !isFluxKustomization(o) {
			continue
		}
		k := &fluxKustomization{obj: o, id: o.Namespace() + "/" + o.Name()}
		out = append(out, k)
		if !slices.Contains(fluxVersions, o.APIVersion()) {
			k.invalid = append(k.invalid, k.err("apiVersion", nil, "%s is not supported (gitaso reads %s)", o.APIVersion(), strings.Join(fluxVersions, " and ")))
			continue
		}
		b, _ := json.Marshal(o.Content["spec"])
		if err := json.Unmarshal(b, &k.spec); err != nil {
			field := "spec"
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				field = "spec." + te.Field
			}
			k.invalid = append(k.invalid, k.err(field, nil, "invalid: %v", err))
			continue
		}
		k.invalid = append(k.invalid, k.durations()...)
	}
	return out
}

// byDependsOn orders Kustomizations found together so that one comes after
// those of them its spec.dependsOn names (otherwise in the order found), as
// Flux applies them: a ConfigMap one of them renders is then known to the
// substituteFrom of those that depend on it. A dependsOn cycle keeps the
// order found.
func byDependsOn(ks []*fluxKustomization) []*fluxKustomization {
	byID := make(map[string]*fluxKustomization, len(ks))
	for _, k := range ks {
		if _, dup := byID[k.id]; !dup {
			byID[k.id] = k
		}
	}
	out := make([]*fluxKustomization, 0, len(ks))
	state := map[*fluxKustomization]int{} // 1 visiting, 2 placed
	var place func(k *fluxKustomization)
	place = func(k *fluxKustomization) {
		if state[k] != 0 {
			return
		}
		state[k] = 1
		for _, d := range k.spec.DependsOn {
			ns := d.Namespace
			if ns == "" {
				ns = k.obj.Namespace()
			}
			if dep, ok := byID[ns+"/"+d.Name]; ok && dep != k {
				place(dep)
			}
		}
		state[k] = 2
		out = append(out, k)
	}
	for _, k := range ks {
		place(k)
	}
	return out
}

// visit renders one Kustomization and, recursively, the Kustomizations its
// output holds. A Kustomization that cannot be rendered is a failed unit
// (kunit.errs); its output, and so its child Kustomizations, is unknown.
func (w *fluxWalk) visit(ctx context.Context, k *fluxKustomization, parent *kunit) {
	if i := slices.IndexFunc(w.stack, func(s *fluxKustomization) bool { return s.id == k.id }); i >= 0 {
		var chain []string
		for _, s := range w.stack[i:] {
			chain = append(chain, s.where())
		}
		chain = append(chain, k.id)
		// The Kustomization that declares itself again fails: its output
		// (and so the chain below it) is unknown.
		w.kunits[k.id].errs = append(w.kunits[k.id].errs, k.err("spec.path", fmt.Errorf("%w: %s", ErrFluxCycle, strings.Join(chain, " → ")), ""))
		return
	}
	if w.done[k.id] || ctx.Err() != nil {
		return
	}
	w.done[k.id] = true
	ku := &kunit{k: k, parent: parent}
	w.addUnit(ku)
	if len(k.invalid) > 0 {
		ku.errs = k.invalid
		return
	}
	w.stack = append(w.stack, k)
	defer func() { w.stack = w.stack[:len(w.stack)-1] }()
	docs, es := w.build(ctx, k)
	if len(es) > 0 {
		ku.errs = es
		return
	}
	ku.docs = docs
	file := k.obj.File
	var children []*fluxKustomization
	for _, d := range docs {
		w.built = append(w.built, candidate{file: file, generated: true, text: d.text})
		ks := findKustomizations(file, true, []byte(d.text))
		for _, c := range ks {
			c.obj.File, c.obj.Line = d.file, d.line
			for _, e := range c.invalid {
				e.File, e.Line = d.file, d.line
			}
		}
		children = append(children, ks...)
	}
	for _, c := range byDependsOn(children) {
		w.visit(ctx, c, ku)
	}
}

// fluxDoc is one object a Kustomization rendered: its YAML (an origin
// comment first when kustomize knew it) and where it came from.
type fluxDoc struct {
	file string
	line int
	text string
	// secrets are the values from Secrets substituted into it.
	secrets []manifest.SecretValue
}

// build renders one Kustomization as kustomize-controller does: kustomize
// build of spec.path (a kustomization generated when the directory has
// none) with the spec's patches, components, targetNamespace and name
// prefix and suffix, then post-build substitution; then gitaso's
// annotations. It returns the objects' YAML documents.
func (w *fluxWalk) build(ctx context.Context, k *fluxKustomization) ([]fluxDoc, diag.List) {
	s := &k.spec
	ref := s.SourceRef
	prefix := "" // where another repository's files are mounted
	switch {
	case ref.Kind == "GitRepository":
		if u, ok := w.repos[k.sourceRefID()]; ok && len(w.homes) > 0 && !slices.Contains(w.homes, u) {
			var err error
			if prefix, err = w.mount(ctx, k); err != nil {
				return nil, diag.List{k.err("spec.sourceRef.name", sourceCause(err), "GitRepository %s is %s, another repository than the one gitaso reads (%s): %v",
					k.sourceRefID(), u, strings.Join(w.homes, " or "), err)}
			}
		}
	case ref.Kind == "OCIRepository" || ref.Kind == "Bucket" || ref.Kind == "ExternalArtifact":
		return nil, diag.List{k.err("spec.sourceRef.kind", ErrFluxSource, "%s %s: gitaso reads one Git repository; only a GitRepository source (this repository) can be followed", ref.Kind, ref.Name)}
	default:
		return nil, diag.List{k.err("spec.sourceRef.kind", ErrFluxSource, "%q: want GitRepository (this repository)", ref.Kind)}
	}
	dir := cleanFluxPath(s.Path)
	if prefix != "" {
		dir = path.Join(prefix, dir)
	}
	if !w.t.dirs[dir] {
		return nil, diag.List{k.err("spec.path", nil, "%q: "+msgNoPath+" (the path is relative to the repository root)", s.Path)}
	}

	fs := filesys.MakeFsInMemory()
	data := make(map[string][]byte, len(w.byPath)+1)
	for p, b := range w.byPath {
		data[p] = b
		if err := fs.WriteFile("/"+p, b); err != nil {
			return nil, diag.List{{File: p, Msg: "cannot load into kustomize", Err: err}}
		}
	}
	for _, kf := range w.t.kfiles {
		w.r.warnDeprecated(kf, w.byPath[kf], fixDeprecated(fs, kf, w.byPath[kf], func(p string) bool { return w.t.files[p] }))
	}
	var kus types.Kustomization
	kf, exists := w.t.kfiles[dir]
	if exists {
		b, err := fs.ReadFile("/" + kf)
		if err == nil {
			err = kus.Unmarshal(b)
		}
		if err != nil {
			return nil, diag.List{{File: kf, Msg: "invalid kustomization", Err: err}}
		}
	} else {
		kf = path.Join(dir, "kustomization.yaml")
		kus.Resources = w.generatedResources(dir)
	}
	kus.APIVersion, kus.Kind = types.KustomizationVersion, types.KustomizationKind
	if s.TargetNamespace != "" {
		kus.Namespace = s.TargetNamespace
	}
	if s.NamePrefix != "" {
		kus.NamePrefix = s.NamePrefix
	}
	if s.NameSuffix != "" {
		kus.NameSuffix = s.NameSuffix
	}
	kus.Patches = append(kus.Patches, s.Patches...)
	kus.Images = append(kus.Images, s.Images...)
	for i, p := range s.PatchesSM {
		b, err := sigyaml.Marshal(p)
		if err != nil {
			return nil, diag.List{k.err(fmt.Sprintf("spec.patchesStrategicMerge[%d]", i), err, "invalid")}
		}
		kus.Patches = append(kus.Patches, types.Patch{Patch: string(b)})
	}
	for i, p := range s.PatchesJSON {
		b, err := json.Marshal(p.Patch)
		if err != nil {
			return nil, diag.List{k.err(fmt.Sprintf("spec.patchesJson6902[%d]", i), err, "invalid")}
		}
		tg := p.Target
		kus.Patches = append(kus.Patches, types.Patch{Patch: string(b), Target: &tg})
	}
	for i, c := range s.Components {
		if isRemote(c) || path.IsAbs(c) {
			return nil, diag.List{k.err(fmt.Sprintf("spec.components[%d]", i), ErrRemoteBase, "%q: components must be local paths relative to spec.path", c)}
		}
		kus.Components = append(kus.Components, c)
	}
	kb, err := marshalKustomization(&kus)
	if err != nil {
		return nil, diag.List{k.err("spec", err, "cannot write the kustomization")}
	}
	// The committed text (none when generated) stays what errors are blamed
	// on: a line of the written one points nowhere in the repository.
	saveOriginal(fs, kf, w.byPath[kf])
	if err := fs.WriteFile("/"+kf, kb); err != nil {
		return nil, diag.List{k.err("spec", err, "cannot write the kustomization")}
	}
	data[kf] = kb
	kt := &tree{files: w.t.files, dirs: w.t.dirs, kfiles: make(map[string]string, len(w.t.kfiles)+1)}
	for d, f := range w.t.kfiles {
		kt.kfiles[d] = f
	}
	kt.kfiles[dir] = kf
	reached := map[string]bool{}
	if es := kt.checkRefs(dir, func(p string) []byte { return data[p] }, map[string]bool{}, reached); len(es) > 0 {
		return nil, w.blame(k, exists, es)
	}
	var undecrypted diag.List
	for _, p := range slices.Sorted(maps.Keys(reached)) {
		if e := w.bad[p]; e != nil {
			undecrypted = append(undecrypted, e)
		}
	}
	if len(undecrypted) > 0 {
		return nil, undecrypted
	}
	if es := checkBuildInput(w.pass.budget, kf, reached, data, w.lim); len(es) > 0 {
		return nil, es
	}
	objs, derr := kustomizeBuildCtx(ctx, w.pass.budget, fs, dir, kf)
	if derr != nil {
		if e := k.specPatchErr(derr); e != nil {
			return nil, diag.List{e}
		}
		return nil, w.blame(k, exists, diag.List{derr})
	}

	var vars Vars
	var secret map[string]string // variables from Secrets (loadVars)
	var errs diag.List
	deferring := false // a substituteFrom source is pending: unset variables are known after apply
	if pb := s.PostBuild; pb != nil {
		var refs []Ref
		for i, f := range pb.SubstituteFrom {
			if f.Kind != "ConfigMap" && f.Kind != "Secret" {
				errs = append(errs, k.err(fmt.Sprintf("spec.postBuild.substituteFrom[%d].kind", i), nil, "%q: want ConfigMap or Secret", f.Kind))
				continue
			}
			refs = append(refs, Ref{Kind: f.Kind, Namespace: k.obj.Namespace(), Name: f.Name, Optional: f.Optional})
		}
		inline := Vars{}
		for n, v := range pb.Substitute {
			if !ValidName(n) {
				errs = append(errs, k.err("spec.postBuild.substitute."+n, nil, "%q is not a valid variable name (letters, digits and '_', not starting with a digit)", n))
				continue
			}
			inline[n] = v
		}
		var pending []Ref
		vs, sec, es := loadVars(refs, append(slices.Clone(w.built), w.raw...), inline, w.exported, w.pendingOut(&pending), w.stores)
		for _, p := range pending {
			w.report(pendingExternal(p, "Flux Kustomization "+k.id+" ("+k.obj.File+")"))
		}
		deferring = len(pending) > 0
		for _, e := range es {
			if e.File == "" {
				e.File, e.Line, e.Object, e.Field = k.obj.File, k.obj.Line, k.obj.ID(), "spec.postBuild.substituteFrom"
				e.Msg = strings.Replace(e.Msg, "in the files read (below the source path)", "in the repository", 1) + " (Flux Kustomization " + k.id + ")"
			}
		}
		errs = append(errs, es...)
		vars, secret = vs, sec
	}
	if len(errs) > 0 {
		return nil, errs
	}
	docs := make([]fluxDoc, 0, len(objs))
	for _, o := range objs {
		text := o.yaml
		// Where the object came from (kustomize's origin), else the
		// Kustomization (a kustomization gitaso generated is no file).
		file, line := o.file, o.line
		if file == "" || (!exists && file == kf) {
			file, line = k.obj.File, 0
		}
		var secrets []manifest.SecretValue
		if s.PostBuild != nil && !disabled(text) {
			secrets = secretsUsed(text, vars, secret)
			sub, err := substitute(k.obj.File, 0, text, vars, w.r.opts.Strict, deferring)
			if err != nil {
				de := err.(*diag.Error)
				fluxUnset := func(de *diag.Error) *diag.Error {
					de.File, de.Line, de.Object = file, line, o.id
					if errors.Is(de.Err, ErrUnsetVariable) {
						name := strings.TrimSuffix(strings.TrimPrefix(de.Msg, "${"), "}")
						de.Err = fmt.Errorf("%w and has no default (strict substitution; set %s in spec.postBuild.substitute, or in a ConfigMap or Secret of spec.postBuild.substituteFrom, of Flux Kustomization %s at %s, or write ${%s:=default}; $${%s} is a literal)",
							ErrUnsetVariable, name, k.id, k.obj.File, name, name)
					}
					de.Msg += " (postBuild of Flux Kustomization " + k.id + ")"
					return de
				}
				if all := unsetAll(k.obj.File, 0, text, vars); errors.Is(de.Err, ErrUnsetVariable) && len(all) > 0 {
					// Every unset variable of the object is reported (the
					// Kustomization fails; its other objects are checked too).
					for _, e := range all {
						errs = append(errs, fluxUnset(e))
					}
					continue
				}
				errs = append(errs, fluxUnset(de))
				continue
			}
			text = sub
		}
		annotated, err := w.annotate(k, text)
		if err != nil {
			errs = append(errs, &diag.Error{File: k.obj.File, Object: o.id, Msg: "after substitution (Flux Kustomization " + k.id + ")", Err: err})
			continue
		}
		docs = append(docs, fluxDoc{file: file, line: line, text: annotated, secrets: secrets})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return docs, nil
}

// blame adds the Kustomization to errors of a build whose kustomization
// file gitaso generated (it is not a file the user can open).
func (w *fluxWalk) blame(k *fluxKustomization, exists bool, es diag.List) diag.List {
	if exists {
		return es
	}
	for _, e := range es {
		e.File, e.Line, e.Object = k.obj.File, k.obj.Line, k.obj.ID()
		switch {
		case e.Field == "":
			e.Field = "spec.path"
		case strings.HasPrefix(e.Field, "components["):
			e.Field = "spec." + e.Field
		}
	}
	return es
}

// generatedResources lists what Flux's generated kustomization holds for a
// directory without one: every *.yaml/*.yml file below it, and each
// sub-directory holding a kustomization file (not descended into).
func (w *fluxWalk) generatedResources(dir string) []string {
	var out []string
	paths := make([]string, 0, len(w.t.files))
	for p := range w.t.files {
		if within(p, dir) && p != dir {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	added := map[string]bool{}
	for _, p := range paths {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		// The topmost sub-directory of dir holding a kustomization file.
		sub, inSub := "", false
		for d := dirOf(p); d != dir && within(d, dir); d = dirOf(d) {
			if _, ok := w.t.kfiles[d]; ok {
				sub, inSub = d, true
			}
			if d == "" {
				break
			}
		}
		if inSub {
			r := strings.TrimPrefix(strings.TrimPrefix(sub, dir), "/")
			if !added[r] {
				added[r] = true
				out = append(out, r)
			}
			continue
		}
		if !source.IsYAMLFile(p) || inChart(w.charts, p) || !hasObjects(w.byPath[p]) {
			continue
		}
		out = append(out, rel)
	}
	return out
}

// hasObjects reports whether a file holds at least one document with
// content (kustomize refuses an empty resource file; Flux's generator
// lists files that decode as Kubernetes YAML).
func hasObjects(data []byte) bool {
	for _, d := range splitDocuments(data) {
		if hasContent(d.text) {
			return true
		}
	}
	return false
}

// annotate records the Kustomization on an object and maps suspend and
// prune to ASO reconcile policies (unless the object sets one).
func (w *fluxWalk) annotate(k *fluxKustomization, text string) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return "", err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return text, nil
	}
	root := doc.Content[0]
	meta := mapValue(root, "metadata")
	if meta == nil {
		return text, nil
	}
	ann := mapValue(meta, "annotations")
	if ann == nil || ann.Kind != yaml.MappingNode {
		ann = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setKey(meta, "annotations", ann)
	}
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	if cm := k.spec.CommonMetadata; cm != nil {
		// Flux's commonMetadata: set on every object, overriding.
		for _, key := range slices.Sorted(maps.Keys(cm.Annotations)) {
			setKey(ann, key, str(cm.Annotations[key]))
		}
		if len(cm.Labels) > 0 {
			labels := mapValue(meta, "labels")
			if labels == nil || labels.Kind != yaml.MappingNode {
				labels = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				setKey(meta, "labels", labels)
			}
			for _, key := range slices.Sorted(maps.Keys(cm.Labels)) {
				setKey(labels, key, str(cm.Labels[key]))
			}
		}
	}
	setKey(ann, AnnotationFluxKustomization, str(k.id))
	group := strings.SplitN(scalar(mapValue(root, "apiVersion")), "/", 2)[0]
	if aso.IsASOGroup(group) && mapValue(ann, aso.AnnotationReconcilePolicy) == nil {
		switch {
		case k.spec.Suspend || reconcileDisabled(k.obj):
			setKey(ann, aso.AnnotationReconcilePolicy, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(aso.ReconcilePolicySkip)})
		case k.spec.Prune != nil && !*k.spec.Prune, scalar(mapValue(ann, fluxPruneAnnotation)) == "disabled":
			setKey(ann, aso.AnnotationReconcilePolicy, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(aso.ReconcilePolicyDetachOnDelete)})
		}
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil { // the document keeps its head comment (origin)
		return "", err
	}
	_ = enc.Close()
	return b.String(), nil
}

// fieldLine returns the line of a field (dotted, with [i] indexes) of the
// object whose document starts at line objLine of a file, or objLine when
// the field is not found.
func fieldLine(data []byte, objLine int, field string) int {
	for _, d := range splitDocuments(data) {
		end := d.line + strings.Count(d.text, "\n")
		if objLine < d.line || objLine > end {
			continue
		}
		var doc yaml.Node
		if yaml.Unmarshal([]byte(d.text), &doc) != nil || len(doc.Content) == 0 {
			return objLine
		}
		n := doc.Content[0]
		for _, part := range strings.Split(field, ".") {
			key, idx, _ := strings.Cut(part, "[")
			next := mapValue(n, key)
			if next == nil {
				break
			}
			n = next
			if idx != "" {
				var i int
				if _, err := fmt.Sscanf(idx, "%d]", &i); err != nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
					break
				}
				n = n.Content[i]
			}
		}
		return d.line - 1 + n.Line
	}
	return objLine
}

// originPrefix starts the comment with which a kustomize build names the
// file and line of an object (source.OriginComment).
const originPrefix = "# gitaso.io/origin: "

// originOf reads the origin comment (source.OriginComment) at the start of
// a document of generated text.
func originOf(text string) (file string, line int, ok bool) {
	for l := range strings.Lines(text) {
		l = strings.TrimSpace(l)
		if l == "---" || l == "" {
			continue
		}
		rest, found := strings.CutPrefix(l, originPrefix)
		if !found {
			return "", 0, false
		}
		var o struct {
			File string `json:"file"`
			Line int    `json:"line"`
		}
		if json.Unmarshal([]byte(rest), &o) != nil || o.File == "" || o.Line < 0 {
			return "", 0, false
		}
		return o.File, o.Line, true
	}
	return "", 0, false
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}
