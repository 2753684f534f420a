package charts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// indexEntry is the parsed index of one Helm repository (and credentials).
type indexEntry struct {
	mu   sync.Mutex
	idx  *repo.IndexFile
	etag string
	at   time.Time
}

// indexMeta is what is persisted beside an index for revalidation.
type indexMeta struct {
	ETag string `json:"etag,omitempty"`
}

// fetchHelmRepository fetches a chart of a HelmRepository (HTTP index or
// type oci).
func (f *Fetcher) fetchHelmRepository(ctx context.Context, req Request) (*Chart, error) {
	spec := req.Source.Spec
	u := specString(spec, "url")
	if u == "" {
		return nil, fmt.Errorf("%w: spec.url is required", ErrInvalid)
	}
	if req.Chart == "" {
		return nil, fmt.Errorf("%w: no chart name", ErrInvalid)
	}
	switch typ := specString(spec, "type"); {
	case typ == "oci" || (typ == "" && strings.HasPrefix(u, "oci://")):
		if !strings.HasPrefix(u, "oci://") {
			return nil, fmt.Errorf("%w: spec.type oci needs an oci:// spec.url, got %q", ErrInvalid, redact(u))
		}
		return f.fetchOCIHelm(ctx, req, u)
	case typ == "" || typ == "default":
	default:
		return nil, fmt.Errorf("%w: spec.type %q: want default or oci", ErrInvalid, typ)
	}
	return f.fetchHTTP(ctx, req, u)
}

// checkScheme refuses what is neither https:// nor http://; http:// is
// read as Flux reads it (spec.insecure concerns OCI repositories only),
// with a warning (warnPlainHTTP).
func (f *Fetcher) checkScheme(u string, field string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("%w: %s %q: %v", ErrInvalid, field, redact(u), err)
	}
	switch p.Scheme {
	case "https":
		return nil
	case "http":
		f.warnPlainHTTP(u, "Helm repository")
		return nil
	}
	return fmt.Errorf("%w: %s %q: want https:// or http://", ErrUnsupported, field, redact(u))
}

// fetchHTTP fetches a chart from an HTTP Helm repository: index.yaml, the
// highest matching version, its first URL, its digest checked.
func (f *Fetcher) fetchHTTP(ctx context.Context, req Request, repoURL string) (*Chart, error) {
	spec := req.Source.Spec
	if err := f.checkScheme(repoURL, "spec.url"); err != nil {
		return nil, err
	}
	auth, err := secretBasic(req.Secret)
	if err != nil {
		return nil, err
	}
	rt, err := f.transport(req.Secret)
	if err != nil {
		return nil, err
	}
	idx, err := f.index(ctx, repoURL, rt, auth)
	if err != nil {
		return nil, err
	}
	cvs := idx.Entries[req.Chart]
	if len(cvs) == 0 {
		names := make([]string, 0, len(idx.Entries))
		for n := range idx.Entries {
			names = append(names, n)
		}
		slices.Sort(names)
		if len(names) > 20 {
			names = append(names[:20], "...")
		}
		return nil, fmt.Errorf("%w: repository %s has no chart %q (charts: %s)", ErrNotFound, redact(repoURL), req.Chart, strings.Join(names, ", "))
	}
	versions := make([]string, 0, len(cvs))
	for _, cv := range cvs {
		versions = append(versions, cv.Version)
	}
	v, err := pickVersion(versions, req.Version)
	if err != nil {
		return nil, err
	}
	var cv *repo.ChartVersion
	for _, c := range cvs {
		if c.Version == v {
			cv = c
			break
		}
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("%w: the index entry of %s %s has no URL", ErrInvalid, req.Chart, v)
	}
	chartURL, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("%w: chart %s %s: %v", ErrInvalid, req.Chart, v, err)
	}
	if err := f.checkScheme(chartURL, "chart URL"); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("chart %s %s from %s", req.Chart, v, redact(chartURL))
	want := ""
	if d := strings.ToLower(strings.TrimSpace(cv.Digest)); d != "" {
		want = "sha256:" + strings.TrimPrefix(d, "sha256:")
		if !validDigest(want) {
			return nil, fmt.Errorf("%w: %s: the index's digest %q is not a sha256 digest", ErrInvalid, what, cv.Digest)
		}
	}
	// Without a digest in the index, the archive at a URL is taken to be
	// immutable (as helm's own cache does): the digest of what was
	// downloaded from it is remembered.
	unlock := f.lock("url:" + chartURL)
	defer unlock()
	known := want
	if known == "" {
		if b, ok := f.cache.getMeta("url", chartURL); ok {
			known = string(b)
		}
	}
	if known != "" {
		if b, ok := f.cache.get(known); ok {
			return f.chartOf(b, known, redact(chartURL), true)
		}
	}
	if f.opts.Offline {
		return nil, fmt.Errorf("%s: %w", what, ErrOffline)
	}
	// Credentials go to the repository's host only, unless
	// spec.passCredentials (as Flux and helm do).
	dlAuth := auth
	if !sameHost(repoURL, chartURL) && !specBool(spec, "passCredentials") {
		dlAuth = nil
	}
	_, body, err := f.httpGet(ctx, rt, chartURL, dlAuth, nil, MaxArchiveSize, what)
	if err != nil {
		return nil, err
	}
	f.n.downloads.Add(1)
	f.n.bytes.Add(int64(len(body)))
	got := digestOf(body)
	if want != "" && got != want {
		return nil, fmt.Errorf("%s: %w: the index says %s, the archive is %s", what, ErrDigest, want, got)
	}
	c, err := f.chartOf(body, got, redact(chartURL), false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := f.cache.put(got, body); err != nil {
		f.log.Warn("chart not cached", "chart", req.Chart, "version", v, "err", err)
	}
	if want == "" {
		if err := f.cache.putMeta("url", chartURL, []byte(got)); err != nil {
			f.log.Warn("chart URL not cached", "url", redact(chartURL), "err", err)
		}
	}
	f.log.Debug("helm chart downloaded", "chart", req.Chart, "version", v, "digest", got, "bytes", len(body), "url", redact(chartURL))
	return c, nil
}

// index returns the parsed index.yaml of a repository, fetched at most once
// per IndexTTL for each set of credentials (revalidated with its ETag).
func (f *Fetcher) index(ctx context.Context, repoURL string, rt http.RoundTripper, auth *basicAuth) (*repo.IndexFile, error) {
	key := repoURL + "\x00" + auth.id()
	f.mu.Lock()
	e := f.indexes[key]
	if e == nil {
		e = &indexEntry{}
		f.indexes[key] = e
	}
	f.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.idx != nil && (f.opts.Offline || time.Since(e.at) < f.opts.IndexTTL) {
		return e.idx, nil
	}
	what := "index of " + redact(repoURL)
	if f.opts.Offline {
		raw, ok := f.cache.getMeta("index", repoURL)
		if !ok {
			return nil, fmt.Errorf("%s: %w (no index of this repository was ever fetched into the cache)", what, ErrOffline)
		}
		idx, err := parseIndex(raw)
		if err != nil {
			return nil, fmt.Errorf("%s (cached): %w", what, err)
		}
		e.idx, e.at = idx, time.Now()
		return idx, nil
	}
	p, err := url.Parse(repoURL)
	if err != nil {
		return nil, fmt.Errorf("%w: spec.url: %v", ErrInvalid, err)
	}
	p.Path = strings.TrimSuffix(p.Path, "/") + "/index.yaml"
	p.RawPath = ""
	hdr := http.Header{}
	if e.idx == nil {
		// A restart revalidates the persisted index.
		if m, ok := f.cache.getMeta("index-etag", repoURL); ok {
			var im indexMeta
			if json.Unmarshal(m, &im) == nil && im.ETag != "" {
				if raw, ok := f.cache.getMeta("index", repoURL); ok {
					if idx, err := parseIndex(raw); err == nil {
						e.idx, e.etag = idx, im.ETag
					}
				}
			}
		}
	}
	if e.idx != nil && e.etag != "" {
		hdr.Set("If-None-Match", e.etag)
	}
	resp, raw, err := f.httpGet(ctx, rt, p.String(), auth, hdr, MaxIndexSize, what)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotModified && e.idx != nil {
		f.n.notModified.Add(1)
		e.at = time.Now()
		return e.idx, nil
	}
	f.n.indexFetches.Add(1)
	idx, err := parseIndex(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	e.idx, e.etag, e.at = idx, resp.Header.Get("ETag"), time.Now()
	if err := f.cache.putMeta("index", repoURL, raw); err != nil {
		f.log.Warn("index not cached", "repository", redact(repoURL), "err", err)
	}
	m, _ := json.Marshal(indexMeta{ETag: e.etag})
	_ = f.cache.putMeta("index-etag", repoURL, m)
	return idx, nil
}

// parseIndex parses an index.yaml (or JSON) as helm's loader does: invalid
// entries are dropped, entries sorted newest first.
func parseIndex(raw []byte) (*repo.IndexFile, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: empty index", ErrInvalid)
	}
	var idx repo.IndexFile
	if err := yaml.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("%w: index: %v", ErrInvalid, err)
	}
	if idx.APIVersion == "" {
		return nil, fmt.Errorf("%w: index has no apiVersion", ErrInvalid)
	}
	for name, cvs := range idx.Entries {
		kept := cvs[:0]
		for _, cv := range cvs {
			if cv == nil {
				continue
			}
			if cv.Metadata == nil {
				cv.Metadata = &chart.Metadata{}
			}
			if cv.APIVersion == "" {
				cv.APIVersion = chart.APIVersionV1
			}
			if err := cv.Validate(); err != nil && !strings.HasPrefix(err.Error(), "validation: more than one dependency with name or alias") {
				continue
			}
			kept = append(kept, cv)
		}
		idx.Entries[name] = kept
	}
	idx.SortEntries()
	return &idx, nil
}
