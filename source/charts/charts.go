package charts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Limits and defaults.
const (
	// MaxArchiveSize is the largest chart archive (.tgz) fetched, pulled or
	// packaged.
	MaxArchiveSize = 16 << 20
	// MaxIndexSize is the largest index.yaml read from a Helm repository.
	MaxIndexSize = 32 << 20
	// maxManifestSize is the largest OCI manifest read.
	maxManifestSize = 4 << 20

	// DefaultIndexTTL is how long a Helm repository's index, an OCI
	// repository's tag list and a tag's manifest are taken as current.
	DefaultIndexTTL = 30 * time.Second
	// DefaultTimeout bounds one Fetch or FetchURL (every request it makes).
	DefaultTimeout = 2 * time.Minute
)

// Media types of a Helm chart in an OCI registry, as `helm push` writes them.
const (
	HelmChartLayerMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	HelmConfigMediaType     = "application/vnd.cncf.helm.config.v1+json"
)

// Errors, wrapped in the error a Fetch returns (check with errors.Is).
var (
	// ErrNotFound is returned when the repository has no chart of that
	// name, no version matches the constraint, or a tag or Git reference
	// does not exist.
	ErrNotFound = errors.New("chart not found")
	// ErrDigest is returned when an archive's digest is not the one the
	// repository's index or the registry's manifest announced.
	ErrDigest = errors.New("chart digest mismatch")
	// ErrTooLarge is returned when an archive, an index or a manifest is
	// larger than its limit (MaxArchiveSize, MaxIndexSize).
	ErrTooLarge = errors.New("too large")
	// ErrOffline is returned in offline mode when the cache cannot answer.
	ErrOffline = errors.New("not in the chart cache (offline mode fetches nothing)")
	// ErrAuth is returned when a repository or registry refuses the
	// credentials (or asks for some and none were given).
	ErrAuth = errors.New("authentication failed")
	// ErrUnsupported is returned for a source, URL scheme or provider gitaso
	// does not read (a Bucket, ssh:// Git URLs, provider aws or gcp).
	ErrUnsupported = errors.New("unsupported chart source")
	// ErrInsecure is returned for a plain http:// URL the source does not
	// allow (see the package documentation).
	ErrInsecure = errors.New("plain HTTP refused")
	// ErrInvalid is returned for a source or request that cannot be read:
	// a missing URL, an invalid semver constraint, an archive without
	// Chart.yaml.
	ErrInvalid = errors.New("invalid chart source")
)

// Source is a Flux source object from the repository (HelmRepository,
// OCIRepository, GitRepository), as parsed YAML.
type Source struct {
	Kind, Namespace, Name string
	Spec                  map[string]any // the object's spec
	File                  string         // where it is declared, for errors
	Line                  int
}

// String names the source for errors: "HelmRepository flux-system/acr at
// repo.yaml:3".
func (s Source) String() string {
	out := s.Kind + " " + s.Namespace + "/" + s.Name
	if s.Namespace == "" {
		out = s.Kind + " " + s.Name
	}
	if s.File != "" {
		out += fmt.Sprintf(" at %s:%d", s.File, s.Line)
	}
	return out
}

// Secret is the auth material of a source's spec.secretRef (or
// certSecretRef): the Secret's data, already decoded, e.g. username and
// password, .dockerconfigjson, bearerToken, ca.crt, tls.crt and tls.key.
// Its values never appear in logs or errors.
type Secret map[string]string

// LogValue keeps a Secret's values out of logs.
func (s Secret) LogValue() slog.Value {
	return slog.StringValue(fmt.Sprintf("[%d keys redacted]", len(s)))
}

// String keeps a Secret's values out of formatted output.
func (s Secret) String() string { return fmt.Sprintf("[%d keys redacted]", len(s)) }

// GoString keeps a Secret's values out of %#v.
func (s Secret) GoString() string { return s.String() }

// Request asks for one chart.
type Request struct {
	Source Source
	Secret Secret // nil when none
	// Chart is the chart name in a HelmRepository, "" for an
	// OCIRepository, the chart's directory in a GitRepository.
	Chart string
	// Version is a semver constraint ("" or "*": the latest stable
	// version), as in HelmRelease chart.spec.version. Ignored for
	// OCIRepository (spec.ref decides) and GitRepository (as Flux does).
	Version string
}

func (r Request) where() string {
	s := r.Source.String()
	if r.Chart != "" {
		s += fmt.Sprintf(": chart %q", r.Chart)
	}
	if r.Version != "" && r.Source.Kind == "HelmRepository" {
		s += fmt.Sprintf(" version %q", r.Version) // ignored for the other kinds
	}
	return s
}

// Chart is a fetched chart.
type Chart struct {
	Name, Version string // from Chart.yaml
	// Digest is "sha256:<hex>" of the archive: the OCI layer digest, the
	// index entry's digest, or computed.
	Digest string
	// URL is where it came from: oci://host/repo:tag@<manifest digest>,
	// https://host/path/x-1.2.3.tgz, or <git url>@<commit>:<path> (a
	// password or query in it shows as "redacted").
	URL     string
	Archive []byte // the .tgz
	Cached  bool   // served from the cache without fetching the archive
}

// TokenSource gives an Entra ID access token for scopes; gitaso passes its
// azcore TokenCredential wrapped (see AzureTokenSource).
type TokenSource interface {
	Token(ctx context.Context, scopes []string) (string, error)
}

// TokenFunc adapts a function to TokenSource.
type TokenFunc func(ctx context.Context, scopes []string) (string, error)

// Token calls f.
func (f TokenFunc) Token(ctx context.Context, scopes []string) (string, error) { return f(ctx, scopes) }

// Options configures a Fetcher.
type Options struct {
	// CacheDir holds charts by digest and the last known index, tag and
	// reference listings; "" keeps them in memory only.
	CacheDir string
	// HTTPClient's transport is the base of every request (tests give one
	// trusting their CA); nil: http.DefaultTransport. Its Timeout, when
	// set, bounds each HTTP request.
	HTTPClient *http.Client
	// CABundle is extra PEM certificates trusted for Git over HTTPS (Git
	// does not use HTTPClient).
	CABundle []byte
	// Azure gives tokens for `provider: azure` (ACR's token exchange); nil
	// refuses provider azure with a clear error.
	Azure TokenSource
	// AzureScope is the Entra scope asked for the exchange; "" picks ARM's
	// of the registry's cloud from its host (azurecr.io: public Azure,
	// azurecr.cn, azurecr.us), as Flux does.
	AzureScope string
	// Logger; nil discards.
	Logger *slog.Logger
	// Offline never fetches: charts come from the cache only, versions are
	// resolved against the last index, tag or reference listing persisted
	// in CacheDir.
	Offline bool
	// Deprecated: AllowPlainHTTP has no effect: http:// Helm
	// repositories, chart URLs, dependencies and Git repositories are read
	// as Flux reads them, with a warning, and an OCI registry over http://
	// needs its source's spec.insecure, as in Flux (see plainhttp.go).
	AllowPlainHTTP bool
	// IndexTTL is how long an index, a tag list or a tag's manifest is
	// reused without asking again; 0: DefaultIndexTTL; negative: ask every
	// time (an index is then revalidated with If-None-Match).
	IndexTTL time.Duration
	// Timeout bounds one Fetch or FetchURL; 0: DefaultTimeout.
	Timeout time.Duration
	// UserAgent sent with every request; "" is "gitaso".
	UserAgent string
}

// Stats are a Fetcher's counters since New.
type Stats struct {
	Fetches          int64 // Fetch and FetchURL calls answered with a chart
	Downloads        int64 // archives downloaded, pulled or packaged from Git
	DownloadedBytes  int64 // their size
	CacheHits        int64 // charts served from the cache without fetching the archive
	IndexFetches     int64 // index.yaml downloads
	IndexNotModified int64 // index.yaml revalidations answered 304
	TagLists         int64 // OCI tag listings
	Manifests        int64 // OCI manifests fetched
	GitLists         int64 // Git reference listings (ls-remote)
	Clones           int64 // Git clones
	Errors           int64 // failed Fetch and FetchURL calls
}

type counters struct {
	fetches, downloads, bytes, hits, indexFetches, notModified, tagLists, manifests, gitLists, clones, errors atomic.Int64
}

// Fetcher fetches charts as Flux's source-controller does. It is safe for
// concurrent use.
type Fetcher struct {
	opts  Options
	log   *slog.Logger
	base  http.RoundTripper
	cache *cache
	n     counters

	mu         sync.Mutex
	indexes    map[string]*indexEntry
	tags       map[string]*listEntry
	manifests  map[string]*manifestEntry
	acr        map[string]*acrEntry
	transports map[string]http.RoundTripper
	clones     map[string]*cloneEntry
	cloneOrder []string
	inflight   map[string]*inflight
	names      sync.Map // digest → [2]string{name, version} of archives read
	plainHTTP  sync.Map // plain http:// URLs warned about (plainhttp.go)
}

// inflight serialises the downloads of one archive.
type inflight struct {
	mu   sync.Mutex
	refs int
}

// lock serialises work on key (one archive download at a time, so that
// concurrent fetches of the same chart download it once); call the returned
// function to unlock.
func (f *Fetcher) lock(key string) func() {
	f.mu.Lock()
	e := f.inflight[key]
	if e == nil {
		e = &inflight{}
		f.inflight[key] = e
	}
	e.refs++
	f.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		f.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(f.inflight, key)
		}
		f.mu.Unlock()
	}
}

// New returns a Fetcher.
func New(opts Options) (*Fetcher, error) {
	if opts.IndexTTL == 0 {
		opts.IndexTTL = DefaultIndexTTL
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "gitaso"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := newCache(opts.CacheDir)
	if err != nil {
		return nil, err
	}
	base := http.DefaultTransport
	if opts.HTTPClient != nil && opts.HTTPClient.Transport != nil {
		base = opts.HTTPClient.Transport
	}
	return &Fetcher{
		opts: opts, log: log, base: base, cache: c,
		indexes: map[string]*indexEntry{}, tags: map[string]*listEntry{}, manifests: map[string]*manifestEntry{},
		acr: map[string]*acrEntry{}, transports: map[string]http.RoundTripper{}, clones: map[string]*cloneEntry{}, inflight: map[string]*inflight{},
	}, nil
}

// Stats returns the counters since New.
func (f *Fetcher) Stats() Stats {
	return Stats{
		Fetches: f.n.fetches.Load(), Downloads: f.n.downloads.Load(), DownloadedBytes: f.n.bytes.Load(),
		CacheHits: f.n.hits.Load(), IndexFetches: f.n.indexFetches.Load(), IndexNotModified: f.n.notModified.Load(),
		TagLists: f.n.tagLists.Load(), Manifests: f.n.manifests.Load(), GitLists: f.n.gitLists.Load(),
		Clones: f.n.clones.Load(), Errors: f.n.errors.Load(),
	}
}

// Fetch resolves and fetches the chart a HelmRelease (chart.spec or
// chartRef) or HelmChart names. Errors name the source, its file and line,
// the chart and the version constraint.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (*Chart, error) {
	timeout := f.opts.Timeout
	if d, err := time.ParseDuration(specString(req.Source.Spec, "timeout")); err == nil && d > 0 && d < timeout {
		timeout = d // the source's spec.timeout, as Flux bounds its fetches
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		c   *Chart
		err error
	)
	if v, ok := req.Source.Spec["verify"]; ok && v != nil {
		err = fmt.Errorf("%w: spec.verify: gitaso does not verify signatures (cosign, notation); it refuses the source rather than use an unverified chart", ErrUnsupported)
		return f.done(nil, err, req.where())
	}
	switch req.Source.Kind {
	case "HelmRepository":
		c, err = f.fetchHelmRepository(ctx, req)
	case "OCIRepository":
		c, err = f.fetchOCIRepository(ctx, req)
	case "GitRepository":
		c, err = f.fetchGit(ctx, req)
	default:
		err = fmt.Errorf("%w: kind %q: want HelmRepository, OCIRepository or GitRepository", ErrUnsupported, req.Source.Kind)
	}
	return f.done(c, err, req.where())
}

// FetchURL fetches a chart dependency (Chart.yaml dependencies with
// repository https://... or oci://...) as `helm dependency build` does:
// the highest version of name matching the constraint version. secret may
// be nil.
func (f *Fetcher) FetchURL(ctx context.Context, repoURL, name, version string, secret Secret) (*Chart, error) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	req := Request{Source: Source{Kind: "HelmRepository", Name: repoURL, Spec: map[string]any{"url": repoURL}},
		Secret: secret, Chart: name, Version: version}
	where := fmt.Sprintf("dependency repository %s: chart %q version %q", redact(repoURL), name, version)
	if strings.HasPrefix(repoURL, "oci://") {
		req.Source.Spec["type"] = "oci"
	}
	c, err := f.fetchHelmRepository(ctx, req)
	return f.done(c, err, where)
}

func (f *Fetcher) done(c *Chart, err error, where string) (*Chart, error) {
	if err != nil {
		f.n.errors.Add(1)
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	f.n.fetches.Add(1)
	if c.Cached {
		f.n.hits.Add(1)
	}
	return c, nil
}

// specString reads a string field of a spec ("a.b" walks maps).
func specString(spec map[string]any, field string) string {
	var cur any = spec
	for _, k := range strings.Split(field, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[k]
	}
	switch v := cur.(type) {
	case string:
		return strings.TrimSpace(v)
	case nil:
		return ""
	default:
		return strings.TrimSpace(fmt.Sprint(v))
	}
}

// specBool reads a boolean field of a spec (true or "true").
func specBool(spec map[string]any, field string) bool {
	switch v := spec[field].(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}
