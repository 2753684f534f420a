// Package source turns a Git branch (or a local directory) of Azure Service
// Operator manifests into a Snapshot: the revision it was read at and every
// object it holds, parsed into JSON-compatible values.
//
// The stages of one Fetch are
//
//	fetch (go-git, into an on-disk bare cache) → list *.yaml/*.yml below the path
//	→ render (extension point, see Renderer) → parse (ParseFile) → classify
//
// Classification: objects whose API group ends in ".azure.com" are ASO
// resources; core v1 ConfigMaps and Secrets are inputs to them; both go to
// Snapshot.Objects. Any other kind goes to Snapshot.Ignored so that the caller
// can report it once. Files named kustomization.yaml (or .yml, or
// Kustomization) and documents of the kustomize.config.k8s.io group are build
// instructions, not objects, and are skipped silently.
//
// A commit is accepted or refused whole: every problem of every file is
// collected into one diag.List, each naming file and line. With a
// UnitsRenderer (package source/render with Flux on), a Flux Kustomization
// or HelmRelease that cannot be rendered is not a refusal: Build lists it
// in Snapshot.Units with its Reason and Errors (LocateFields applied, as
// for a refusal) and leaves its objects out, so that the caller keeps what
// it last applied; errors of no unit still refuse the commit. A Git source
// renders the same commit again at each Fetch while a unit failed on a
// source that did not answer (manifest.Unit.Retry).
//
// Example (a Git branch, fetched on a timer by the caller):
//
//	g, err := source.NewGit(source.GitOptions{
//		URL:      "https://git.example.com/platform/azure.git",
//		Branch:   "main",
//		Path:     "clusters/prod",
//		CacheDir: "/var/lib/gitaso/git",
//		Logger:   logger,
//	})
//	if err != nil { ... }
//	snap, err := g.Fetch(ctx)
//	if list := diag.AsList(err); list != nil {
//		// the commit is malformed: keep the last good revision
//	}
//
// The Git cache: the first fetch into an empty CacheDir is a shallow clone
// (depth 1, single branch, no tags); later fetches, including after a
// restart, transfer only new objects (never with a depth, which would resend
// the whole tree). Files are read from the commit tree, never checked out.
// Files whose blob did not change since the previous snapshot are not parsed
// again. When pack files pile up (go-git cannot repack a shallow clone) or the
// cache is damaged, the cache is replaced by a fresh shallow clone.
//
// In directory mode (NewDir) the revision is a content hash, so that an
// unchanged directory yields an unchanged revision.
//
// # Symlinks
//
// Both modes read the same tree the same way. A symlink whose target is
// inside the root (the --dir directory, or the repository: in Git mode the
// link is resolved in the commit's tree, never on disk) is followed and
// read under the link's own name: a file as that file, a directory walked
// as a directory, a link to a link followed on, and the source path itself
// may be one. A symlink that leads out of the root (in Git any absolute
// target does), cannot be resolved, or leads back to a directory that
// contains it refuses the revision with an error naming the link, whatever
// its name; so do *.yaml/*.yml entries that are devices, FIFOs or sockets.
// Refusing rather than skipping: a skipped entry's objects would look
// deleted, and the reconciler would delete them in Azure. Hidden links not
// named *.yaml/*.yml are skipped like hidden directories, links to files
// that are not manifests are not read, and Git submodules are not read.
// Files are opened non-blocking and checked again once open, so a FIFO
// swapped in cannot hang a read. A link that makes one object appear twice
// (a directory reachable through two names) refuses the revision as any
// object defined twice does. (Flux's source-controller leaves symlinks out
// of its artifacts; gitaso follows the ones inside the repository instead,
// so that moving a manifest behind a link deletes nothing.)
//
// A path that does not exist at a revision is a *PathNotFoundError
// (errors.Is ErrPathNotFound) in both modes, so that a caller can hold the
// revision instead of treating it as empty.
//
// # Limits
//
// A commit is input from whoever can push to the branch. Limits (zero
// fields take DefaultLimits; gitaso --source-limit NAME=VALUE) bound what
// one revision may make gitaso do, and a revision beyond one is refused
// like any malformed commit: a *RevisionError holding one diag.Error per
// offending file that names the file, the line when known, and the limit
// (a *LimitError; errors.Is ErrLimit), never a crash or an exhausted
// memory. A limit is reported once per file, and a total once per
// revision.
//
//	file-size          32 MiB      one *.yaml/*.yml file (Git: the blob's size, known before reading;
//	                               directory: the size, then a read through io.LimitReader)
//	total-size         128 MiB     all *.yaml/*.yml files below the path together
//	yaml-nodes         4,000,000   YAML nodes of one file, an alias counting as all it refers to;
//	                               also of the files one kustomize build reads, together
//	total-yaml-nodes   16,000,000  YAML nodes of a revision's files together
//	yaml-depth         128         mappings and lists nested in one another
//	kustomize-objects  10,000      documents of the files one kustomization reaches
//
// The render stage (package source/render) bounds what runs while a
// revision renders, per revision:
//
//	total-kustomize-objects  10,000     documents all kustomize builds of a revision read (a base
//	                                    built by several kustomizations counts each time)
//	kustomize-nodes          750,000    YAML nodes all kustomize builds of a revision read
//	rendered-size            64 MiB     bytes the kustomize builds and Helm releases produce together
//	render-timeout           5m         the render of one revision (kustomize, Flux, Helm, substitution)
//
// and per HelmRelease, while its templates run (file-size bounds what they
// write):
//
//	helm-bytes               256 MiB    strings, lists and maps the templates' functions return, in all
//	helm-steps               10,000,000 range iterations, template and function calls
//
// Every kustomization's input is counted before any build runs, so a
// revision past a kustomize limit is refused in about a second. A render
// still running at the deadline is abandoned (Helm templates stop at their
// next step; a kustomize build, which takes no context, is left to finish
// in the background, bounded by the limits above) and the revision is
// refused with a render-timeout error naming the kustomization or
// HelmRelease. In the daemon, a newer commit also abandons a render in
// progress (package reconcile).
//
// Memory at the limits, measured on the 2-core test machine with
// `/usr/bin/time -v gitaso validate --dir DIR --kustomize` (Maximum
// resident set size): one kustomization of 1,262 ConfigMaps of 290 keys
// (748,000 nodes, 4.6 MB, just under kustomize-nodes) peaks at 1,017 MiB in
// 34 s; twice that (1.5 million nodes) peaked at 2,030 MiB, hence the
// limit: kustomize keeps about 1,400 bytes a node at its peak. A revision
// within the default limits therefore stays under about 1 GiB for its
// kustomize builds. Helm renders stay small: each hostile chart of the
// reliability corpus (a string repeated 2e9 times, loops of 10^15
// iterations writing nothing, a string doubled 40 times, a map holding
// itself) is refused in 0.1 to 6 s at 56 to 143 MiB (harness/reliability,
// TestHostileRenderBounds); within helm-bytes a release holds at most
// 256 MiB of template values, and releases render on GOMAXPROCS
// goroutines. Time is what kustomize limits: one kustomization of 10,000
// one-key ConfigMaps (total-kustomize-objects) took 238 s of CPU and
// peaked at 333 MiB (`--source-limit render-timeout=none`), within the
// 5-minute deadline only on an idle core: render-timeout is wall-clock.
//
// Why these: the parser keeps about 120 bytes a YAML node and kustomize
// about 650 (measured: 100,000 ConfigMaps of 12 keys, 3.7 million nodes in
// a 20 MB file, validate in 4 s and 485 MB; 2,500 ConfigMaps of 160 keys
// through kustomize, 830,000 nodes, 570 MB), so a file at the node limit
// takes about 500 MB to parse, a kustomize build at it about 2.6 GB, and a
// revision at the total about 2 GB; meanwhile a file of 100,000 small
// objects (1.5 to 4 million nodes) and Flux repositories with big
// Helm-rendered files (CRD bundles of a few MB, some hundred thousand
// nodes) fit with room to spare, as do the biggest Kubernetes objects (1.5
// MB in etcd). ASO manifests nest less than 10 deep (the conformance
// samples: at most 9); CRD schemas, the deepest YAML of a Flux repository,
// a few dozen. Kustomize's build time grows with the square of the objects
// it holds (10,000 take about a minute and a half, 100,000 hours), hence
// its own limit.
//
// The 609-byte "billion laughs" (anchors referring to anchors, 9^9
// strings) is refused in about 0.2 ms: CheckFiles decodes every file with
// an anchor into yaml.v3 nodes, which keep aliases as pointers, and
// computes the expanded size and depth once per anchor, before any
// decoder that expands aliases (kustomize's kyaml, SOPS metadata, the
// parser) sees the bytes; an anchor containing an alias to itself is
// refused too. Build runs it before the Renderer; ParseFile runs the same
// count on what it parses (so rendered text, where substitution could have
// written anchors, is checked too) and keeps a budget inside its own alias
// expansion as a second line of defence. Files without an anchor cannot
// expand: they are bounded by the size limits, and their nodes and depth
// are counted when their rendered text is parsed, and by the render stage
// (MeasureFile) before kustomize reads them.
package source
