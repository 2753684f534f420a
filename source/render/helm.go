package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// HelmGroup is the API group of Flux's HelmRelease objects.
const HelmGroup = "helm.toolkit.fluxcd.io"

// SourceGroup is the API group of Flux's source objects (GitRepository,
// HelmRepository, OCIRepository, HelmChart, Bucket).
const SourceGroup = "source.toolkit.fluxcd.io"

// Annotations set on every object rendered from a HelmRelease.
const (
	// AnnotationHelmRelease is "namespace/name" of the HelmRelease.
	AnnotationHelmRelease = "gitaso.io/helm-release"
	// AnnotationHelmChart is "<chart>@<version>" of the chart rendered.
	AnnotationHelmChart = "gitaso.io/helm-chart"
	// AnnotationHelmTemplate is the template that rendered the object,
	// "<chart>/templates/x.yaml" (a subchart's "<chart>/charts/<sub>/templates/x.yaml").
	AnnotationHelmTemplate = "gitaso.io/helm-template"
	// AnnotationHelmHook names the Helm hook events of an object a chart
	// declares as an install or upgrade hook (kept as an ordinary object).
	AnnotationHelmHook = "gitaso.io/helm-hook"
)

// fluxReconcileAnnotation set to "disabled" on a Flux object makes Flux
// leave it alone (kustomize-controller creates it and never updates it).
const fluxReconcileAnnotation = "kustomize.toolkit.fluxcd.io/reconcile"

// ErrHelmSource is returned (wrapped in a *diag.Error) when a HelmRelease's
// chart comes from a source gitaso cannot read (a Bucket, an unknown kind,
// another repository without a chart fetcher) or that is not in the
// repository.
var ErrHelmSource = errors.New("unsupported Helm chart source")

// ErrHelmChart is returned (wrapped in a *diag.Error) when a chart cannot
// be loaded: no Chart.yaml, an invalid archive, a missing dependency.
var ErrHelmChart = errors.New("helm chart cannot be loaded")

// ErrHelmValues is returned (wrapped in a *diag.Error) when a HelmRelease's
// values cannot be composed (a missing valuesFrom object or key, bad YAML).
var ErrHelmValues = errors.New("helm values cannot be composed")

// ErrHelmRender is returned (wrapped in a *diag.Error) when Helm fails to
// render a chart: a template error (helm's message names the template and
// line), a missing required value, output that is not YAML.
var ErrHelmRender = errors.New("helm chart render failed")

// helmVersions are the HelmRelease versions read.
var helmVersions = []string{HelmGroup + "/v2", HelmGroup + "/v2beta2", HelmGroup + "/v2beta1"}

// ChartUse is one chart a render resolved from outside the repository
// (Options.OnChart), so that a caller can make a new chart version a new
// revision.
type ChartUse struct {
	Release string // namespace/name of the HelmRelease
	Chart   string // chart name
	Version string // resolved version
	Digest  string // archive digest, as the fetcher reports it
	URL     string // where the chart came from
}

// ChartSource is the Flux source object a chart is fetched from.
type ChartSource struct {
	Kind      string         // HelmRepository, OCIRepository or GitRepository
	Namespace string         // the object's namespace
	Name      string         // the object's name
	Spec      map[string]any // the object's spec, as written (after substitution)
	File      string         // where the object is, for errors
	Line      int
}

// ChartRequest asks a ChartFetcher for one chart.
type ChartRequest struct {
	Source ChartSource
	// Secret is the data of the source's spec.secretRef Secret (decoded),
	// nil when it names none.
	Secret map[string]string
	// Chart is the chart name (HelmRepository) or path (GitRepository);
	// "" for an OCIRepository (the artifact is the chart).
	Chart string
	// Version is a semver range ("" or "*" for the latest); "" for an
	// OCIRepository (its spec.ref decides).
	Version string
}

// FetchedChart is a chart archive a ChartFetcher returned.
type FetchedChart struct {
	Name, Version, Digest, URL string
	Archive                    []byte // the .tgz
	Cached                     bool   // served from the fetcher's cache
}

// ChartFetcher fetches charts that are not in the repository gitaso reads:
// from Helm repositories (HTTP index or OCI), OCI registries and other Git
// repositories. It must be safe for concurrent use. ChartsFetcher adapts
// package source/charts' Fetcher.
type ChartFetcher interface {
	// Fetch resolves and fetches the chart a HelmRelease (or HelmChart)
	// names.
	Fetch(ctx context.Context, req ChartRequest) (*FetchedChart, error)
	// FetchURL fetches a chart dependency from a repository URL
	// (https://... or oci://...) as "helm dependency build" does; secret
	// may be nil.
	FetchURL(ctx context.Context, repoURL, name, version string, secret map[string]string) (*FetchedChart, error)
}

// DefaultKubeVersion is the Kubernetes version templates see in
// .Capabilities.KubeVersion unless Options.KubeVersion says otherwise: the
// version of the Kubernetes client libraries gitaso is built with (k8s.io/
// client-go v0.37 in go.mod, checked by a test), which is what the helm
// binary built from the same libraries reports for "helm template". Flux's
// helm-controller reports the cluster's version: set Options.KubeVersion
// (gitaso --helm-kube-version) to it when charts look at it.
const DefaultKubeVersion = "v1.37.0"

// hrSpec is the part of a HelmRelease's spec gitaso reads (v2, v2beta2,
// v2beta1 alike).
type hrSpec struct {
	Chart *struct {
		Spec chartSpec `json:"spec"`
	} `json:"chart"`
	ChartRef *struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"chartRef"`
	ReleaseName     string `json:"releaseName"`
	TargetNamespace string `json:"targetNamespace"`
	Suspend         bool   `json:"suspend"`
	DependsOn       []struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"dependsOn"`
	ValuesFrom []struct {
		Kind       string `json:"kind"`
		Name       string `json:"name"`
		ValuesKey  string `json:"valuesKey"`
		TargetPath string `json:"targetPath"`
		Optional   bool   `json:"optional"`
	} `json:"valuesFrom"`
	PostRenderers []struct {
		Kustomize *kustomizePostRenderer `json:"kustomize"`
	} `json:"postRenderers"`
	Install *struct {
		DisableSchemaValidation bool `json:"disableSchemaValidation"`
		DisableWait             bool `json:"disableWait"`
	} `json:"install"`
	Upgrade *struct {
		DisableWait bool `json:"disableWait"`
	} `json:"upgrade"`
	Interval       string `json:"interval"`
	Timeout        string `json:"timeout"`
	CommonMetadata *struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"commonMetadata"`
}

// kustomizePostRenderer is a HelmRelease's spec.postRenderers[].kustomize.
type kustomizePostRenderer struct {
	Patches               []types.Patch  `json:"patches"`
	PatchesStrategicMerge []any          `json:"patchesStrategicMerge"` // v2beta
	PatchesJSON6902       []fluxJSON6902 `json:"patchesJson6902"`       // v2beta
	Images                []types.Image  `json:"images"`
}

// chartSpec is spec.chart.spec of a HelmRelease, or the spec of a HelmChart.
type chartSpec struct {
	Chart     string `json:"chart"`
	Version   string `json:"version"`
	SourceRef struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"sourceRef"`
	ValuesFiles              []string `json:"valuesFiles"`
	ValuesFile               string   `json:"valuesFile"` // v2beta1
	IgnoreMissingValuesFiles bool     `json:"ignoreMissingValuesFiles"`
	ReconcileStrategy        string   `json:"reconcileStrategy"`
}

// helmRelease is one HelmRelease found in rendered output.
type helmRelease struct {
	obj    manifest.Object // File and Line: where the user wrote it
	id     string          // namespace/name
	spec   hrSpec
	values map[string]any // spec.values as parsed (JSON-compatible)
	fi, di int            // file index in the output, document index in it

	// invalid are the errors of an apiVersion or spec gitaso cannot read.
	invalid diag.List

	// Results.
	waiting string                 // why it waits (dependsOn), "" when it does not
	docs    []string               // rendered objects' YAML, origin comment first
	secrets []manifest.SecretValue // values valuesFrom took from Secrets
	uses    []ChartUse
	errs    diag.List
	version string // chart@version
	// ignored says why the release is counted and left out: it renders
	// no ASO object, or is skipped (helm_ignore.go); "" when it is not.
	ignored string
	// fed are the objects of an ignored release that rendered, left out
	// of the output but there for the valuesFrom of releases after it.
	fed []string
	// lookupWait: waiting is a lookup of an object not applied yet; the
	// release is rendered again once it is (helm_lookup.go).
	lookupWait bool
}

func (h *helmRelease) err(field string, cause error, format string, args ...any) *diag.Error {
	return &diag.Error{File: h.obj.File, Line: h.obj.Line, Object: h.obj.ID(), Field: field, Err: cause, Msg: fmt.Sprintf(format, args...)}
}

// suspended reports whether Flux leaves the release alone: spec.suspend,
// or the kustomize.toolkit.fluxcd.io/reconcile: disabled annotation.
func (h *helmRelease) suspended() bool {
	return h.spec.Suspend || reconcileDisabled(h.obj)
}

// reconcileDisabled reports whether a Flux object carries
// kustomize.toolkit.fluxcd.io/reconcile: disabled.
func reconcileDisabled(o manifest.Object) bool {
	return o.Annotations()[fluxReconcileAnnotation] == "disabled" || o.Labels()[fluxReconcileAnnotation] == "disabled"
}

// releaseName is helm-controller's release name: spec.releaseName, else
// [<targetNamespace>-]<name>, shortened to 53 characters with a hash when
// longer (helm-controller's release.ShortenName).
func (h *helmRelease) releaseName() string {
	name := h.spec.ReleaseName
	if name == "" {
		name = h.obj.Name()
		if h.spec.TargetNamespace != "" {
			name = h.spec.TargetNamespace + "-" + name
		}
	}
	return shortenReleaseName(name)
}

// shortenReleaseName returns a name longer than 53 characters (Helm's
// limit) as its first 40 characters, "-" and the first 12 hex digits of
// its SHA-256, as Flux does.
func shortenReleaseName(name string) string {
	const maxLen, hashLen = 53, 12
	if len(name) <= maxLen {
		return name
	}
	return name[:maxLen-hashLen-1] + "-" + sha256Hex([]byte(name))[:hashLen]
}

// releaseNamespace is spec.targetNamespace, else the HelmRelease's namespace.
func (h *helmRelease) releaseNamespace() string {
	if h.spec.TargetNamespace != "" {
		return h.spec.TargetNamespace
	}
	return h.obj.Namespace()
}

// chartDirs finds the Helm chart directories among files: each directory
// holding a Chart.yaml (source.ChartFile).
func chartDirs(files []source.File) map[string]bool {
	var dirs map[string]bool
	for _, f := range files {
		if path.Base(f.Path) == source.ChartFile {
			if dirs == nil {
				dirs = map[string]bool{}
			}
			dirs[dirOf(f.Path)] = true
		}
	}
	return dirs
}

// inChart reports whether a file is inside one of the chart directories:
// such files are chart sources, never manifests.
func inChart(dirs map[string]bool, p string) bool {
	if len(dirs) == 0 {
		return false
	}
	for d := dirOf(p); ; d = dirOf(d) {
		if dirs[d] {
			return true
		}
		if d == "" {
			return false
		}
	}
}

// findReleases parses the HelmRelease objects of one output file.
// One gitaso cannot read is returned with its errors (invalid): a unit that
// fails.
func findReleases(fi int, f source.File, docs []document) []*helmRelease {
	var out []*helmRelease
	for di, d := range docs {
		if !strings.Contains(d.text, HelmGroup) || !strings.Contains(d.text, "HelmRelease") {
			continue
		}
		parsed, err := source.ParseFile(f.Path, []byte(d.text))
		if err != nil {
			continue // the parser reports it with the snapshot
		}
		for _, o := range parsed {
			if o.Group() != HelmGroup || o.Kind() != "HelmRelease" {
				continue
			}
			switch fl, l, ok := originOf(d.text); {
			case o.File != f.Path: // the parser read the origin comment
			case ok:
				o.File, o.Line = fl, l
			case f.Generated:
				o.Line = 0
			default:
				o.Line += d.line - 1
			}
			h := &helmRelease{obj: o, id: o.Namespace() + "/" + o.Name(), fi: fi, di: di}
			out = append(out, h)
			errs := &h.invalid
			if !slices.Contains(helmVersions, o.APIVersion()) {
				*errs = append(*errs, h.err("apiVersion", nil, "%s is not supported (gitaso reads %s)", o.APIVersion(), strings.Join(helmVersions, ", ")))
				continue
			}
			spec, _ := o.Content["spec"].(map[string]any)
			b, _ := json.Marshal(spec)
			if err := json.Unmarshal(b, &h.spec); err != nil {
				field := "spec"
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) && te.Field != "" {
					field = "spec." + te.Field
				}
				*errs = append(*errs, h.err(field, nil, "invalid: %v", err))
				continue
			}
			if v, ok := spec["values"].(map[string]any); ok {
				h.values = v
			} else if spec["values"] != nil {
				*errs = append(*errs, h.err("spec.values", ErrHelmValues, "must be a mapping"))
				continue
			}
			switch {
			case h.spec.Chart == nil && h.spec.ChartRef == nil:
				*errs = append(*errs, h.err("spec.chart", nil, "one of spec.chart and spec.chartRef is required"))
				continue
			case h.spec.Chart != nil && h.spec.ChartRef != nil:
				*errs = append(*errs, h.err("spec.chartRef", nil, "spec.chart and spec.chartRef are mutually exclusive"))
				continue
			}
			*errs = append(*errs, h.durations()...)
		}
	}
	return out
}

// renderHelm renders every HelmRelease among the output files as Flux's
// helm-controller would and puts the chart's objects in its place. It
// returns the new output files. How Flux's behaviour is translated:
//
//   - Which: with Options.Flux, every helm.toolkit.fluxcd.io/v2, v2beta2
//     or v2beta1 HelmRelease in the entry path's output and in the output
//     of every Flux Kustomization followed, after that Kustomization's
//     postBuild substitution (so ${VARS} in spec.values are substituted);
//     the chart's output is not substituted. The HelmRelease itself leaves
//     the output (in a file as written its lines are blanked, so the other
//     documents keep theirs); its objects take its place.
//   - Chart: spec.chart.spec (chart, version, sourceRef, valuesFiles) or
//     spec.chartRef (an OCIRepository, or a source.toolkit.fluxcd.io
//     HelmChart resolved like a chart.spec in its own namespace). Source
//     objects are looked up among the repository's objects (sourceRef's
//     namespace defaulting to the HelmRelease's); a spec.secretRef Secret
//     must be in the repository too and its data goes to the fetcher.
//     A GitRepository that is this repository (matched by URL as
//     Kustomizations are; one whose URL is unknown is taken to be this
//     one) gives the chart directory at spec.chart.spec.chart (relative to
//     the repository root), loaded from the revision's files with its
//     .helmignore, its charts/ subcharts and its dependencies: file://
//     ones relative to the chart directory, in the repository (as
//     source-controller builds a chart from Git; version constraints
//     checked), https:// and oci:// ones through Options.Charts. For such
//     a chart spec.chart.spec.version is not matched and reconcileStrategy
//     Revision adds no "+<revision>" to the version: the chart's own
//     version is used. HelmRepository (HTTP or type: oci), OCIRepository
//     and other repositories' GitRepository charts come through
//     Options.Charts (refused without one); Bucket is refused
//     (ErrHelmSource). Each chart is loaded once per Render (by directory,
//     by request and by archive digest), however many releases use it;
//     each release renders a copy.
//   - valuesFiles (and v2beta1's valuesFile) replace the chart's
//     values.yaml with their merge, later ones winning, as source-controller
//     does: paths relative to the repository root for a chart from Git,
//     relative to the chart for a packaged one ("values.yaml" is the
//     chart's own); ignoreMissingValuesFiles is honoured.
//   - Values, helm-controller's order: spec.valuesFrom in order (ConfigMaps
//     and Secrets of the HelmRelease's namespace in the repository,
//     SOPS-decrypted ones included, or rendered by a release it depends on;
//     valuesKey default values.yaml; targetPath sets the value as
//     helm --set does, quoted values as strings; optional ones may be
//     missing), then spec.values merged on top; the chart's defaults below
//     them when Helm coalesces.
//   - Release: spec.releaseName, else [<targetNamespace>-]<name>, shortened
//     to 53 characters with a hash as Flux does; namespace
//     spec.targetNamespace, else the HelmRelease's. Objects without a
//     namespace get the release namespace (Helm applies them there;
//     cluster-scoped Kubernetes kinds excepted).
//   - Render: Helm's engine as "helm install" runs it (strict mode off,
//     values.schema.json checked unless spec.install.disableSchemaValidation,
//     the chart's kubeVersion checked, library charts refused,
//     condition/tags/import-values processed). .Release.IsInstall is true,
//     IsUpgrade false and Revision 1 on every render: helm-controller
//     installs once and upgrades after (IsUpgrade true, Revision n+1), but
//     gitaso keeps no release history and a revision must render the same
//     whatever was applied before; a template that branches on IsUpgrade
//     renders as for an install. .Capabilities are Helm's defaults with
//     Options.KubeVersion (DefaultKubeVersion) and Options.HelmAPIVersions.
//     lookup is Options.Lookup (helm_lookup.go): gitaso's reconciler
//     answers an ASO object it manages with its status as ASO writes it
//     (reconcile.Lookup); one not applied yet makes the release wait
//     (DependencyNotReady, rendered again once it exists, in the same
//     run's next phase). Without Options.Lookup, and for other kinds, an
//     empty map, as in "helm template".
//   - Output: NOTES.txt is dropped, and so are CRDs (crds/, which Helm
//     installs apart from the release; gitaso applies ASO kinds only).
//     Hooks: pre/post-install and pre/post-upgrade hooks become ordinary
//     objects (gitaso.io/helm-hook names their events) unless their delete
//     policy is hook-succeeded (a run-once Job, not a resource to keep);
//     test, delete and rollback hooks are dropped. spec.postRenderers'
//     kustomize patches (strategic merge or JSON 6902 with a target, and
//     v2beta's patchesStrategicMerge and patchesJson6902) and images run
//     over the objects with kustomize, in order; then Flux's origin labels
//     (helm.toolkit.fluxcd.io/name and namespace) and spec.commonMetadata.
//     Objects of kinds gitaso does not apply are reported as ignored; a
//     release that renders no ASO kind at all is counted and left out,
//     remembered by its chart's digest and values, and a release can be
//     skipped without a fetch (helm_ignore.go).
//   - Provenance: every object carries gitaso.io/helm-release
//     (namespace/name), gitaso.io/helm-chart (chart@version),
//     gitaso.io/helm-template (chart/templates/x.yaml) and, when the
//     HelmRelease came from a Kustomization, gitaso.io/flux-kustomization;
//     its file and line are the HelmRelease's (an origin comment), so plans
//     and errors point at it. A render error (a template error, with helm's
//     template:line:col, a missing required value, output that is not YAML,
//     a panic) is a *diag.Error naming the HelmRelease's file, line, ID and
//     field (spec.values for template execution errors, spec.chart...
//     otherwise) and fails the release's unit (BuildFailed); a chart that
//     cannot be fetched or loaded fails it with ArtifactFailed (Retry when
//     the registry did not answer). Its objects are left out; the other
//     releases render. A limit (output past the file-size limit, helm-steps,
//     helm-bytes) or the render deadline refuses the revision.
//   - spec.suspend: true, or kustomize.toolkit.fluxcd.io/reconcile: disabled
//     on the HelmRelease: Flux leaves the release alone, so its ASO objects
//     get reconcile-policy: skip unless they set a policy (as a suspended
//     Kustomization's). A parent Kustomization's suspend or prune is not
//     inherited (helm-controller reconciles the release on its own).
//   - spec.dependsOn: releases render in levels, each after the releases it
//     depends on (concurrently within a level, on GOMAXPROCS goroutines), so
//     that a valuesFrom finds a ConfigMap or Secret a dependency renders; a
//     release whose dependsOn names one that failed, waits, is not found at
//     this revision (Flux would wait for it forever) or is in a cycle waits:
//     Reason DependencyNotReady, its objects left out (helm_units.go).
//   - Options.OnChart hears of every chart a release took from outside the
//     repository (its dependencies too), after all releases rendered.
//
// Not read: spec.chart.spec.verify, spec.kubeConfig, spec.serviceAccountName,
// spec.storageNamespace, spec.install/upgrade CRD policies and remediation,
// spec.driftDetection (gitaso corrects drift of ASO resources itself).
func (w *fluxWalk) renderHelm(ctx context.Context, out []source.File) ([]source.File, []manifest.Unit, diag.List) {
	start := time.Now()
	var releases []*helmRelease
	docs := make([][]document, len(out))
	for i, f := range out {
		if !bytes.Contains(f.Data, []byte(HelmGroup)) {
			continue
		}
		docs[i] = splitDocuments(f.Data)
		releases = append(releases, findReleases(i, f, docs[i])...)
	}
	if len(releases) == 0 {
		return out, nil, nil
	}
	run := newHelmRun(w)
	run.dependedOn = dependedOn(releases) // helm_ignore.go
	levels := releaseLevels(releases)
	deps := newReleaseDeps(releases, levels)
	for _, level := range levels {
		// A release renders once every release its dependsOn names
		// rendered (Flux checks dependsOn first).
		var todo []*helmRelease
		for _, h := range level {
			switch {
			case len(h.invalid) > 0:
				h.errs = h.invalid
			case deps.blocked(h) != "":
				h.waiting = deps.blocked(h)
			default:
				todo = append(todo, h)
			}
		}
		workers := min(runtime.GOMAXPROCS(0), len(todo))
		next := make(chan *helmRelease)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for h := range next {
					run.release(ctx, h)
				}
			})
		}
		for _, h := range todo {
			if ctx.Err() != nil {
				break
			}
			next <- h
		}
		close(next)
		wg.Wait()
		if err := ctx.Err(); err != nil {
			var stopped diag.List // the releases stopped at the deadline name themselves
			for _, h := range todo {
				stopped = append(stopped, h.errs...)
			}
			if len(stopped) > 0 && errors.Is(context.Cause(ctx), errRenderTimeout) {
				return nil, nil, stopped
			}
			return nil, nil, diag.List{{Msg: "helm render", Err: err}}
		}
		// What a level rendered is there for the valuesFrom of the next.
		for _, h := range todo {
			if len(h.errs) > 0 || h.waiting != "" {
				h.docs = nil // a release that failed (or waits on a lookup) renders nothing
				continue
			}
			deps.rendered[h] = true
			run.index.add(h.docs)
			run.index.add(h.fed)
		}
	}
	objects := 0
	var limits diag.List
	for _, h := range releases {
		for _, e := range h.errs {
			if data, ok := w.byPath[e.File]; ok && e.Line > 0 && strings.HasPrefix(e.Field, "spec") {
				e.Line = fieldLine(data, e.Line, e.Field)
			}
			if errors.Is(e, source.ErrLimit) {
				limits = append(limits, e)
			}
		}
		objects += len(h.docs)
		for _, u := range h.uses {
			if w.r.opts.OnChart != nil {
				w.r.opts.OnChart(u)
			}
			w.pass.sources.chart(u)
		}
	}
	if names := ignoredNames(releases); len(names) > 0 {
		// Logged when the list changes, not on every render of a revision.
		if key := strings.Join(names, "\n"); w.r.ignoredLogged.Swap(key) != key {
			w.r.logger.Info("HelmReleases ignored: they render no ASO object or are skipped", "count", len(names), "releases", names)
		}
	}
	if len(limits) > 0 {
		return nil, nil, limits // limits bound the revision, whichever release reached one
	}
	units := releaseUnits(releases)

	// Each HelmRelease's document gives way to its objects: in generated
	// text in place; in a file as written, it is blanked (the other
	// documents keep their lines) and its objects go to generated text
	// named after the file.
	byFile := map[int][]*helmRelease{}
	for _, h := range releases {
		byFile[h.fi] = append(byFile[h.fi], h)
	}
	var added []source.File
	for fi, hs := range byFile {
		f := out[fi]
		repl := map[int][]string{} // document index → objects rendered in its place
		// Values from Secrets, substituted into the file or given by
		// valuesFrom, pass to the chart's objects.
		secrets := slices.Clone(f.Secrets)
		for _, h := range hs {
			repl[h.di] = append(repl[h.di], h.docs...) // a List of HelmReleases: all of them
			secrets = appendSecrets(secrets, h.secrets...)
		}
		if f.Generated {
			out[fi].Secrets = secrets
		}
		var b strings.Builder
		var gen []string
		for di, d := range docs[fi] {
			rendered, ok := repl[di]
			if !ok {
				b.WriteString(d.text)
				continue
			}
			if f.Generated {
				if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
					b.WriteByte('\n')
				}
				for _, r := range rendered {
					if b.Len() > 0 {
						b.WriteString("---\n")
					}
					b.WriteString(r)
				}
				continue
			}
			b.WriteString(blankDocument(d.text))
			gen = append(gen, rendered...)
		}
		out[fi].Data = []byte(b.String())
		if len(gen) > 0 {
			added = append(added, source.File{Path: f.Path, Generated: true, Data: []byte(strings.Join(gen, "---\n")), Secrets: secrets})
		}
	}
	out = append(out, added...)
	w.r.logger.Debug("rendered HelmReleases", "releases", len(releases), "failed", failedCount(units), "objects", objects,
		"charts", run.charts(), "duration", time.Since(start))
	return out, units, nil
}

// blankDocument returns a document with every line but its "---" marker
// emptied, so that the documents after it keep their lines.
func blankDocument(text string) string {
	var b strings.Builder
	for l := range strings.Lines(text) {
		if isDocStart([]byte(l)) {
			b.WriteString(l)
			continue
		}
		if strings.HasSuffix(l, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// releaseLevels orders releases by spec.dependsOn: each level renders
// after the levels before it (the objects they render are known to its
// valuesFrom), its releases concurrently. A dependsOn naming a HelmRelease
// that was not found, or a cycle, makes the release wait (releaseDeps); a
// cycle keeps the releases in it in the level where it was found.
func releaseLevels(rs []*helmRelease) [][]*helmRelease {
	byID := releasesByID(rs)
	level := map[*helmRelease]int{}
	state := map[*helmRelease]int{}
	var place func(h *helmRelease) int
	place = func(h *helmRelease) int {
		switch state[h] {
		case 1:
			return -1 // a cycle: no ordering edge
		case 2:
			return level[h]
		}
		state[h] = 1
		l := 0
		for _, id := range h.dependsOn() {
			if dep, ok := byID[id]; ok && dep != h {
				l = max(l, place(dep)+1)
			}
		}
		state[h], level[h] = 2, l
		return l
	}
	var out [][]*helmRelease
	for _, h := range rs {
		l := place(h)
		for len(out) <= l {
			out = append(out, nil)
		}
		out[l] = append(out[l], h)
	}
	return out
}

// releasesByID indexes releases by "namespace/name" (the first one found).
func releasesByID(rs []*helmRelease) map[string]*helmRelease {
	byID := map[string]*helmRelease{}
	for _, h := range rs {
		if _, dup := byID[h.id]; !dup {
			byID[h.id] = h
		}
	}
	return byID
}

// dependsOn returns the IDs ("namespace/name") of the HelmReleases
// spec.dependsOn names (the release's namespace by default).
func (h *helmRelease) dependsOn() []string {
	var out []string
	for _, d := range h.spec.DependsOn {
		ns := d.Namespace
		if ns == "" {
			ns = h.obj.Namespace()
		}
		out = append(out, ns+"/"+d.Name)
	}
	return out
}
