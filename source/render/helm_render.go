package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/render/internal/helmtpl"
)

// helmOriginLabels are the labels helm-controller's origin post-renderer
// sets on every object of a release.
const (
	helmLabelName      = HelmGroup + "/name"
	helmLabelNamespace = HelmGroup + "/namespace"
)

// kustomizeMu serialises post-render kustomize builds, as helm-controller
// does (kustomize's builtin plugins have shared state).
var kustomizeMu sync.Mutex

// capabilities are what templates see as .Capabilities: Helm's defaults
// with the Kubernetes version of Options.KubeVersion (DefaultKubeVersion)
// and Options.HelmAPIVersions added to the API versions.
func (r *Renderer) capabilities() (*chartutil.Capabilities, error) {
	v := r.opts.KubeVersion
	if v == "" {
		v = DefaultKubeVersion
	}
	kv, err := chartutil.ParseKubeVersion(v)
	if err != nil {
		return nil, fmt.Errorf("kube version %q: %w", v, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	if len(r.opts.HelmAPIVersions) > 0 {
		caps.APIVersions = append(slices.Clone(caps.APIVersions), r.opts.HelmAPIVersions...)
	}
	return caps, nil
}

// release renders one HelmRelease into h.docs (or h.errs). A panic in
// Helm's engine or a template function is an error of the release, never
// a crash of the daemon.
func (run *helmRun) release(ctx context.Context, h *helmRelease) {
	defer func() {
		if p := recover(); p != nil {
			h.docs = nil
			h.errs = append(h.errs, h.err("spec.chart", ErrHelmRender, "HelmRelease %s: helm panicked: %v", h.id, p))
		}
	}()
	if why := run.w.skipped(h); why != "" {
		h.ignored = why // neither fetched nor rendered (helm_ignore.go)
		return
	}
	vals, derr := run.values(h)
	if derr != nil {
		h.errs = append(h.errs, derr)
		return
	}
	vh := run.inputsHash(h, vals) // helm_ignore.go
	r, err := run.chart(ctx, h)
	if err != nil {
		if why, ok := run.ignoredUnavailable(h, err, vh); ok && !run.dependedOn[h.id] {
			h.ignored = why
			return
		}
		h.errs = append(h.errs, diag.AsList(err)...)
		return
	}
	h.uses = r.uses
	if digest, name := chartDigest(r.uses); !run.dependedOn[h.id] && run.w.r.memory.noASO(digest, vh) {
		h.ignored = "renders no ASO object (chart " + name + ", remembered by its digest)"
		return
	}
	h.docs, h.errs = run.render(ctx, h, r, vals)
	if len(h.errs) == 0 && h.waiting == "" {
		run.noteRendered(h, vh)
	}
}

// values composes a release's values as helm-controller does: the
// spec.valuesFrom ConfigMaps and Secrets (of the HelmRelease's namespace,
// from the repository) in order, each one's valuesKey (default
// values.yaml) merged in, or set at targetPath as helm --set would; then
// spec.values on top. The chart's defaults (values.yaml, or
// spec.chart.spec.valuesFiles) lie below when Helm coalesces them.
func (run *helmRun) values(h *helmRelease) (map[string]any, *diag.Error) {
	result := map[string]any{}
	ns := h.obj.Namespace()
	for i, ref := range h.spec.ValuesFrom {
		field := fmt.Sprintf("spec.valuesFrom[%d]", i)
		if ref.Kind != "ConfigMap" && ref.Kind != "Secret" {
			return nil, h.err(field+".kind", ErrHelmValues, "%q: want ConfigMap or Secret", ref.Kind)
		}
		o, ok := run.index.get(ref.Kind, ns, ref.Name)
		if !ok {
			if ref.Optional {
				continue
			}
			return nil, h.err(field+".name", ErrHelmValues, "no %s %s/%s in the repository (set optional: true if it may be absent)", ref.Kind, ns, ref.Name)
		}
		var data map[string]string
		var err error
		if ref.Kind == "Secret" {
			data, err = manifest.SecretData(o)
		} else {
			data, err = manifest.ConfigMapData(o)
		}
		if err != nil {
			return nil, h.err(field+".name", ErrHelmValues, "%s %s/%s (%s:%d): %v", ref.Kind, ns, ref.Name, o.File, o.Line, err)
		}
		key := ref.ValuesKey
		if key == "" {
			key = chartutil.ValuesfileName
		}
		v, ok := data[key]
		if !ok {
			if ref.Optional {
				continue
			}
			return nil, h.err(field+".valuesKey", ErrHelmValues, "%s %s/%s (%s:%d) has no key %q", ref.Kind, ns, ref.Name, o.File, o.Line, key)
		}
		from := "Secret " + ns + "/" + ref.Name
		if ref.TargetPath != "" {
			if err := replacePathValue(result, ref.TargetPath, v); err != nil {
				return nil, h.err(field+".targetPath", ErrHelmValues, "%q: %v", ref.TargetPath, err)
			}
			if ref.Kind == "Secret" && v != "" {
				h.secrets = appendSecrets(h.secrets, manifest.NewSecretValue(strings.Trim(v, `"'`), from))
			}
			continue
		}
		vals, err := chartutil.ReadValues([]byte(v))
		if err != nil {
			return nil, h.err(field, ErrHelmValues, "%s %s/%s key %q: %v", ref.Kind, ns, ref.Name, key, err)
		}
		if ref.Kind == "Secret" {
			h.secrets = appendSecrets(h.secrets, valueLeaves(vals, from)...)
		}
		result = mergeMaps(result, vals)
	}
	// spec.values as helm-controller sees them: through JSON (numbers are
	// float64, as in any values file Helm reads).
	var inline map[string]any
	if h.values != nil {
		b, err := json.Marshal(h.values)
		if err == nil {
			err = json.Unmarshal(b, &inline)
		}
		if err != nil {
			return nil, h.err("spec.values", ErrHelmValues, "%v", err)
		}
	}
	return mergeMaps(result, inline), nil
}

// replacePathValue sets value at a --set path (helm-controller's
// ReplacePathValue): a quoted value is a string, anything else is typed
// as helm --set types it.
func replacePathValue(values map[string]any, p, value string) error {
	if len(value) >= 2 && (value[0] == '"' && value[len(value)-1] == '"' || value[0] == '\'' && value[len(value)-1] == '\'') {
		return strvals.ParseIntoString(p+"="+strings.Trim(value, `"'`), values)
	}
	return strvals.ParseInto(p+"="+value, values)
}

// renderItem is one object Helm rendered.
type renderItem struct {
	template string // chart/templates/x.yaml
	hook     string // hook events, for kept hooks
	text     string
}

// render runs Helm's engine over a release's chart and values as
// helm-controller's install does and returns the objects' documents.
func (run *helmRun) render(ctx context.Context, h *helmRelease, r *resolved, vals map[string]any) ([]string, diag.List) {
	c := r.c
	h.version = c.Name() + "@" + c.Metadata.Version
	fail := func(field string, err error, format string, args ...any) ([]string, diag.List) {
		e := h.err(field, err, format, args...)
		if e.Msg == "" {
			e.Msg = fmt.Sprintf("HelmRelease %s, chart %s", h.id, h.version)
		} else {
			e.Msg = fmt.Sprintf("HelmRelease %s, chart %s: %s", h.id, h.version, e.Msg)
		}
		return nil, diag.List{e}
	}
	if c.Metadata.Type == "library" {
		return fail(r.field, ErrHelmChart, "library charts are not installable")
	}
	caps := run.caps
	if c.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(c.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return fail(r.field, ErrHelmRender, "chart requires kubeVersion: %s which is incompatible with Kubernetes %s (gitaso's --helm-kube-version)", c.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	if err := chartutil.ProcessDependenciesWithMerge(c, vals); err != nil {
		return fail("spec.values", ErrHelmRender, "dependencies: %v", err)
	}
	ns := h.releaseNamespace()
	opts := chartutil.ReleaseOptions{Name: h.releaseName(), Namespace: ns, Revision: 1, IsInstall: true}
	skipSchema := h.spec.Install != nil && h.spec.Install.DisableSchemaValidation
	rv, err := chartutil.ToRenderValuesWithSchemaValidation(c, vals, opts, caps, skipSchema)
	if err != nil {
		return fail("spec.values", ErrHelmRender, "%v", err)
	}
	lim := run.w.lim
	budget := run.w.pass.budget
	budget.starting(h.obj.File, "HelmRelease "+h.id)
	var afterApply error // a lookup of an object not applied yet (helm_lookup.go)
	files, err := helmtpl.Render(ctx, c, rv, helmtpl.Budget{MaxOutput: lim.MaxFileSize, MaxBytes: lim.MaxHelmBytes, MaxSteps: lim.MaxHelmSteps,
		Lookup: run.w.lookup(ctx, &afterApply)})
	if afterApply != nil {
		h.waiting, h.lookupWait = afterApply.Error(), true
		return nil, nil
	}
	if be := (*helmtpl.BoundError)(nil); errors.As(err, &be) {
		return fail(r.field, boundError(ctx, be, lim), "")
	}
	if err != nil {
		field := r.field
		if s := err.Error(); strings.Contains(s, "execution error") || strings.Contains(s, "executing") {
			field = "spec.values" // what the templates were given made them fail
		}
		return fail(field, ErrHelmRender, "%v", err)
	}
	var size int64
	for k, v := range files {
		if strings.HasSuffix(k, "NOTES.txt") {
			delete(files, k)
			continue
		}
		size += int64(len(v))
	}
	if size > lim.MaxFileSize {
		return fail(r.field, &source.LimitError{Limit: "file-size", Max: lim.MaxFileSize,
			What: fmt.Sprintf("the chart rendered %d bytes for this release", size)}, "")
	}
	if e := budget.addRendered(h.obj.File, "HelmRelease "+h.id, size); e != nil {
		return fail(r.field, e.Err, "")
	}
	items, skipped := splitRendered(files)
	for _, sk := range skipped {
		run.w.r.logger.Debug("helm hook skipped (it never runs on install or upgrade, or is deleted once it succeeded)",
			"helmRelease", h.id, "template", sk)
	}

	var texts []string
	var kustomized bool
	for i, p := range h.spec.PostRenderers {
		if p.Kustomize == nil {
			continue
		}
		if !kustomized {
			// The template travels through kustomize as an annotation.
			texts = make([]string, 0, len(items))
			for _, it := range items {
				t, err := setAnnotations(it.text, map[string]string{AnnotationHelmTemplate: it.template, AnnotationHelmHook: it.hook})
				if err != nil {
					return fail(r.field, ErrHelmRender, "%s: output is not YAML: %v", it.template, err)
				}
				if t != "" {
					texts = append(texts, t)
				}
			}
			kustomized = true
		}
		if len(texts) == 0 {
			break
		}
		texts, err = postRenderKustomize(texts, p.Kustomize)
		if err != nil {
			return fail(fmt.Sprintf("spec.postRenderers[%d].kustomize", i), ErrHelmRender, "%v", err)
		}
	}
	if kustomized {
		items = items[:0]
		for _, t := range texts {
			items = append(items, renderItem{text: t})
		}
	}

	ann := map[string]string{
		AnnotationHelmRelease: h.id,
		AnnotationHelmChart:   h.version,
	}
	if k := h.obj.Annotations()[AnnotationFluxKustomization]; k != "" {
		ann[AnnotationFluxKustomization] = k
	}
	origin := source.OriginComment(h.obj.File, h.obj.Line)
	out := make([]string, 0, len(items))
	var errs diag.List
	for _, it := range items {
		t, err := run.finish(h, it, ns, ann)
		if err != nil {
			tpl := it.template
			if tpl == "" {
				tpl = "post-rendered output"
			}
			errs = append(errs, h.err(r.field, ErrHelmRender, "HelmRelease %s, chart %s: %s: output is not YAML: %v", h.id, h.version, tpl, err))
			continue
		}
		if t != "" {
			out = append(out, origin+t)
		}
	}
	return out, errs
}

// splitRendered splits the engine's output into objects, as Helm's
// releaseutil.SortManifests does (partials and empty documents skipped),
// in template order; install and upgrade hooks kept (see keptHook) come
// first (pre-) or last (post-). skipped names the hooks dropped.
func splitRendered(files map[string]string) (items []renderItem, skipped []string) {
	var pre, post []renderItem
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(files[name]) == "" {
			continue
		}
		docs := releaseutil.SplitManifests(files[name])
		keys := slices.Collect(maps.Keys(docs))
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			text := docs[k]
			it := renderItem{template: name, text: text}
			if !strings.Contains(text, release.HookAnnotation) {
				items = append(items, it)
				continue
			}
			var head struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := sigyaml.Unmarshal([]byte(text), &head); err != nil {
				items = append(items, it) // finish reports it
				continue
			}
			a := head.Metadata.Annotations
			if a[release.HookAnnotation] == "" {
				items = append(items, it)
				continue
			}
			keep, events := keptHook(a[release.HookAnnotation], a[release.HookDeleteAnnotation])
			switch {
			case !keep:
				skipped = append(skipped, name)
			case strings.HasPrefix(events, "pre-"):
				it.hook = events
				pre = append(pre, it)
			default:
				it.hook = events
				post = append(post, it)
			}
		}
	}
	return append(append(pre, items...), post...), skipped
}

// keptHook decides what becomes of a Helm hook (its helm.sh/hook and
// helm.sh/hook-delete-policy annotations). helm-controller runs hooks
// around an install or upgrade and deletes them per their delete policy;
// gitaso has no "around": install and upgrade hooks become ordinary
// objects (so an ASO resource a chart creates in a pre-install hook
// exists), unless deleted once they succeed (hook-succeeded: a Job that
// runs once, not a resource to keep). Test, delete and rollback hooks never
// run on install or upgrade and are dropped.
func keptHook(hooks, deletePolicy string) (bool, string) {
	var events []string
	for _, e := range strings.Split(hooks, ",") {
		switch e = strings.TrimSpace(e); release.HookEvent(e) {
		case release.HookPreInstall, release.HookPostInstall, release.HookPreUpgrade, release.HookPostUpgrade:
			events = append(events, e)
		}
	}
	for _, p := range strings.Split(deletePolicy, ",") {
		if release.HookDeletePolicy(strings.TrimSpace(p)) == release.HookSucceeded {
			return false, ""
		}
	}
	if len(events) == 0 {
		return false, ""
	}
	return true, strings.Join(events, ",")
}

// clusterScoped are Kubernetes kinds without a namespace (Helm applies
// the others in the release namespace).
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"CustomResourceDefinition": true, "StorageClass": true, "PriorityClass": true, "IngressClass": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "APIService": true,
	"RuntimeClass": true, "CSIDriver": true, "CSINode": true, "VolumeAttachment": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// finish sets what helm-controller and gitaso set on each object: the
// release namespace when it has none, Flux's origin labels, gitaso's
// provenance annotations, and reconcile-policy: skip on ASO objects of a
// suspended release. "" for an empty document.
func (run *helmRun) finish(h *helmRelease, it renderItem, ns string, ann map[string]string) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(it.text), &doc); err != nil {
		return "", err
	}
	if len(doc.Content) == 0 {
		return "", nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return it.text, nil // the parser says what is wrong with it
	}
	kind := scalar(mapValue(root, "kind"))
	setNS := ""
	if meta := mapValue(root, "metadata"); scalar(mapValue(meta, "namespace")) == "" && !clusterScoped[kind] {
		setNS = ns
	}
	all := map[string]string{}
	if cm := h.spec.CommonMetadata; cm != nil {
		maps.Copy(all, cm.Labels)
	}
	all[helmLabelName], all[helmLabelNamespace] = h.obj.Name(), h.obj.Namespace()
	labels := make([][2]string, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		labels = append(labels, [2]string{k, all[k]})
	}
	all = maps.Clone(ann)
	if cm := h.spec.CommonMetadata; cm != nil {
		maps.Copy(all, cm.Annotations)
		maps.Copy(all, ann)
	}
	if it.template != "" {
		all[AnnotationHelmTemplate] = it.template
	}
	if it.hook != "" {
		all[AnnotationHelmHook] = it.hook
	}
	group := strings.SplitN(scalar(mapValue(root, "apiVersion")), "/", 2)[0]
	if h.suspended() && aso.IsASOGroup(group) && mapValue(mapValue(mapValue(root, "metadata"), "annotations"), aso.AnnotationReconcilePolicy) == nil {
		all[aso.AnnotationReconcilePolicy] = string(aso.ReconcilePolicySkip)
	}
	annotations := make([][2]string, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		annotations = append(annotations, [2]string{k, all[k]})
	}
	if out, ok := insertMetadata(it.text, root, setNS, labels, annotations); ok {
		return out, nil
	}

	// Anything but block-style metadata: set the fields and write the
	// document again.
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	mapping := func(parent *yaml.Node, key string) *yaml.Node {
		n := mapValue(parent, key)
		if n == nil || n.Kind != yaml.MappingNode {
			n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			setKey(parent, key, n)
		}
		return n
	}
	meta := mapping(root, "metadata")
	if setNS != "" {
		setKey(meta, "namespace", str(setNS))
	}
	l := mapping(meta, "labels")
	for _, kv := range labels {
		setKey(l, kv[0], str(kv[1]))
	}
	a := mapping(meta, "annotations")
	for _, kv := range annotations {
		setKey(a, kv[0], str(kv[1]))
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return "", err
	}
	_ = enc.Close()
	return b.String(), nil
}

// insertMetadata adds metadata fields to a document's text without writing
// it again (yaml.v3's encoder is most of a render's time): a namespace
// (unless ""), labels and annotations, each as a line inserted after the
// line of its mapping's key. ok is false, and the caller writes the
// document from its nodes, unless metadata, and labels and annotations
// where present, are non-empty block mappings that hold none of the keys.
func insertMetadata(text string, root *yaml.Node, ns string, labels, annotations [][2]string) (string, bool) {
	block := func(n *yaml.Node) bool {
		return n != nil && n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 && len(n.Content) >= 2 && n.Content[0].Line > 0
	}
	var metaKey *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "metadata" {
			metaKey = root.Content[i]
		}
	}
	meta := mapValue(root, "metadata")
	if root.Style&yaml.FlowStyle != 0 || metaKey == nil || !block(meta) || meta.Content[0].Line <= metaKey.Line {
		return "", false
	}
	type insertion struct {
		after int // line (1-based) after which the lines go
		lines []string
	}
	var ins []insertion
	indent := strings.Repeat(" ", meta.Content[0].Column-1)
	var top []string
	if ns != "" {
		top = append(top, indent+"namespace: "+quoteYAML(ns))
	}
	for _, f := range []struct {
		key string
		kvs [][2]string
	}{{"labels", labels}, {"annotations", annotations}} {
		var key *yaml.Node
		for i := 0; i+1 < len(meta.Content); i += 2 {
			if meta.Content[i].Value == f.key {
				key = meta.Content[i]
			}
		}
		if key == nil {
			top = append(top, indent+f.key+":")
			for _, kv := range f.kvs {
				top = append(top, indent+"  "+kv[0]+": "+quoteYAML(kv[1]))
			}
			continue
		}
		m := mapValue(meta, f.key)
		if !block(m) || m.Content[0].Line <= key.Line {
			return "", false
		}
		in := strings.Repeat(" ", m.Content[0].Column-1)
		var lines []string
		for _, kv := range f.kvs {
			if mapValue(m, kv[0]) != nil {
				return "", false
			}
			lines = append(lines, in+kv[0]+": "+quoteYAML(kv[1]))
		}
		ins = append(ins, insertion{after: key.Line, lines: lines})
	}
	if len(top) > 0 {
		ins = append(ins, insertion{after: metaKey.Line, lines: top})
	}
	var b strings.Builder
	b.Grow(len(text) + 512)
	line := 0
	rest := text
	for rest != "" || line == 0 {
		var l string
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i+1], rest[i+1:]
		} else {
			l, rest = rest+"\n", ""
		}
		line++
		b.WriteString(l)
		for _, in := range ins {
			if in.after == line {
				for _, x := range in.lines {
					b.WriteString(x)
					b.WriteByte('\n')
				}
			}
		}
		if rest == "" {
			break
		}
	}
	return b.String(), true
}

// quoteYAML writes a string as a YAML double-quoted scalar (JSON's string
// syntax is YAML's).
func quoteYAML(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// setAnnotations sets annotations (empty values skipped) on one document;
// "" for an empty document.
func setAnnotations(text string, ann map[string]string) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return "", err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return "", nil
	}
	root := doc.Content[0]
	meta := mapValue(root, "metadata")
	if meta == nil || meta.Kind != yaml.MappingNode {
		meta = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setKey(root, "metadata", meta)
	}
	a := mapValue(meta, "annotations")
	if a == nil || a.Kind != yaml.MappingNode {
		a = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setKey(meta, "annotations", a)
	}
	for _, k := range slices.Sorted(maps.Keys(ann)) {
		if ann[k] != "" {
			setKey(a, k, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ann[k]})
		}
	}
	b, err := yaml.Marshal(&doc)
	return string(b), err
}

// postRenderKustomize runs one spec.postRenderers[].kustomize over the
// rendered objects as helm-controller's Kustomize post-renderer does: a
// kustomization whose one resource is the output, with the patches
// (strategic merge or JSON 6902, with target), v2beta's
// patchesStrategicMerge and patchesJson6902, and images.
func postRenderKustomize(texts []string, pr *kustomizePostRenderer) ([]string, error) {
	fs := filesys.MakeFsInMemory()
	const input = "helm-output.yaml"
	if err := fs.WriteFile("/"+input, []byte(strings.Join(texts, "\n---\n"))); err != nil {
		return nil, err
	}
	kus := types.Kustomization{Resources: []string{input}, Images: pr.Images}
	kus.APIVersion, kus.Kind = types.KustomizationVersion, types.KustomizationKind
	kus.Patches = append(kus.Patches, pr.Patches...)
	for i, p := range pr.PatchesStrategicMerge {
		b, err := sigyaml.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("patchesStrategicMerge[%d]: %w", i, err)
		}
		kus.Patches = append(kus.Patches, types.Patch{Patch: string(b)})
	}
	for i, p := range pr.PatchesJSON6902 {
		b, err := json.Marshal(p.Patch)
		if err != nil {
			return nil, fmt.Errorf("patchesJson6902[%d]: %w", i, err)
		}
		tg := p.Target
		kus.Patches = append(kus.Patches, types.Patch{Patch: string(b), Target: &tg})
	}
	for i, p := range kus.Patches {
		if p.Path != "" {
			return nil, fmt.Errorf("patches[%d]: path %q: a post-renderer patch is inline (patch), never a file", i, p.Path)
		}
	}
	kb, err := sigyaml.Marshal(&kus)
	if err != nil {
		return nil, err
	}
	if err := fs.WriteFile("/kustomization.yaml", kb); err != nil {
		return nil, err
	}
	kustomizeMu.Lock()
	m, err := krusty.MakeKustomizer(&krusty.Options{
		Reorder:          krusty.ReorderOptionNone,
		LoadRestrictions: types.LoadRestrictionsRootOnly,
		PluginConfig:     types.DisabledPluginConfig(),
	}).Run(fs, "/")
	kustomizeMu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, m.Size())
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		out = append(out, string(y))
	}
	return out, nil
}

// valueLeaves returns the string values of a values document as secret
// values from from (a Secret's values.yaml: every string in it is secret).
func valueLeaves(v any, from string) []manifest.SecretValue {
	var out []manifest.SecretValue
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for _, e := range t {
				walk(e)
			}
		case chartutil.Values:
			for _, e := range t {
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		case string:
			if t != "" {
				out = append(out, manifest.NewSecretValue(t, from))
			}
		}
		// Numbers and booleans (replicas: 3, enabled: true) are left
		// out: masking every field holding "3" would hide the plan, and
		// they are hardly secrets.
	}
	walk(v)
	return out
}

// boundError turns a bound a chart's templates passed into the limit it
// stands for: the release's output is file-size, what its templates
// produce in all helm-bytes, their steps helm-steps, the render's deadline
// render-timeout; a cancelled render is ctx's error.
func boundError(ctx context.Context, be *helmtpl.BoundError, lim source.Limits) error {
	switch be.Limit {
	case "output":
		return &source.LimitError{Limit: "file-size", Max: lim.MaxFileSize, What: be.Error()}
	case "bytes":
		return &source.LimitError{Limit: "helm-bytes", Max: lim.MaxHelmBytes, What: be.Error()}
	case "steps":
		return &source.LimitError{Limit: "helm-steps", Max: lim.MaxHelmSteps, What: be.Error()}
	case "":
		if errors.Is(context.Cause(ctx), errRenderTimeout) {
			return &source.LimitError{Limit: "render-timeout", Max: int64(lim.RenderTimeout),
				What: be.Where + ": the templates were still running at the render deadline"}
		}
		return fmt.Errorf("%s: %w", be.Where, be.Err)
	}
	return fmt.Errorf("%w: %s", ErrHelmRender, be.Error())
}
