package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// Source produces snapshots: a Git branch (Git) or a local directory (Dir).
type Source interface {
	Fetch(ctx context.Context) (*manifest.Snapshot, error)
}

// File is one input file of a snapshot.
type File struct {
	Path string // slash path relative to the repository root
	Data []byte
	// Generated marks text a Renderer built from other files, such as the
	// output of a kustomize build named after its kustomization.yaml. It is
	// parsed even when Path names a kustomization file, and since its lines
	// are not lines of the file at Path, its objects and errors carry the
	// file and line of the origin comment (OriginComment) before their
	// document, or else Line 0 (Index is the position in the generated text).
	Generated bool
	// Secrets are the values a Renderer took from Secrets and placed in
	// the file (substitution): each object parsed from it that holds one
	// records it (manifest.Object.Secrets), so that it is masked wherever
	// the object is shown or stored.
	Secrets []manifest.SecretValue
}

// Renderer is the render stage between reading files and parsing them
// (kustomize builds, Flux ${VAR} substitution, SOPS decryption, Helm
// charts). It receives every *.yaml/*.yml file below the source path and
// every file of a Helm chart directory below it (see ChartFile), sorted by
// path, and returns the files to parse. Only *.yaml/*.yml files (and
// Generated ones) among those it returns are parsed; a renderer must leave
// out the *.yaml templates of charts itself. Returned paths should stay relative to the repository
// root so that errors point at files a user can open. A nil Renderer parses
// the files as they are.
type Renderer interface {
	Render(ctx context.Context, files []File) ([]File, error)
}

// SourcesRenderer is a Renderer whose output may depend on sources outside
// the repository, such as Helm charts from registries: RenderSources also
// returns them, and Build records them in Snapshot.External and folds them
// into the revision (ExternalRevision). A Git source renders a commit again
// on every poll while its snapshot has external sources.
type SourcesRenderer interface {
	Renderer
	RenderSources(ctx context.Context, files []File) ([]File, []manifest.External, error)
}

// RevisionError is returned by Fetch when the commit (or directory content)
// at Revision cannot be used: every problem is in Errors, and nothing of the
// revision must be applied. diag.AsList(err) finds Errors.
type RevisionError struct {
	Revision string
	Errors   diag.List
	// Parsed holds the objects of the files that did parse, so that a
	// caller can report their problems together with these.
	Parsed []manifest.Object
	// Reported are the "file:line" of problems already in Errors (unset
	// variables): an error about a field on such a line follows from it
	// and is not reported again (DropReported).
	Reported []string
	// Texts are the files Parsed came from (see manifest.Snapshot.Texts),
	// for LocateFields.
	Texts manifest.Texts
}

// PartialRenderError is a Renderer's answer when some documents have input
// errors (Errors) that do not stop the others: it returns its files too,
// the documents named in Reported rendered leniently, so that the rest of
// the revision is checked with them and every problem is reported at once.
// The revision is refused all the same.
type PartialRenderError struct {
	Errors   diag.List
	Reported []string // "file:line" of the problems in Errors, see RevisionError.Reported
}

func (e *PartialRenderError) Error() string { return e.Errors.Error() }

// Unwrap returns the diag.List.
func (e *PartialRenderError) Unwrap() error { return e.Errors }

// Error lists every problem, one per line, after a heading naming the revision.
func (e *RevisionError) Error() string {
	return fmt.Sprintf("revision %s refused (%d errors):\n%s", e.Revision, len(e.Errors), e.Errors.Error())
}

// Unwrap returns the diag.List.
func (e *RevisionError) Unwrap() error { return e.Errors }

// PathNotFoundError is returned by Fetch when the source path does not exist
// (or is not a directory) at a revision: in Git mode the commit SHA, in
// directory mode DirRevision(nil). A caller should keep what it applied
// rather than treat the revision as empty (which would delete everything).
// errors.Is(err, ErrPathNotFound) holds. Not retryable until the commit or
// the path changes.
type PathNotFoundError struct {
	Revision string
	Path     string // the source path, a clean slash path relative to the root
}

// Error names the path and the revision.
func (e *PathNotFoundError) Error() string {
	return fmt.Sprintf("%v: %q at %s", ErrPathNotFound, e.Path, e.Revision)
}

// Unwrap returns ErrPathNotFound.
func (e *PathNotFoundError) Unwrap() error { return ErrPathNotFound }

// ChartFile names a Helm chart directory: every regular file below a
// directory holding one (templates/*.tpl, .helmignore, NOTES.txt, ...) is
// read for the renderer, within the same limits as the manifests; without a
// Renderer only the *.yaml/*.yml files among them are parsed, as before.
// Hidden directories stay skipped.
const ChartFile = "Chart.yaml"

// IsYAMLFile reports whether a file name is read as manifests: *.yaml or *.yml.
func IsYAMLFile(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// isKustomization reports whether a file is a kustomize build file, which
// describes how to build objects and is not an object itself.
func isKustomization(name string) bool {
	switch path.Base(name) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}

// hiddenDir reports whether a directory is skipped while listing (.git,
// .github, ...).
func hiddenDir(name string) bool { return strings.HasPrefix(name, ".") && name != "." && name != ".." }

// Build renders, parses and classifies files into a Snapshot at revision. It
// collects every problem of every file; when there is any, it returns a
// *RevisionError and no snapshot. The files must be within DefaultLimits;
// with a Renderer they are checked (CheckFiles) before it sees them.
func Build(ctx context.Context, revision string, files []File, r Renderer) (*manifest.Snapshot, error) {
	return BuildWithLimits(ctx, revision, files, r, DefaultLimits())
}

// BuildWithLimits is Build with limits (zero fields take their defaults).
func BuildWithLimits(ctx context.Context, revision string, files []File, r Renderer, lim Limits) (*manifest.Snapshot, error) {
	lim = lim.WithDefaults()
	files = slices.Clone(files)
	var external []manifest.External
	var units []manifest.Unit
	var partial *PartialRenderError
	// The files as the user wrote them: objects (kustomize and Flux output
	// too, through their origin) carry lines of these.
	texts := make(manifest.TextMap, len(files))
	for _, f := range files {
		if !f.Generated {
			texts[f.Path] = f.Data
		}
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	if r != nil {
		// Every byte a renderer's decoders (kyaml, SOPS) see is checked
		// first; the parser checks the rendered text again.
		if err := CheckFiles(ctx, files, lim); err != nil {
			if l := diag.AsList(err); l != nil {
				return nil, &RevisionError{Revision: revision, Errors: l.Sorted()}
			}
			return nil, err
		}
		var err error
		switch rr := r.(type) {
		case UnitsRenderer:
			var res *Rendered
			if res, err = rr.RenderUnits(ctx, files); res != nil {
				files, external, units = res.Files, res.External, res.Units
			} else {
				files = nil
			}
		case SourcesRenderer:
			files, external, err = rr.RenderSources(ctx, files)
		default:
			files, err = r.Render(ctx, files)
		}
		if pe := (*PartialRenderError)(nil); errors.As(err, &pe) && files != nil {
			partial, err = pe, nil
		}
		if err != nil {
			var missing *PathNotFoundError
			if errors.As(err, &missing) && missing.Revision == "" {
				// A renderer (Flux's entry path) does not know the revision.
				missing.Revision = revision
			}
			if l := diag.AsList(err); l != nil && missing == nil && ctx.Err() == nil {
				// The commit's input errors (YAML, kustomize, substitution,
				// SOPS): the revision is refused like a parse error, so
				// that it is a run with its revision, not a failure of
				// every poll.
				return nil, &RevisionError{Revision: revision, Errors: l.Sorted()}
			}
			return nil, fmt.Errorf("render revision %s: %w", revision, err)
		}
		slices.SortStableFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	} else {
		var size int64
		for _, f := range files {
			if size += int64(len(f.Data)); size > lim.MaxTotalSize {
				return nil, &RevisionError{Revision: revision, Errors: diag.List{totalSizeError(f.Path, lim.MaxTotalSize)}}
			}
		}
	}
	parsed, err := parseAll(ctx, files, lim, 0)
	if err != nil {
		return nil, err
	}
	if e := totalNodesError(parsed, func(i int) string { return files[i].Path }, lim); e != nil {
		return nil, &RevisionError{Revision: revision, Errors: diag.List{e}}
	}
	snap, err := assembleUnits(revision, parsed, units)
	if re := (*RevisionError)(nil); errors.As(err, &re) {
		re.Texts = texts
	}
	if partial != nil {
		// Refused with the render's errors and the others it let be found.
		re := &RevisionError{Revision: revision, Reported: partial.Reported, Texts: texts}
		errs := slices.Clone(partial.Errors)
		if snap != nil {
			re.Parsed = snap.Objects
		} else if prev := (*RevisionError)(nil); errors.As(err, &prev) {
			re.Parsed = prev.Parsed
			errs = append(errs, prev.Errors...)
		} else if err != nil {
			return nil, err
		}
		LocateFields(errs, texts)
		re.Errors = DropReported(errs, partial.Reported).Sorted()
		return nil, re
	}
	if snap != nil {
		snap.Texts = texts
		snap.Units = locateUnits(snap.Units, texts)
	}
	if err != nil || len(external) == 0 {
		return snap, err
	}
	snap.External = external
	snap.Revision = ExternalRevision(revision, external)
	return snap, nil
}

// ExternalRevision is the revision of a commit whose objects also depend on
// sources outside the repository: the commit's, "+", and the first 12 hex
// digits of a sha256 over the sources (sorted), so that a new chart version
// is a new revision and the same charts give the same one.
func ExternalRevision(commit string, external []manifest.External) string {
	h := sha256.New()
	for _, e := range external {
		for _, f := range []string{e.Kind, e.User, e.Name, e.Version, e.Digest} {
			h.Write([]byte(f))
			h.Write([]byte{0})
		}
	}
	return commit + "+" + hex.EncodeToString(h.Sum(nil))[:12]
}

// assemble classifies and checks parsed files (in path order) into a snapshot.
func assemble(revision string, parsed []parseResult) (*manifest.Snapshot, error) {
	return assembleUnits(revision, parsed, nil)
}

// assembleUnits is assemble for a render that found units: an object's
// error (its name, its data, ...) fails the unit it belongs to rather than
// the revision (failUnits), and the snapshot lists the units.
func assembleUnits(revision string, parsed []parseResult, units []manifest.Unit) (*manifest.Snapshot, error) {
	snap := &manifest.Snapshot{Revision: revision, Units: units}
	var errs diag.List
	known := make(map[string]bool, len(units))
	for _, u := range units {
		known[u.ID()] = true
	}
	unitErrs := map[string]diag.List{}
	// objectErrs adds errors of o: to its unit's when it has one.
	objectErrs := func(o manifest.Object, es ...*diag.Error) {
		if id := manifest.UnitOf(o); known[id] {
			unitErrs[id] = append(unitErrs[id], es...)
			return
		}
		errs = append(errs, es...)
	}
	type seenAt struct {
		file string
		line int
	}
	n := 0
	for _, p := range parsed {
		n += len(p.objs)
	}
	seen := make(map[string]seenAt, n)
	if n > 0 {
		snap.Objects = make([]manifest.Object, 0, n)
	}
	for _, p := range parsed {
		objs, err := p.objs, p.err
		if err != nil {
			if l := diag.AsList(err); l != nil {
				errs = append(errs, l...)
				continue
			}
			return nil, err
		}
		for _, o := range objs {
			g := o.Group()
			switch {
			case g == "kustomize.config.k8s.io":
				continue
			case aso.IsASOGroup(o.Group()), o.IsConfigMap(), o.IsSecret():
			default:
				snap.Ignored = append(snap.Ignored, o)
				continue
			}
			if es := validateNames(o); len(es) > 0 {
				objectErrs(o, es...)
				continue
			}
			key := o.Namespace() + "/" + g + "/" + o.Kind() + "/" + o.Name()
			if prev, dup := seen[key]; dup {
				errs = append(errs, &diag.Error{File: o.File, Line: o.Line, Object: o.ID(),
					Msg: fmt.Sprintf("defined twice (also at %s:%d)", prev.file, prev.line)})
				continue
			}
			seen[key] = seenAt{o.File, o.Line}
			switch {
			case o.IsSecret():
				if _, err := manifest.SecretData(o); err != nil {
					objectErrs(o, diag.AsList(err)...)
					continue
				}
			case o.IsConfigMap():
				if _, err := manifest.ConfigMapData(o); err != nil {
					objectErrs(o, diag.AsList(err)...)
					continue
				}
			}
			snap.Objects = append(snap.Objects, o)
		}
	}
	if len(unitErrs) > 0 {
		failUnits(snap, unitErrs)
	}
	if len(snap.Objects) == 0 {
		snap.Objects = nil // as before it was sized
	}
	if len(errs) > 0 {
		return nil, &RevisionError{Revision: revision, Errors: errs.Sorted(), Parsed: snap.Objects}
	}
	return snap, nil
}

var (
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dnsLabelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	kindRE         = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
)

// validateNames checks names as the Kubernetes API server would for the
// objects gitaso keeps: metadata.name is a DNS subdomain, metadata.namespace a
// DNS label, kind an identifier. IDs ("namespace/Kind/name") rely on it.
func validateNames(o manifest.Object) diag.List {
	var errs diag.List
	fail := func(field, msg string) {
		errs = append(errs, &diag.Error{File: o.File, Line: o.Line, Object: o.ID(), Field: field, Msg: msg})
	}
	if name := o.Name(); len(name) > 253 || !dnsSubdomainRE.MatchString(name) {
		fail("metadata.name", fmt.Sprintf("%q is not a valid name: lower case letters, digits, '-' and '.', at most 253 characters, starting and ending with a letter or digit", name))
	}
	if ns := stringOf(o.Metadata()["namespace"]); ns != "" && (len(ns) > 63 || !dnsLabelRE.MatchString(ns)) {
		fail("metadata.namespace", fmt.Sprintf("%q is not a valid namespace: lower case letters, digits and '-', at most 63 characters, starting and ending with a letter or digit", ns))
	}
	if !kindRE.MatchString(o.Kind()) {
		fail("kind", fmt.Sprintf("%q is not a valid kind", o.Kind()))
	}
	return errs
}

// parseResult is ParseFile's answer for one file (zero for files that are
// not parsed, such as kustomization.yaml).
type parseResult struct {
	objs   []manifest.Object
	err    error
	nodes  int64 // YAML nodes, aliases expanded
	size   int64 // bytes (Git's cache: counted towards the total without reading)
	parsed bool  // false: skipped (not YAML to parse, or the total was exceeded)
}

// parseAll parses files on all CPUs; each goroutine writes its own slots.
// base is the number of YAML nodes of the revision's files not in files
// (parsed before): once the total exceeds lim.MaxTotalNodes, the remaining
// files are skipped (see totalNodesError).
func parseAll(ctx context.Context, files []File, lim Limits, base int64) ([]parseResult, error) {
	out := make([]parseResult, len(files))
	workers := min(runtime.GOMAXPROCS(0), len(files))
	var next, total atomic.Int64
	total.Store(base)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) || ctx.Err() != nil || total.Load() > lim.MaxTotalNodes {
					return
				}
				f := files[i]
				if (isKustomization(f.Path) || !IsYAMLFile(f.Path)) && !f.Generated {
					continue // build instructions, or a chart's other files
				}
				r := &out[i]
				if f.Generated {
					r.objs, r.nodes, r.err = parseGenerated(f.Path, f.Data, lim)
				} else {
					r.objs, r.nodes, r.err = parseFile(f.Path, f.Data, lim)
				}
				r.parsed = true
				if len(f.Secrets) > 0 {
					attachSecrets(r.objs, f.Secrets)
				}
				total.Add(r.nodes)
			}
		})
	}
	wg.Wait()
	return out, ctx.Err()
}

// totalNodesError returns the error for a revision whose files hold more
// YAML nodes together than lim.MaxTotalNodes, naming the file (in path
// order) at which the total passes it (name returns the path of parsed[i]);
// nil when within the limit. It is the revision's only error then:
// reported once, not once per file.
func totalNodesError(parsed []parseResult, name func(i int) string, lim Limits) *diag.Error {
	var total int64
	for i, p := range parsed {
		if total += p.nodes; total > lim.MaxTotalNodes {
			return &diag.Error{File: name(i), Err: &LimitError{Limit: "total-yaml-nodes", Max: lim.MaxTotalNodes,
				What: "the files read up to this one hold more YAML nodes together than the limit"}}
		}
	}
	return nil
}

// cleanPath validates a sub-path inside the repository and returns it as a
// clean slash path, "" for the root.
func cleanPath(p string) (string, error) {
	p = strings.ReplaceAll(p, "\\", "/")
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q must be relative to the repository root", p)
	}
	c := path.Clean("/" + p)[1:]
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", fmt.Errorf("path %q must not contain \"..\"", p)
		}
	}
	return c, nil
}

func sortedFiles(files []File) []File {
	if slices.IsSortedFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) }) {
		return files
	}
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return files
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}
