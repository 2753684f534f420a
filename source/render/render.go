package render

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// Options configures a Renderer. The zero value renders nothing (files pass
// through as they are); DefaultOptions turns kustomize builds on.
type Options struct {
	// Kustomize builds directories that hold a kustomization.yaml (see the
	// package documentation for which ones) instead of parsing their files.
	Kustomize bool
	// KustomizeDirs, when set, are the only kustomization directories built
	// (slash paths relative to the repository root, like file names in
	// errors). Files below any directory holding a kustomization file are
	// never parsed on their own either way.
	KustomizeDirs []string

	// Substitute turns Flux post-build substitution on (${VAR} and friends).
	Substitute bool
	// Vars are inline variables (Flux spec.postBuild.substitute); they
	// override variables read from SubstituteFrom.
	Vars map[string]string
	// SubstituteFrom names ConfigMaps and Secrets of the repository whose
	// data are variables (Flux spec.postBuild.substituteFrom); a later one
	// overrides an earlier one.
	SubstituteFrom []Ref
	// Repositories reads the other Git repositories that Kustomizations'
	// sourceRefs name (GitRepository objects of another URL, with their
	// secretRef credentials). Nil: such a Kustomization is refused.
	Repositories GitFetcher
	// Exported supplies the ConfigMaps and Secrets that gitaso's resources
	// export (operatorSpec), for SubstituteFrom and Flux's substituteFrom
	// naming one the repository does not hold. Nil: repository only.
	Exported ExportedData
	// AppConfig reads the ConfigMaps and Secrets it maps to Azure App
	// Configuration stores from those stores, for SubstituteFrom and Flux's
	// substituteFrom (see appconfig.go). Nil: none.
	AppConfig *AppConfig
	// Strict makes an unset variable without a default an error (Flux
	// --feature-gates=StrictPostBuildSubstitutions). Otherwise it becomes "".
	Strict bool

	// AgeIdentities decrypt SOPS-encrypted documents (Flux's
	// spec.decryption with provider sops, age keys): every document with a
	// top-level sops stanza is decrypted, and its MAC checked, before the
	// kustomize builds and substitution. Without identities such a document
	// is an error. See LoadAgeIdentities.
	AgeIdentities []age.Identity
	// PGPKeys decrypt SOPS documents encrypted for PGP keys (sops.pgp),
	// in process, as Flux's sops-gpg Secret does: keys with their private
	// part, without a passphrase. See LoadPGPKeys.
	PGPKeys openpgp.EntityList
	// KeyVault decrypts SOPS documents encrypted with Azure Key Vault keys
	// (sops.azure_kv) through Key Vault's data plane; nil: such a document
	// opens only with another of its keys. See NewAzureKeyVault.
	KeyVault SOPSKeyVault

	// Flux follows the kustomize.toolkit.fluxcd.io Kustomization objects
	// rendered from FluxPath, as Flux's kustomize-controller would (see
	// renderFlux in flux.go). The source must then read the whole
	// repository (source path ""): a Kustomization's spec.path is relative
	// to the repository root.
	//
	// Off by default (gitaso --flux), even when the files hold
	// Kustomizations (a log line then says they are ignored): turning it on
	// reads other directories than --path and can add many resources to a
	// plan, so a gitaso upgrade must not do it behind a repository's back;
	// and a repository may hold Kustomizations for the cluster's own
	// reconciler (gitaso reads the ASO part beside Flux) that gitaso should
	// not follow.
	Flux bool
	// FluxPath is the entry directory (gitaso --path) relative to the
	// repository root when Flux is on: only its files are rendered as
	// without Flux; other files are reached through Kustomizations only.
	FluxPath string
	// RepositoryURL is the URL of the repository read (gitaso --repo). A
	// Kustomization whose sourceRef names a GitRepository the repository
	// declares with a URL that is neither this one nor that of the
	// GitRepository of the Kustomization whose path is FluxPath (Flux's
	// flux-system) is refused: it reads another repository.
	RepositoryURL string

	// Lookup answers Helm's lookup function in charts (apiVersion, kind,
	// namespace, name; name "" lists): gitaso's reconciler answers ASO
	// objects it manages with their status (reconcile.Lookup). An error
	// wrapping ErrKnownAfterApply makes the release wait (its unit
	// DependencyNotReady, rendered again once the object exists); nil
	// answers every lookup with an empty map, as helm template does.
	Lookup func(ctx context.Context, apiVersion, kind, namespace, name string) (map[string]any, error)
	// SkipReleases are namespace/name patterns (path.Match) of
	// HelmReleases gitaso neither fetches nor renders (gitaso
	// --skip-release); the annotation gitaso.io/skip: "true" does the same
	// for one release (helm_ignore.go).
	SkipReleases []string
	// ReleaseMemory is the file that remembers the releases that render
	// no ASO object, by chart digest and values, so that they are neither
	// rendered again nor failed when their registry does not answer; ""
	// remembers nothing (helm_ignore.go).
	ReleaseMemory string

	// Charts fetches the charts of HelmReleases that are not in the
	// repository (Helm repositories, OCI registries, other Git
	// repositories); nil refuses such a release (see helm.go).
	Charts ChartFetcher
	// OnChart, when set, is called for every chart a render resolved from
	// outside the repository, so that a new chart version can make a new
	// revision. It is called from Render's goroutine, after the releases
	// rendered.
	OnChart func(ChartUse)
	// KubeVersion is the Kubernetes version charts see in
	// .Capabilities.KubeVersion ("v1.31.0"); "" is DefaultKubeVersion.
	KubeVersion string
	// HelmAPIVersions are added to the API versions charts see in
	// .Capabilities.APIVersions ("group/version" or "group/version/Kind").
	HelmAPIVersions []string

	// Logger receives one debug line per render; nil discards.
	Logger *slog.Logger

	// Limits bound the input (zero fields take their defaults, see
	// source.Limits). Render expects files within them: source.Build (and
	// so every Git and directory source) checks them with
	// source.CheckFiles before the render stage sees them; a caller of
	// Render should do the same. Render checks what it decrypts again, and
	// refuses a kustomization whose files hold more than
	// Limits.MaxKustomizeObjects documents.
	Limits source.Limits
}

// DefaultOptions builds kustomizations and does not substitute.
func DefaultOptions() Options { return Options{Kustomize: true} }

// Renderer is the render stage of a source: kustomize builds, then Flux
// post-build substitution. It implements source.Renderer and is safe for
// concurrent use.
type Renderer struct {
	opts   Options
	vars   Vars
	logger *slog.Logger
	hinted atomic.Bool // fluxHint logged
	// deprecated remembers the kustomization files whose deprecation
	// warnings were logged.
	deprecated deprecationLog
	// memory remembers the releases that render no ASO object
	// (helm_ignore.go); nil without Options.ReleaseMemory.
	memory *releaseMemory
	// ignoredLogged is the last list of ignored releases logged.
	ignoredLogged atomic.Value
}

var _ source.Renderer = (*Renderer)(nil)

// New checks the options and returns a Renderer. Inline variable names must
// be valid Flux variable names.
func New(opts Options) (*Renderer, error) {
	vars := make(Vars, len(opts.Vars))
	for k, v := range opts.Vars {
		if !ValidName(k) {
			return nil, fmt.Errorf("substitute: %q is not a valid variable name (letters, digits and '_', not starting with a digit)", k)
		}
		vars[k] = cleanValue(v)
	}
	for _, r := range opts.SubstituteFrom {
		if r.Name == "" {
			return nil, fmt.Errorf("substitute-from: empty name")
		}
		if r.Kind != "" && r.Kind != "ConfigMap" && r.Kind != "Secret" {
			return nil, fmt.Errorf("substitute-from %s: kind must be ConfigMap or Secret", r)
		}
	}
	for _, p := range opts.SkipReleases {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("skip-release %q: %w", p, err)
		}
	}
	r := &Renderer{opts: opts, vars: vars, memory: newReleaseMemory(opts.ReleaseMemory)}
	if _, err := r.capabilities(); err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r.logger = logger
	return r, nil
}

// ParseVars reads NAME=VALUE pairs (as given to --substitute) into a map.
func ParseVars(pairs []string) (map[string]string, error) {
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("substitute %q: want NAME=VALUE", p)
		}
		if !ValidName(k) {
			return nil, fmt.Errorf("substitute %q: %q is not a valid variable name (letters, digits and '_', not starting with a digit)", p, k)
		}
		out[k] = v
	}
	return out, nil
}

// unit is one piece of rendered output: a raw file's document or a
// kustomize build's object.
type unit struct {
	file      string
	line      int // first line of the document; 0 in generated text
	generated bool
	id        string // object ID when known (kustomize output)
	text      string
	// reported are the "file:line" of the document's unset variables,
	// reported; it was rendered leniently so that the rest can be checked.
	reported []string
	// secrets are the values from Secrets substituted into it.
	secrets []manifest.SecretValue
}

// Render implements source.Renderer: it builds kustomizations, substitutes
// variables and returns the files to parse. Every problem of every file is
// returned together as a diag.List.
//
// The render has a deadline (Limits.RenderTimeout) and per-revision
// budgets (Limits.MaxTotalKustomizeObjects, MaxKustomizeNodes,
// MaxRenderedSize): a revision that passes one is refused with an error
// naming the kustomization or HelmRelease and the limit.
//
// A Flux Kustomization or HelmRelease that did not render refuses the
// revision here (its errors are returned with the others): RenderUnits
// lists it as a failed unit instead.
func (r *Renderer) Render(ctx context.Context, files []source.File) ([]source.File, error) {
	out, units, err := r.renderUnits(ctx, newPass(r.opts.Limits.WithDefaults(), false), files)
	if es := source.UnitErrors(units); len(es) > 0 {
		var pe *source.PartialRenderError
		if errors.As(err, &pe) {
			es = append(es, pe.Errors...)
		}
		return nil, es
	}
	return out, err
}

// renderUnits renders files as pass p and returns the Flux units found
// (see RenderUnits), sorted by ID.
func (r *Renderer) renderUnits(ctx context.Context, p *pass, files []source.File) ([]source.File, []manifest.Unit, error) {
	rctx, cancel := p.budget.withDeadline(ctx)
	defer cancel()
	var out []source.File
	var units []manifest.Unit
	var err error
	if r.opts.Flux {
		out, units, err = r.renderFlux(rctx, p, files)
	} else {
		r.fluxHint(files)
		out, err = r.render(rctx, p, files)
	}
	slices.SortFunc(units, func(a, b manifest.Unit) int { return strings.Compare(a.ID(), b.ID()) })
	return out, units, timeoutError(ctx, rctx, p.budget, err)
}

// render renders files without following Flux Kustomizations, as part of
// pass p.
func (r *Renderer) render(ctx context.Context, p *pass, files []source.File) ([]source.File, error) {
	start := time.Now()
	var out []source.File
	// groups[i] are the units of out[i], substituted in place.
	var groups [][]unit

	// SOPS first: the MAC is checked on each file as it is in Git, and
	// kustomize and substitution see the cleartext.
	lim := r.opts.Limits.WithDefaults()
	files, decrypted, errs := r.decrypt(ctx, files, lim)
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	t := newTree(files)
	byPath := make(map[string][]byte, len(files))
	for _, f := range files {
		byPath[f.Path] = f.Data
	}
	var roots []string
	if r.opts.Kustomize {
		var es diag.List
		roots, es = t.roots(r.opts.KustomizeDirs)
		errs = append(errs, es...)
	}
	charts := chartDirs(files)
	for _, f := range files {
		if r.opts.Kustomize && t.inKustomizeTree(f.Path) || inChart(charts, f.Path) {
			continue // kustomize decides what of it is used; a chart's files are not manifests
		}
		out = append(out, f)
		groups = append(groups, nil)
	}
	built := 0
	if len(roots) > 0 {
		fs := filesys.MakeFsInMemory()
		for _, f := range files {
			if err := fs.WriteFile("/"+f.Path, f.Data); err != nil {
				errs = append(errs, &diag.Error{File: f.Path, Msg: "cannot load into kustomize", Err: err})
			}
		}
		for _, kf := range t.kfiles {
			r.warnDeprecated(kf, byPath[kf], fixDeprecated(fs, kf, byPath[kf], func(p string) bool { return t.files[p] }))
		}
		// Every build's input is checked, and counted against the
		// revision's limits, before any build runs (builds take minutes
		// at the limits).
		checked := make(map[string]bool, len(roots))
		for _, dir := range roots {
			kf := t.kfiles[dir]
			reached := map[string]bool{}
			if es := t.checkRefs(dir, func(p string) []byte { return byPath[p] }, map[string]bool{}, reached); len(es) > 0 {
				errs = append(errs, es...)
				continue
			}
			if es := checkBuildInput(p.budget, kf, reached, byPath, lim); len(es) > 0 {
				errs = append(errs, es...)
				continue
			}
			checked[dir] = true
		}
		for _, dir := range roots {
			if err := ctx.Err(); err != nil {
				if len(errs) > 0 {
					return nil, errs // a build abandoned at the deadline names its kustomization
				}
				return nil, err
			}
			if !checked[dir] || slices.ContainsFunc(errs, func(e *diag.Error) bool { return errors.Is(e, source.ErrLimit) }) {
				continue // refused anyway for a limit: no build of minutes to find more errors
			}
			kf := t.kfiles[dir]
			objs, derr := kustomizeBuildCtx(ctx, p.budget, fs, dir, kf)
			if derr != nil {
				errs = append(errs, derr)
				continue
			}
			units := make([]unit, len(objs))
			for i, o := range objs {
				units[i] = unit{file: kf, generated: true, id: o.id, text: o.yaml}
			}
			built += len(objs)
			out = append(out, source.File{Path: kf, Generated: true})
			groups = append(groups, units)
		}
	}
	if !r.opts.Substitute {
		if len(errs) > 0 {
			return nil, errs
		}
		for i := range out {
			if out[i].Generated {
				out[i].Data = join(groups[i])
			}
		}
		r.logger.Debug("rendered", "files", len(files), "kustomizations", len(roots), "built", built, "decrypted", decrypted, "duration", time.Since(start))
		return out, nil
	}

	// Split raw files into documents; find the variable sources.
	var cands []candidate
	for i, f := range out {
		if !f.Generated && slices.Contains(kustomizationNames, path.Base(f.Path)) {
			continue // build instructions (kustomize off), not objects: never substituted
		}
		if !f.Generated {
			for _, d := range splitDocuments(f.Data) {
				groups[i] = append(groups[i], unit{file: f.Path, line: d.line, text: d.text})
			}
		}
		for _, u := range groups[i] {
			cands = append(cands, candidate{file: u.file, line: u.line, generated: u.generated, text: u.text})
		}
	}
	var pending []Ref
	pendingOut := &pending
	if p.sources == nil {
		pendingOut = nil // nobody would hear of it: a missing source stays an error
	}
	vars, secret, es := loadVars(r.opts.SubstituteFrom, cands, r.vars, r.exportedFor(p.sources), pendingOut, r.storesFor(ctx, p.sources))
	errs = append(errs, es...)
	for _, ref := range pending {
		p.sources.add(pendingExternal(ref, "--substitute-from"))
	}
	deferring := len(pending) > 0
	if len(errs) > 0 {
		return nil, errs
	}

	// Substitute every document on all CPUs; each goroutine writes its own slots.
	perFile := make([]diag.List, len(out))
	var failed atomic.Bool // an error that stops the revision's rendering
	workers := min(runtime.GOMAXPROCS(0), len(out))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(out) || ctx.Err() != nil {
					return
				}
				for j := range groups[i] {
					u := &groups[i][j]
					if disabled(u.text) {
						continue
					}
					u.secrets = secretsUsed(u.text, vars, secret)
					s, err := substitute(u.file, u.line, u.text, vars, r.opts.Strict, deferring)
					if err != nil {
						de := err.(*diag.Error)
						if u.generated {
							de.Line = 0
						}
						if de.Object = u.id; de.Object == "" {
							de.Object = docID(u.text)
						}
						if errors.Is(de, ErrUnsetVariable) && !u.generated {
							// Every unset variable of the document is an
							// error; the document goes on as Flux without
							// strict renders it, so that the rest of the
							// revision is checked too (the errors that
							// follow on those lines are these).
							all := unsetAll(u.file, u.line, u.text, vars)
							s, err := substitute(u.file, u.line, u.text, vars, false, deferring)
							if len(all) > 0 && err == nil {
								for _, e := range all {
									e.Object = de.Object
									perFile[i] = append(perFile[i], e)
									u.reported = append(u.reported, fmt.Sprintf("%s:%d", e.File, e.Line))
								}
								u.text = s
								continue
							}
						}
						perFile[i] = append(perFile[i], de)
						failed.Store(true)
						continue
					}
					u.text = s
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, l := range perFile {
		errs = append(errs, l...)
	}
	if len(errs) > 0 && failed.Load() {
		return nil, errs
	}
	var reported []string
	for i := range out {
		if groups[i] != nil {
			out[i].Data = join(groups[i])
		}
		for _, u := range groups[i] {
			reported = append(reported, u.reported...)
			out[i].Secrets = appendSecrets(out[i].Secrets, u.secrets...)
		}
	}
	if len(errs) > 0 {
		// Only unset variables: every other document is checked with them.
		return out, &source.PartialRenderError{Errors: errs, Reported: reported}
	}
	r.logger.Debug("rendered", "files", len(files), "kustomizations", len(roots), "built", built,
		"variables", len(vars), "decrypted", decrypted, "duration", time.Since(start))
	return out, nil
}

// appendSecrets adds the secret values of add that dst does not hold yet.
func appendSecrets(dst []manifest.SecretValue, add ...manifest.SecretValue) []manifest.SecretValue {
	for _, a := range add {
		if !slices.Contains(dst, a) {
			dst = append(dst, a)
		}
	}
	return dst
}

// join concatenates units back into one file: raw documents carry their own
// "---" lines; generated objects are separated by "---".
func join(units []unit) []byte {
	var b strings.Builder
	for i, u := range units {
		if u.generated && i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(u.text)
		if u.generated && !strings.HasSuffix(u.text, "\n") {
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// checkBuildInput refuses a kustomization whose files (the resources it
// and the kustomizations it includes list) hold more documents together
// than lim.MaxKustomizeObjects, because kustomize's build time grows with
// the square of the number of objects (each one added is compared with
// every one before it: hours for 100,000), or more YAML nodes together than
// lim.MaxNodes, because kustomize keeps several copies of each (about 650
// bytes a node, five times what the parser keeps). Nodes are counted with
// aliases expanded, as kustomize expands them, even in files without an
// anchor (which source.CheckFiles does not decode).
//
// The documents and nodes count towards the revision's budget b too
// (total-kustomize-objects, kustomize-nodes).
func checkBuildInput(b *revisionBudget, kfile string, files map[string]bool, data map[string][]byte, lim source.Limits) diag.List {
	paths := slices.Sorted(maps.Keys(files))
	docs := 0
	for _, p := range paths {
		for _, d := range splitDocuments(data[p]) {
			if hasContent(d.text) {
				docs++
			}
		}
	}
	if docs > lim.MaxKustomizeObjects {
		return diag.List{{File: kfile, Err: &source.LimitError{Limit: "kustomize-objects", Max: int64(lim.MaxKustomizeObjects),
			What: fmt.Sprintf("the files this kustomization reaches hold %d documents (kustomize's build time grows with the square of it)", docs)}}}
	}
	var nodes int64
	for _, p := range paths {
		n, err := source.MeasureFile(source.File{Path: p, Data: data[p]}, lim)
		if err != nil {
			return diag.AsList(err)
		}
		if nodes += n; nodes > lim.MaxNodes {
			return diag.List{{File: kfile, Err: &source.LimitError{Limit: "yaml-nodes", Max: lim.MaxNodes,
				What: fmt.Sprintf("the files this kustomization reaches hold more than %d YAML nodes together (kustomize keeps about 650 bytes a node)", lim.MaxNodes)}}}
		}
	}
	if e := b.addBuild(kfile, docs, nodes); e != nil {
		return diag.List{e}
	}
	return nil
}

// hasContent reports whether a document holds anything but blank lines,
// comments and its "---" marker.
func hasContent(text string) bool {
	for l := range strings.Lines(text) {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "---") && isDocStart([]byte(l)) {
			t = strings.TrimSpace(t[3:])
		}
		if t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}
