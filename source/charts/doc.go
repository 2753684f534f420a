// Package charts fetches the Helm charts that Flux HelmReleases name from
// outside the repository gitaso reads, the way Flux's source-controller
// does: HTTP Helm repositories (index.yaml), OCI registries (HelmRepository
// type oci, OCIRepository, Azure Container Registry through its token
// exchange) and other Git repositories. The renderer (source/render) loads
// the archives it returns with helm's loader.
//
//	f, err := charts.New(charts.Options{CacheDir: dir, Azure: charts.AzureTokenSource(cred), Logger: log})
//	c, err := f.Fetch(ctx, charts.Request{
//		Source:  charts.Source{Kind: "HelmRepository", Namespace: "flux-system", Name: "acr", Spec: spec, File: "repo.yaml", Line: 3},
//		Chart:   "infra",
//		Version: "1.2.x",
//	})
//	// c.Name, c.Version, c.Digest, c.URL, c.Archive (.tgz), c.Cached
//
// # Sources
//
// HelmRepository (spec.type default): GET {url}/index.yaml, the highest
// version of the chart matching the constraint, its first URL (a relative
// URL resolves against the repository's), the entry's digest checked
// (ErrDigest names repository, chart and version). Basic auth from the
// Secret's username and password goes to the repository's host only, unless
// spec.passCredentials. TLS: the Secret's ca.crt, tls.crt and tls.key
// (certSecretRef, or the deprecated caFile, certFile and keyFile).
//
// HelmRepository spec.type oci (url oci://host/path) and chart dependencies
// in oci:// repositories: the chart is the repository host/path/<chart>; an
// exact version is pulled as that tag without listing tags (as Flux does),
// a range picks the highest semver tag that matches ("+" is stored as "_"
// in tags, as helm pushes them). The chart is the manifest's layer of media
// type application/vnd.cncf.helm.chart.content.v1.tar+gzip; Chart.Digest is
// that layer's digest, Chart.URL oci://host/repo:tag@<manifest digest>.
//
// OCIRepository: spec.url, spec.ref.digest, then semver (with
// semverFilter), then tag (default latest); the layer of
// spec.layerSelector.mediaType, by default the Helm chart layer (gitaso
// always needs the chart's .tgz, so layerSelector.operation is not read).
//
// Registry credentials: spec.provider azure exchanges an Entra ID token
// (Options.Azure, scope https://management.azure.com/.default, or the
// China or US Government ARM for azurecr.cn and azurecr.us) for an ACR
// refresh token at https://{host}/oauth2/exchange (grant_type=access_token,
// service, access_token, and tenant when the token names one), then pulls
// with user 00000000-0000-0000-0000-000000000000 and the refresh token as
// password, which the registry's /oauth2/token challenge flow accepts, as
// Flux's azure provider does. Refresh tokens are cached per host until five
// minutes before their exp claim and dropped when the registry refuses
// them. Without Options.Azure provider azure is an error. Provider generic
// (or none) uses the Secret's .dockerconfigjson entry for the registry's
// host, or its username and password, or nothing. Providers aws and gcp are
// refused (ErrUnsupported).
//
// GitRepository (another repository; the renderer reads charts of its own
// repository itself): spec.url over https:// with the Secret's username and
// password or bearerToken (and ca.crt), or over SSH (ssh://, user@host:path)
// with the Secret's identity (private key; password its passphrase) and
// known_hosts, required, as source-controller reads them (gitssh.go);
// spec.ref resolved with one
// reference listing in Flux's order (commit, name, semver, tag, branch;
// default branch master), then a shallow clone into memory (a pinned commit:
// with its branch's history, or every branch's), once per URL
// and commit. The chart directory (Request.Chart, from the repository root)
// is packaged into a .tgz with its .helmignore applied, its file://
// dependencies packaged from the same commit (never outside the repository)
// and its https:// and oci:// dependencies fetched into charts/, as
// source-controller builds a chart from Git. The archive is deterministic
// (sorted entries, fixed times), so the digest changes only with the
// chart's content. Request.Version is ignored, as Flux ignores a HelmChart's
// version for Git sources.
//
// # Decisions
//
// Plain HTTP, as Flux documents it (issue 25; it was refused without
// spec.insecure before): an HTTP/S Helm repository, the chart URLs of its
// index, a dependency's repository and a GitRepository may be http://,
// each host logged once as a warning. Flux's spec.insecure is "supported
// only for Helm OCI repositories": for OCI it selects http, and without it
// a registry is reached over TLS only, even on a loopback or private
// address where go-containerregistry would fall back to http://. Redirects from
// https:// to http:// are not followed (a downgrade the source did not ask
// for). See plainhttp.go.
//
// Versions: "" and "*" are the latest stable version; pre-releases are
// chosen only by a constraint that names one (">=1.0.0-0", "1.2.3-rc.1"),
// Masterminds/semver's rule that helm and Flux follow; an exact version
// string present in the index wins, as in helm.
//
// A source with spec.verify (cosign or notation signatures) is refused
// (ErrUnsupported): gitaso verifies no signatures, and using the chart
// unverified would defeat what the repository asks for. A source's
// spec.timeout, when shorter than Options.Timeout, bounds its fetch.
//
// # Cache
//
// Archives are cached by digest in CacheDir/sha256/<hex>.tgz (written to a
// temporary file and renamed; checked against their name when read, a
// corrupt entry is removed and fetched again); without CacheDir they are
// kept in memory. Every Fetch still resolves the version (an index, a tag
// list or a manifest, each reused for Options.IndexTTL, an index then
// revalidated with If-None-Match), so a new version is noticed; an
// unchanged digest downloads no archive (Chart.Cached). An index entry
// without a digest is cached by its URL (an archive's URL is taken to be
// immutable, as helm's cache does). Git charts are cached by URL, commit and
// path. The last index, tag list, manifest and Git reference of every
// source are kept in CacheDir/meta/.
//
// Options.Offline fetches nothing: versions are resolved against that
// persisted metadata and archives come from the cache; anything else is
// ErrOffline, naming what is missing. Nothing is fetched that a request
// does not name.
//
// # Not read
//
// Bucket sources; GitRepository spec.ignore, .sourceignore,
// include, recurseSubmodules and sparseCheckout (a chart from Git is its
// directory less .helmignore); HelmChart reconcileStrategy Revision (the
// version stays Chart.yaml's); spec.proxySecretRef (the process's proxy
// environment applies through the HTTP transport); providers aws and gcp;
// signature verification (spec.verify is refused, see above).
//
// # Limits and errors
//
// Archives over MaxArchiveSize (16 MiB) and indexes over MaxIndexSize
// (32 MiB) are refused (ErrTooLarge); every Fetch is bounded by
// Options.Timeout and its context. Errors name the source, its file and
// line, the chart and the constraint ("HelmRepository flux-system/acr at
// repo.yaml:3: chart "infra" version "1.2.x": no version matches
// (available: 1.1.0, 1.3.0)") and wrap ErrNotFound, ErrDigest, ErrTooLarge,
// ErrOffline, ErrAuth, ErrUnsupported, ErrInsecure or ErrInvalid. Secret
// values (passwords, tokens, keys) never appear in errors or logs; a
// Secret's String and LogValue are redacted.
package charts
