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
// collected into one diag.List, each naming file and line.
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
package source
