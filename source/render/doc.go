// Package render is gitaso's render stage (a source.Renderer): it builds
// kustomizations in memory and runs Flux post-build substitution, so that a
// repository written for Flux's kustomize-controller renders the same
// objects in gitaso.
//
// # Kustomize
//
// With Options.Kustomize, a directory holding a kustomization.yaml (or
// .yml) is built with sigs.k8s.io/kustomize/api (krusty) over an in-memory
// copy of the files the source read, and the build output replaces the raw
// files of that directory: files below a directory holding a kustomization
// file are never parsed on their own; kustomize decides what of them is
// used. Which directories are built:
//
//   - Options.KustomizeDirs empty: every topmost directory holding a
//     kustomization file (as Flux's generated kustomization does for a path
//     without one: a sub-directory with its own kustomization is built);
//   - Options.KustomizeDirs set: exactly those directories (relative to the
//     repository root), e.g. "deploy/overlays/prod" when the source path is
//     "deploy" and holds base/ and overlays/.
//
// Objects of a build carry the file and line of the document they came from
// (a patched object: its original resource's), so that errors point where a
// user can edit; generated ConfigMaps and Secrets name the kustomization and
// the generator's entry, anything else the kustomization at line 0. Index is
// the position in the build output ("kustomize build" order). The origin
// travels as a source.OriginComment before each document of the build output
// (see source.File.Generated). A kustomization using deprecated
// fields (commonLabels, bases, patchesStrategicMerge, ...) is fixed in
// memory as "kustomize edit fix" would, and the deprecation is logged as a
// warning (kustomize itself would print it to the process's stderr): once
// for each content of the file, however many Flux Kustomizations build it
// and however often a daemon renders it. A kustomization with an empty
// "resources: []" builds zero objects, as kustomize build does.
//
// Limits: only the *.yaml/*.yml files below the source path exist for
// kustomize, so a base must be below the source path and generator inputs
// in other files (.env, .properties, .json) are not found. Remote bases
// (URLs, github.com/..., ?ref=) are refused before kustomize runs
// (ErrRemoteBase); so is an entry that is in none of the files read
// (kustomize would try to clone it). Plugins and Helm charts are disabled.
// namePrefix and nameSuffix do NOT rewrite ASO references such as
// spec.owner.name (kustomize does not know ASO's reference fields): give
// owners and references their final names, or patch them.
//
// # Substitution
//
// With Options.Substitute, every document is run through Flux's envsubst
// (github.com/fluxcd/pkg/envsubst, the library kustomize-controller uses)
// after the kustomize builds: ${VAR}, ${VAR:=default}, ${VAR:-default},
// ${VAR=default} and the other bash forms; $${VAR} is a literal ${VAR} (and
// $$ a literal $); a bare $VAR is left alone. Variables come from
// Options.SubstituteFrom (ConfigMaps and Secrets of the repository, Secret
// values decoded; a later one overrides an earlier one) and then Options.Vars
// (inline, overriding), as spec.postBuild.substituteFrom and substitute do.
// Newlines are removed from values, as Flux does, so lines in errors stay
// true. Variable names must match Flux's ^[_[:alpha:]][_[:alpha:][:digit:]]*$.
// Without Options.Strict an unset variable becomes ""; with it, ${VAR} with
// no value and no default is an error naming file, line and variable
// (ErrUnsetVariable). An object annotated or labelled
// kustomize.toolkit.fluxcd.io/substitute: disabled is left as it is.
//
// A value taken from a Secret (of the repository, decrypted or not, exported
// or read from the cluster; not one an inline variable overrides) is
// recorded with each file it was substituted into (source.File.Secrets), and
// by the parser with each object of the file that holds it
// (manifest.Object.Secrets): the planner masks every field holding it (see
// manifest.SecretValue). A HelmRelease's objects carry those of its file,
// and the string values its valuesFrom takes from a Secret (numbers and
// booleans are left out: masking every field holding "3" would hide the
// plan).
// The record is by value: another field of the object holding the same text
// is masked too (never shown where it should not be), so a short or common
// secret value masks more than its own field.
//
// A ConfigMap or Secret that Options.AppConfig maps to an Azure App
// Configuration store is read from the store, in place of the repository,
// the exports and the cluster (appconfig.go, docs/appconfig.md): its
// key-values are variables, its Key Vault references are resolved and
// secret like a Secret's values, and what it read is an external of the
// revision (a changed key-value is a new revision).
//
// Differences from Flux: Flux substitutes each object after serialising it
// (JSON to YAML, keys sorted, comments dropped, quotes as the serialiser
// chooses); gitaso substitutes the document as written for files outside
// kustomizations, so quotes are kept ("${PORT}" stays a string, where Flux
// may turn it into a number) and ${VAR} in comments is substituted too (an
// unset one is an error in strict mode: write $${VAR} in comments).
// Kustomize output is serialised as Flux does.
//
// # SOPS
//
// Every YAML or JSON document carrying a top-level SOPS stanza is decrypted
// before the kustomize builds and substitution, as Flux's decryption
// provider sops does, with the keys gitaso was given (sops.go, sops_keys.go;
// gitaso does not import SOPS):
//
//   - age: Options.AgeIdentities (gitaso --sops-age-key-file, default
//     $SOPS_AGE_KEY_FILE);
//   - PGP: Options.PGPKeys (gitaso --sops-pgp-keys, a key file or a directory
//     of *.asc files as Flux's sops-gpg Secret holds), in process with
//     ProtonMail/go-crypto: no gpg binary, no agent, no passphrase;
//   - Azure Key Vault: Options.KeyVault (NewAzureKeyVault, sops_azkv.go),
//     which calls Key Vault's decrypt operation with RSA-OAEP-256, as SOPS's
//     azkv key source does, signed in with gitaso's global Azure credential
//     (workload identity included) for https://{Key Vault DNS suffix}.
//
// A file whose key group names several keys opens with the first one gitaso
// holds (age and PGP before Key Vault); an error lists the file's keys and
// the kinds of key gitaso was given, never a key or a value. The MAC is
// checked on the file as committed (Flux skips that check), so a file
// changed after encryption is refused: edit encrypted files with "sops
// edit". Values keep their lines. Not supported: AWS/GCP KMS, HashiCorp
// Vault and HuaweiCloud keys, Shamir key groups, SSH age keys, the comment
// regexes, and SOPS-encrypted files inside Secret data entries.
//
// # Units
//
// With Options.Flux, each Flux Kustomization and HelmRelease is a unit
// (manifest.Unit) that renders and fails alone, as Flux reconciles each on
// its own. RenderUnits (source.UnitsRenderer, which source.Build uses)
// returns the units found, sorted by ID, with the files:
//
//   - A Kustomization that cannot be built (spec.path missing, a kustomize
//     error such as a patch matching nothing, an unset variable under
//     strict substitution, a file SOPS cannot open, an invalid spec or
//     duration, a cycle) is Reason BuildFailed; one whose sourceRef cannot
//     be read (an OCIRepository, a Bucket, another Git repository gitaso
//     may not or cannot read) ArtifactFailed, with Retry when that Git
//     server did not answer. Its Errors name file, line, object and field
//     as a refused revision's did; Message is the first in a line. None of
//     its objects are in the output, and its child Kustomizations (and
//     HelmReleases) are unknown at this revision: not listed, as their spec
//     is whatever the failed one last applied.
//   - A HelmRelease whose chart cannot be fetched or loaded (not found, a
//     version not pushed, a source gitaso cannot read) is ArtifactFailed;
//     a registry that does not answer (refused, TLS, timeout, 5xx, 429)
//     too, with Retry: a Git source then renders the commit again at the
//     next poll (no new commit needed once the registry answers), and the
//     revision is no longer a source failure as a whole
//     (source.ErrUnavailable is wrapped by that unit's error only). A
//     template error, missing values (valuesFrom) or an invalid spec is
//     BuildFailed. Its objects are left out; every other release renders.
//   - dependsOn is checked first, as Flux does: a Kustomization whose
//     spec.dependsOn names a Kustomization (a HelmRelease: a HelmRelease)
//     that failed, waits, is unknown or does not exist at this revision is
//     Reason DependencyNotReady, Message "dependency 'ns/name' is not
//     ready...", no Errors, its objects left out. A dependency that does
//     not exist waits forever in Flux (it retries every retryInterval), so
//     gitaso does not render past it either; nor past a dependsOn cycle.
//   - Every unit lists File and Line (where it is declared), Parent (the
//     Kustomization whose output declared it; "" at the entry path),
//     DependsOn, Suspended (spec.suspend or
//     kustomize.toolkit.fluxcd.io/reconcile: disabled), Wait, HealthChecks
//     (as written), Timeout, Interval, RetryInterval and its object count
//     (a Kustomization's: its inventory, HelmRelease and Kustomization
//     objects included; a release's: the chart's objects). Kustomization:
//     Wait is spec.wait, Timeout spec.timeout else the interval,
//     RetryInterval spec.retryInterval else the interval. HelmRelease:
//     helm-controller runs Helm with --wait unless disableWait, so Wait is
//     true unless spec.install.disableWait or spec.upgrade.disableWait is
//     set (gitaso renders every revision as an install and cannot tell the
//     two apart); Timeout spec.timeout else Helm's 5m; RetryInterval the
//     interval. The Kustomization of the entry path itself (flux-system) is
//     a unit that rendered, its objects the entry's.
//   - Objects carry gitaso.io/flux-kustomization (the Kustomization that
//     rendered them) and a chart's objects gitaso.io/helm-release, so that
//     manifest.UnitOf finds their unit.
//
// Errors of no unit still refuse the revision: the entry path's own files
// (kustomize, YAML, substitution with the global variables), and any limit
// (source.ErrLimit) or the render deadline, whichever unit reached it,
// since limits bound the whole revision. Render and RenderSources, for
// callers that do not know units, refuse a revision with a failed unit as
// before (its errors among the revision's): a unit's absent objects must
// never be taken for deletions. Without Flux there are no units.
//
// # Limits
//
// Options.Limits are the source's limits (source.Limits). The render stage
// expects its input checked with source.CheckFiles (source.Build does it,
// so every Git and directory source), re-checks what SOPS decryption
// produced, and refuses a kustomization whose files hold more documents
// than Limits.MaxKustomizeObjects (kustomize's build time grows with the
// square of the objects) or more YAML nodes together than Limits.MaxNodes
// before kustomize runs; every kustomization's input also counts towards
// the revision's MaxTotalKustomizeObjects and MaxKustomizeNodes, all
// counted before the first build. What the builds and the HelmReleases
// render counts towards MaxRenderedSize. Render has a deadline
// (RenderTimeout): a kustomize build still running then is abandoned (it
// takes no context) and the revision refused naming it. The rendered text
// is checked again by the parser, with the same limits.
//
// HelmReleases render with internal/helmtpl, Helm v3.22.0's engine
// (pkg/engine) ported so that a chart's templates are bounded while they
// run: every range iteration, template call and function call is a step
// (MaxHelmSteps), the context is checked every 256 steps, what the
// templates write is limited to MaxFileSize, what their functions return
// in all to MaxHelmBytes, and sprig's functions that allocate by a count
// (repeat, indent, nindent, until, untilStep, seq, rand*, replace,
// wrapWith, regexReplaceAll) check the size first; values that are
// serialised or printed are weighed first (a map set into itself, a list
// holding itself at every level). The error names the HelmRelease, chart,
// template, line and column, and the limit. What a chart renders is
// Helm's, byte for byte (helmtpl's TestSameAsHelm).
//
// A HelmRelease that renders no ASO object (cert-manager, an ingress
// controller, ASO itself) is counted as ignored (manifest.Unit.Ignored) and
// its objects are left out. One whose chart is fetched is remembered in
// Options.ReleaseMemory (a file beside the chart cache, written atomically)
// by the chart's digest and a hash of its other inputs (values, name,
// namespace, post-renderers, capabilities): next time the chart is resolved
// and, at the same digest, not rendered; when its registry does not answer,
// the memory stands for it. A release another release depends on is
// rendered every time (its ConfigMaps may feed a valuesFrom). A release
// annotated gitaso.io/skip: "true" or named by Options.SkipReleases is
// neither fetched nor rendered (helm_ignore.go).
//
// Example:
//
//	from, _ := render.ParseRef("platform/platform-vars")
//	r, err := render.New(render.Options{
//		Kustomize:      true,
//		Substitute:     true,
//		SubstituteFrom: []render.Ref{from},
//		Vars:           map[string]string{"ENVIRONMENT": "snd"},
//		Strict:         true,
//	})
//	if err != nil { ... }
//	src := source.NewDir(root, "clusters/snd", source.WithRenderer(r))
package render
