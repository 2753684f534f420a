package charts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// listEntry is the tag list of one OCI repository (and credentials).
type listEntry struct {
	mu   sync.Mutex
	tags []string
	at   time.Time
}

// manifestEntry is what a tag (or digest) of an OCI repository resolved to.
type manifestEntry struct {
	mu sync.Mutex
	m  *ociManifest
	at time.Time
}

// ociManifest is the part of an OCI manifest gitaso keeps (and persists for
// offline mode).
type ociManifest struct {
	Digest string     `json:"digest"` // of the manifest
	Layers []ociLayer `json:"layers"`
}

type ociLayer struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// ociRepo is one OCI repository as a source reads it.
type ociRepo struct {
	f      *Fetcher
	repo   name.Repository
	spec   map[string]any
	secret Secret
	rt     http.RoundTripper
	authID string
	azure  bool

	puller *remote.Puller
}

// newOCIRepo parses host/path (without oci://) for a source.
func (f *Fetcher) newOCIRepo(ref string, spec map[string]any, secret Secret) (*ociRepo, error) {
	var opts []name.Option
	if specBool(spec, "insecure") {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(strings.TrimSuffix(ref, "/"), opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: OCI repository %q: %v", ErrInvalid, ref, err)
	}
	rt, err := f.transport(secret)
	if err != nil {
		return nil, err
	}
	if !specBool(spec, "insecure") {
		// go-containerregistry falls back to http:// for registries named
		// by a loopback or private address; without spec.insecure, TLS it is.
		rt = httpsOnly{rt}
	}
	o := &ociRepo{f: f, repo: repo, spec: spec, secret: secret, rt: rt}
	switch p := specString(spec, "provider"); p {
	case "", "generic":
		o.authID = "secret:" + sha256Hex([]byte(secret["username"] + "\x00" + secret["password"] + "\x00" + secret[".dockerconfigjson"]))[:16]
	case "azure":
		o.azure, o.authID = true, "azure"
	case "aws", "gcp":
		return nil, fmt.Errorf("%w: spec.provider %q: gitaso authenticates to Azure Container Registry (provider azure) and to registries with a secretRef (provider generic) only", ErrUnsupported, p)
	default:
		return nil, fmt.Errorf("%w: spec.provider %q: want generic, azure, aws or gcp", ErrInvalid, p)
	}
	return o, nil
}

// pull returns the puller, authenticating on first use.
func (o *ociRepo) pull(ctx context.Context) (*remote.Puller, error) {
	if o.puller != nil {
		return o.puller, nil
	}
	if o.f.opts.Offline {
		return nil, fmt.Errorf("%s: %w", o.repo.Name(), ErrOffline)
	}
	auth, err := o.f.ociAuth(ctx, o)
	if err != nil {
		return nil, err
	}
	p, err := remote.NewPuller(remote.WithTransport(o.rt), remote.WithAuth(auth), remote.WithUserAgent(o.f.opts.UserAgent))
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	o.puller = p
	return p, nil
}

// ociError classifies a registry error (and forgets an ACR token it
// refused).
func (o *ociRepo) ociError(err error, what string) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			if o.azure {
				o.f.forgetACR(o.repo.RegistryStr())
			}
			return fmt.Errorf("%s: %w: %v", what, ErrAuth, err)
		case http.StatusNotFound:
			return fmt.Errorf("%s: %w: %v", what, ErrNotFound, err)
		}
		if unavailableStatus(te.StatusCode) {
			return fmt.Errorf("%s: %w: %v", what, ErrUnavailable, err)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// tags lists the repository's tags, at most once per IndexTTL.
func (o *ociRepo) tags(ctx context.Context) ([]string, error) {
	f := o.f
	key := o.repo.Name()
	f.mu.Lock()
	e := f.tags[key+"\x00"+o.authID]
	if e == nil {
		e = &listEntry{}
		f.tags[key+"\x00"+o.authID] = e
	}
	f.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tags != nil && (f.opts.Offline || time.Since(e.at) < f.opts.IndexTTL) {
		return e.tags, nil
	}
	if f.opts.Offline {
		b, ok := f.cache.getMeta("tags", key)
		if !ok || json.Unmarshal(b, &e.tags) != nil {
			return nil, fmt.Errorf("tags of %s: %w (they were never listed into the cache)", key, ErrOffline)
		}
		e.at = time.Now()
		return e.tags, nil
	}
	p, err := o.pull(ctx)
	if err != nil {
		return nil, err
	}
	tags, err := p.List(ctx, o.repo)
	if err != nil {
		return nil, o.ociError(err, "list tags of "+key)
	}
	f.n.tagLists.Add(1)
	if tags == nil {
		tags = []string{}
	}
	e.tags, e.at = tags, time.Now()
	b, _ := json.Marshal(tags)
	if err := f.cache.putMeta("tags", key, b); err != nil {
		f.log.Warn("tag list not cached", "repository", key, "err", err)
	}
	return tags, nil
}

// manifest resolves a tag or a digest ("sha256:...") to its manifest; a tag
// at most once per IndexTTL, a digest once.
func (o *ociRepo) manifest(ctx context.Context, ref string) (*ociManifest, error) {
	f := o.f
	byDigest := strings.HasPrefix(ref, "sha256:")
	var r name.Reference
	if byDigest {
		r = o.repo.Digest(ref)
	} else {
		r = o.repo.Tag(ref)
	}
	key := r.Name()
	f.mu.Lock()
	e := f.manifests[key+"\x00"+o.authID]
	if e == nil {
		e = &manifestEntry{}
		f.manifests[key+"\x00"+o.authID] = e
	}
	f.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m != nil && (byDigest || f.opts.Offline || time.Since(e.at) < f.opts.IndexTTL) {
		return e.m, nil
	}
	if f.opts.Offline || byDigest {
		var m ociManifest
		if b, ok := f.cache.getMeta("manifest", key); ok && json.Unmarshal(b, &m) == nil && m.Digest != "" {
			e.m, e.at = &m, time.Now()
			return e.m, nil
		}
		if f.opts.Offline {
			return nil, fmt.Errorf("manifest of %s: %w", key, ErrOffline)
		}
	}
	p, err := o.pull(ctx)
	if err != nil {
		return nil, err
	}
	d, err := p.Get(ctx, r)
	if err != nil {
		return nil, o.ociError(err, "manifest of "+key)
	}
	f.n.manifests.Add(1)
	if len(d.Manifest) > maxManifestSize {
		return nil, fmt.Errorf("manifest of %s: %w: %d bytes", key, ErrTooLarge, len(d.Manifest))
	}
	switch d.MediaType {
	case types.OCIManifestSchema1, types.DockerManifestSchema2:
	default:
		return nil, fmt.Errorf("%w: %s is a %s, not a chart's manifest (%s)", ErrInvalid, key, d.MediaType, types.OCIManifestSchema1)
	}
	man, err := v1.ParseManifest(bytes.NewReader(d.Manifest))
	if err != nil {
		return nil, fmt.Errorf("%w: manifest of %s: %v", ErrInvalid, key, err)
	}
	m := &ociManifest{Digest: d.Digest.String()}
	for _, l := range man.Layers {
		m.Layers = append(m.Layers, ociLayer{MediaType: string(l.MediaType), Digest: l.Digest.String(), Size: l.Size})
	}
	e.m, e.at = m, time.Now()
	b, _ := json.Marshal(m)
	if err := f.cache.putMeta("manifest", key, b); err != nil {
		f.log.Warn("manifest not cached", "ref", key, "err", err)
	}
	return m, nil
}

// chart returns the chart in the layer of mediaType of the manifest ref
// (a tag or a digest) points at, from the cache when its digest is there.
func (o *ociRepo) chart(ctx context.Context, ref, mediaType string) (*Chart, error) {
	m, err := o.manifest(ctx, ref)
	if err != nil {
		return nil, err
	}
	var layer *ociLayer
	var seen []string
	for i := range m.Layers {
		seen = append(seen, m.Layers[i].MediaType)
		if m.Layers[i].MediaType == mediaType && layer == nil {
			layer = &m.Layers[i]
		}
	}
	if layer == nil {
		return nil, fmt.Errorf("%w: %s:%s has no layer of media type %s (layers: %s)", ErrInvalid, o.repo.Name(), ref, mediaType, strings.Join(seen, ", "))
	}
	from := "oci://" + o.repo.Name()
	if strings.HasPrefix(ref, "sha256:") {
		from += "@" + ref
	} else {
		from += ":" + ref + "@" + m.Digest
	}
	if !validDigest(layer.Digest) {
		return nil, fmt.Errorf("%w: %s: layer digest %q is not sha256", ErrInvalid, from, layer.Digest)
	}
	unlock := o.f.lock("blob:" + layer.Digest)
	defer unlock()
	if b, ok := o.f.cache.get(layer.Digest); ok {
		return o.f.chartOf(b, layer.Digest, from, true)
	}
	if o.f.opts.Offline {
		return nil, fmt.Errorf("chart layer %s of %s: %w", layer.Digest, from, ErrOffline)
	}
	if layer.Size > MaxArchiveSize {
		return nil, fmt.Errorf("chart layer of %s: %w: %d bytes, the limit is %d", from, ErrTooLarge, layer.Size, MaxArchiveSize)
	}
	p, err := o.pull(ctx)
	if err != nil {
		return nil, err
	}
	l, err := p.Layer(ctx, o.repo.Digest(layer.Digest))
	if err != nil {
		return nil, o.ociError(err, "chart layer of "+from)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, o.ociError(err, "chart layer of "+from)
	}
	body, err := io.ReadAll(io.LimitReader(rc, MaxArchiveSize+1))
	_ = rc.Close()
	if err != nil {
		if strings.HasPrefix(err.Error(), "error verifying") { // go-containerregistry's digest and size checks
			return nil, fmt.Errorf("chart layer of %s: %w: %v", from, ErrDigest, err)
		}
		return nil, o.ociError(err, "chart layer of "+from)
	}
	if len(body) > MaxArchiveSize {
		return nil, fmt.Errorf("chart layer of %s: %w: more than %d bytes", from, ErrTooLarge, MaxArchiveSize)
	}
	o.f.n.downloads.Add(1)
	o.f.n.bytes.Add(int64(len(body)))
	if got := digestOf(body); got != layer.Digest {
		return nil, fmt.Errorf("chart layer of %s: %w: the manifest says %s, the layer is %s", from, ErrDigest, layer.Digest, got)
	}
	c, err := o.f.chartOf(body, layer.Digest, from, false)
	if err != nil {
		return nil, fmt.Errorf("chart layer of %s: %w", from, err)
	}
	if err := o.f.cache.put(layer.Digest, body); err != nil {
		o.f.log.Warn("chart not cached", "ref", from, "err", err)
	}
	o.f.log.Debug("helm chart pulled", "ref", from, "digest", layer.Digest, "bytes", len(body))
	return c, nil
}

// fetchOCIHelm fetches a chart of a HelmRepository of type oci (or a
// dependency's oci:// repository): repository <url>/<chart>, the highest
// semver tag matching the constraint ("+" is "_" in tags, as helm pushes
// them); an exact version is pulled without listing tags, as Flux does.
func (f *Fetcher) fetchOCIHelm(ctx context.Context, req Request, u string) (*Chart, error) {
	o, err := f.newOCIRepo(strings.TrimSuffix(strings.TrimPrefix(u, "oci://"), "/")+"/"+req.Chart, req.Source.Spec, req.Secret)
	if err != nil {
		return nil, err
	}
	var tag string
	if isExactVersion(req.Version) {
		tag = strings.ReplaceAll(strings.TrimSpace(req.Version), "+", "_")
	} else {
		tags, err := o.tags(ctx)
		if err != nil {
			return nil, err
		}
		v, err := pickTag(tags, req.Version, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.repo.Name(), err)
		}
		tag = v
	}
	return o.chart(ctx, tag, HelmChartLayerMediaType)
}

// pickTag picks the highest tag matching a semver constraint; filter, when
// set, keeps only the tags it matches (OCIRepository spec.ref.semverFilter).
func pickTag(tags []string, c string, filter *regexp.Regexp) (string, error) {
	byVersion := map[string]string{}
	var versions []string
	for _, t := range tags {
		if filter != nil && !filter.MatchString(t) {
			continue
		}
		v := strings.ReplaceAll(t, "_", "+")
		if _, dup := byVersion[v]; !dup {
			byVersion[v] = t
			versions = append(versions, v)
		}
	}
	v, err := pickVersion(versions, c)
	if err != nil {
		return "", err
	}
	return byVersion[v], nil
}

// fetchOCIRepository fetches the chart of an OCIRepository (a HelmRelease's
// chartRef): spec.url, spec.ref (digest, then semver, then tag; default
// tag latest), the layer of spec.layerSelector.mediaType (default the Helm
// chart layer).
func (f *Fetcher) fetchOCIRepository(ctx context.Context, req Request) (*Chart, error) {
	spec := req.Source.Spec
	u := specString(spec, "url")
	if !strings.HasPrefix(u, "oci://") {
		return nil, fmt.Errorf("%w: spec.url %q: want oci://", ErrInvalid, redact(u))
	}
	o, err := f.newOCIRepo(strings.TrimPrefix(u, "oci://"), spec, req.Secret)
	if err != nil {
		return nil, err
	}
	mediaType := specString(spec, "layerSelector.mediaType")
	if mediaType == "" {
		mediaType = HelmChartLayerMediaType
	}
	var ref string
	switch dg, sv, tag := specString(spec, "ref.digest"), specString(spec, "ref.semver"), specString(spec, "ref.tag"); {
	case dg != "":
		if !validDigest(dg) {
			return nil, fmt.Errorf("%w: spec.ref.digest %q: want sha256:<64 hex digits>", ErrInvalid, dg)
		}
		ref = dg
	case sv != "":
		var filter *regexp.Regexp
		if fs := specString(spec, "ref.semverFilter"); fs != "" {
			if filter, err = regexp.Compile(fs); err != nil {
				return nil, fmt.Errorf("%w: spec.ref.semverFilter: %v", ErrInvalid, err)
			}
		}
		tags, err := o.tags(ctx)
		if err != nil {
			return nil, err
		}
		if ref, err = pickTag(tags, sv, filter); err != nil {
			return nil, fmt.Errorf("%s: spec.ref.semver %q: %w", o.repo.Name(), sv, err)
		}
	case tag != "":
		ref = tag
	default:
		ref = "latest"
	}
	return o.chart(ctx, ref, mediaType)
}

// ociAuth returns the credentials for a registry: ACR's token exchange
// (provider azure), the Secret's .dockerconfigjson entry for the host or its
// username and password, or anonymous.
func (f *Fetcher) ociAuth(ctx context.Context, o *ociRepo) (authn.Authenticator, error) {
	host := o.repo.RegistryStr()
	if o.azure {
		scheme := "https" // ACR always serves TLS (ggcr calls loopback hosts http)
		if specBool(o.spec, "insecure") {
			scheme = "http"
		}
		tok, err := f.acrRefreshToken(ctx, host, o.rt, scheme)
		if err != nil {
			return nil, err
		}
		return &authn.Basic{Username: ACRTokenUsername, Password: tok}, nil
	}
	if dc := o.secret[".dockerconfigjson"]; dc != "" {
		a, err := dockerConfigAuth([]byte(dc), host)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	b, err := secretBasic(o.secret)
	if err != nil {
		return nil, err
	}
	if b != nil {
		return &authn.Basic{Username: b.user, Password: b.pass}, nil
	}
	return authn.Anonymous, nil
}

// dockerConfigAuth finds the entry of host in a .dockerconfigjson.
func dockerConfigAuth(raw []byte, host string) (authn.Authenticator, error) {
	var cfg struct {
		Auths map[string]authn.AuthConfig `json:"auths"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%w: the Secret's .dockerconfigjson is not JSON", ErrInvalid)
	}
	var hosts []string
	for k, a := range cfg.Auths {
		h := strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://")
		h, _, _ = strings.Cut(h, "/")
		if strings.EqualFold(h, host) || (host == name.DefaultRegistry && (h == "docker.io" || h == "index.docker.io")) {
			return authn.FromConfig(a), nil // "auth" (base64 user:password) is decoded by the transport
		}
		hosts = append(hosts, h)
	}
	return nil, fmt.Errorf("%w: the Secret's .dockerconfigjson has no entry for %s (it has: %s)", ErrAuth, host, strings.Join(hosts, ", "))
}

// httpsOnly refuses plain http:// requests.
type httpsOnly struct{ rt http.RoundTripper }

func (h httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return nil, fmt.Errorf("%w: %s://%s: set spec.insecure: true to reach a registry without TLS", ErrInsecure, req.URL.Scheme, req.URL.Host)
	}
	return h.rt.RoundTrip(req)
}
