package charts_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/gitaso/gitaso/source/charts"
)

func ociHelmSource(r *ociRegistry, extra map[string]any) charts.Source {
	spec := map[string]any{"type": "oci", "url": "oci://" + r.host + "/charts"}
	for k, v := range extra {
		spec[k] = v
	}
	return charts.Source{Kind: "HelmRepository", Namespace: "flux-system", Name: "registry", Spec: spec, File: "repos.yaml", Line: 12}
}

func TestOCIHelmRepositorySemver(t *testing.T) {
	r := newOCIRegistry(t, "", "")
	archives := map[string][]byte{}
	layers := map[string]string{}
	manifests := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0+build.7", "2.0.0-beta.1"} {
		archives[v] = buildChart(t, "infra", v)
		manifests[v], layers[v] = r.push(t, "charts", archives[v], "infra", v)
	}
	r.pushLayer(t, "charts/infra", "latest", archives["1.0.0"], charts.HelmChartLayerMediaType) // not semver: skipped
	f := newFetcher(t, r.srv.Client(), nil)
	for _, tc := range []struct{ version, want string }{
		{"", "1.2.0+build.7"},
		{"1.x", "1.2.0+build.7"},
		{"~1.1", "1.1.0"},
		{">=2.0.0-0", "2.0.0-beta.1"},
		{"1.0.0", "1.0.0"},
		{"1.2.0+build.7", "1.2.0+build.7"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			c, err := f.Fetch(bg, charts.Request{Source: ociHelmSource(r, nil), Chart: "infra", Version: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			tag := strings.ReplaceAll(tc.want, "+", "_")
			if c.Version != tc.want || c.Name != "infra" || c.Digest != layers[tc.want] || !bytes.Equal(c.Archive, archives[tc.want]) {
				t.Fatalf("got %s %s %s, want %s %s", c.Name, c.Version, c.Digest, tc.want, layers[tc.want])
			}
			if want := "oci://" + r.host + "/charts/infra:" + tag + "@" + manifests[tc.want]; c.URL != want {
				t.Fatalf("URL = %s, want %s", c.URL, want)
			}
			if _, err := loader.LoadArchive(bytes.NewReader(c.Archive)); err != nil {
				t.Fatal(err)
			}
		})
	}
	if n := r.reqs.get("GET /v2/charts/infra/tags/list"); n != 1 {
		t.Errorf("tags listed %d times, want once within the TTL", n)
	}
	_, err := f.Fetch(bg, charts.Request{Source: ociHelmSource(r, nil), Chart: "infra", Version: "3.x"})
	if !errors.Is(err, charts.ErrNotFound) || !strings.Contains(err.Error(), `HelmRepository flux-system/registry at repos.yaml:12: chart "infra" version "3.x"`) ||
		!strings.Contains(err.Error(), "available: 1.0.0, 1.1.0, 1.2.0+build.7, 2.0.0-beta.1") {
		t.Fatalf("no match: %v", err)
	}
	_, err = f.Fetch(bg, charts.Request{Source: ociHelmSource(r, nil), Chart: "missing", Version: "1.x"})
	if !errors.Is(err, charts.ErrNotFound) {
		t.Fatalf("missing repository: %v", err)
	}
}

func TestOCIExactVersionSkipsTagListAndCacheHits(t *testing.T) {
	r := newOCIRegistry(t, "", "")
	a := buildChart(t, "infra", "1.0.0")
	_, layer := r.push(t, "charts", a, "infra", "1.0.0")
	r.reqs.reset()
	f := newFetcher(t, r.srv.Client(), func(o *charts.Options) { o.IndexTTL = -1 })
	for i := range 3 {
		c, err := f.Fetch(bg, charts.Request{Source: ociHelmSource(r, nil), Chart: "infra", Version: "1.0.0"})
		if err != nil || c.Cached != (i > 0) {
			t.Fatalf("fetch %d: cached=%v %v", i, c != nil && c.Cached, err)
		}
	}
	if n := r.reqs.count("/tags/list"); n != 0 {
		t.Errorf("an exact version listed tags (%d)", n)
	}
	if n := r.reqs.get("GET /v2/charts/infra/blobs/" + layer); n != 1 {
		t.Errorf("chart layer pulled %d times, want 1", n)
	}
	if n := r.reqs.get("GET /v2/charts/infra/manifests/1.0.0"); n != 3 {
		t.Errorf("manifest asked %d times, want 3 (every Fetch resolves the tag again when IndexTTL < 0)", n)
	}
}

func TestOCIRepository(t *testing.T) {
	r := newOCIRegistry(t, "", "")
	a1 := buildChart(t, "app", "0.1.0")
	a2 := buildChart(t, "app", "0.2.0")
	m1, l1 := r.pushLayer(t, "apps/app", "0.1.0", a1, charts.HelmChartLayerMediaType)
	_, l2 := r.pushLayer(t, "apps/app", "0.2.0", a2, charts.HelmChartLayerMediaType)
	r.pushLayer(t, "apps/app", "latest", a2, charts.HelmChartLayerMediaType)
	r.pushLayer(t, "apps/tarball", "v1", a1, "application/vnd.cncf.flux.content.v1.tar+gzip")
	f := newFetcher(t, r.srv.Client(), nil)
	src := func(spec map[string]any) charts.Source {
		return charts.Source{Kind: "OCIRepository", Namespace: "apps", Name: "app", Spec: spec, File: "oci.yaml", Line: 1}
	}
	url := "oci://" + r.host + "/apps/app"
	for _, tc := range []struct {
		name   string
		spec   map[string]any
		digest string
		err    string
	}{
		{"default latest", map[string]any{"url": url}, l2, ""},
		{"tag", map[string]any{"url": url, "ref": map[string]any{"tag": "0.1.0"}}, l1, ""},
		{"semver", map[string]any{"url": url, "ref": map[string]any{"semver": "<0.2.0"}}, l1, ""},
		{"semverFilter", map[string]any{"url": url, "ref": map[string]any{"semver": "*", "semverFilter": "^0\\.1"}}, l1, ""},
		{"digest", map[string]any{"url": url, "ref": map[string]any{"digest": m1, "tag": "0.2.0"}}, l1, ""},
		{"selector", map[string]any{"url": url, "layerSelector": map[string]any{"mediaType": charts.HelmChartLayerMediaType, "operation": "copy"}}, l2, ""},
		{"other media type", map[string]any{"url": "oci://" + r.host + "/apps/tarball", "ref": map[string]any{"tag": "v1"}}, "", "has no layer of media type " + charts.HelmChartLayerMediaType + " (layers: application/vnd.cncf.flux.content.v1.tar+gzip)"},
		{"selected other type", map[string]any{"url": "oci://" + r.host + "/apps/tarball", "ref": map[string]any{"tag": "v1"}, "layerSelector": map[string]any{"mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip"}}, l1, ""},
		{"missing tag", map[string]any{"url": url, "ref": map[string]any{"tag": "9.9.9"}}, "", "chart not found"},
		{"bad url", map[string]any{"url": "https://" + r.host}, "", "want oci://"},
		{"provider aws", map[string]any{"url": url, "provider": "aws"}, "", "unsupported chart source"},
		{"verify", map[string]any{"url": url, "verify": map[string]any{"provider": "cosign"}}, "", "spec.verify: gitaso does not verify signatures"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := f.Fetch(bg, charts.Request{Source: src(tc.spec)})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "OCIRepository apps/app at oci.yaml:1: ") {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Digest != tc.digest {
				t.Fatalf("digest %s, want %s", c.Digest, tc.digest)
			}
		})
	}
}

func TestOCIAuth(t *testing.T) {
	r := newOCIRegistry(t, "puller", "pull-secret-123")
	a := buildChart(t, "infra", "1.0.0")
	r.push(t, "charts", a, "infra", "1.0.0")
	dockerConfig := func(host, user, pass string) string {
		b, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{
			"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))}}})
		return string(b)
	}
	for _, tc := range []struct {
		name   string
		secret charts.Secret
		err    error
	}{
		{"anonymous", nil, charts.ErrAuth},
		{"basic", charts.Secret{"username": "puller", "password": "pull-secret-123"}, nil},
		{"dockerconfigjson", charts.Secret{".dockerconfigjson": dockerConfig(r.host, "puller", "pull-secret-123")}, nil},
		{"dockerconfigjson with scheme", charts.Secret{".dockerconfigjson": dockerConfig("https://"+r.host+"/v1/", "puller", "pull-secret-123")}, nil},
		{"dockerconfigjson other host", charts.Secret{".dockerconfigjson": dockerConfig("registry.example", "puller", "pull-secret-123")}, charts.ErrAuth},
		{"wrong password", charts.Secret{"username": "puller", "password": "wrong-pw-456"}, charts.ErrAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFetcher(t, r.srv.Client(), nil)
			c, err := f.Fetch(bg, charts.Request{Source: ociHelmSource(r, nil), Secret: tc.secret, Chart: "infra", Version: "1.x"})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				for _, s := range []string{"pull-secret-123", "wrong-pw-456"} {
					if strings.Contains(err.Error(), s) {
						t.Fatalf("error shows a password: %v", err)
					}
				}
				return
			}
			if err != nil || !bytes.Equal(c.Archive, a) {
				t.Fatalf("fetch: %v", err)
			}
		})
	}
}

func TestOCIOfflineAndFetchURL(t *testing.T) {
	r := newOCIRegistry(t, "", "")
	a := buildChart(t, "lib", "0.4.0")
	_, layer := r.push(t, "deps", a, "lib", "0.4.0")
	dir := t.TempDir()
	f := newFetcher(t, r.srv.Client(), func(o *charts.Options) { o.CacheDir = dir })
	c, err := f.FetchURL(bg, "oci://"+r.host+"/deps", "lib", "0.x", nil)
	if err != nil || c.Digest != layer || c.Cached {
		t.Fatalf("FetchURL oci: %+v %v", c, err)
	}
	r.reqs.reset()
	off := newFetcher(t, nil, func(o *charts.Options) { o.CacheDir = dir; o.Offline = true })
	c, err = off.FetchURL(bg, "oci://"+r.host+"/deps", "lib", "0.x", nil)
	if err != nil || !c.Cached || c.Digest != layer {
		t.Fatalf("offline: %v", err)
	}
	if _, err := off.FetchURL(bg, "oci://"+r.host+"/deps", "other", "0.x", nil); !errors.Is(err, charts.ErrOffline) {
		t.Fatalf("offline, never listed: %v", err)
	}
	if n := r.reqs.count(""); n != 0 {
		t.Errorf("offline mode sent %d requests", n)
	}
}

// TestOCIPlainHTTPNeedsInsecure: a registry without TLS is reached only with
// spec.insecure, even on a loopback address (where go-containerregistry
// would fall back to http:// by itself).
func TestOCIPlainHTTPNeedsInsecure(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(inner)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	r := &ociRegistry{srv: srv, reqs: &counter{}, host: host}
	a := buildChart(t, "infra", "1.0.0")
	r.push(t, "charts", a, "infra", "1.0.0")
	f := newFetcher(t, nil, nil)
	src := charts.Source{Kind: "HelmRepository", Name: "plain", Spec: map[string]any{"type": "oci", "url": "oci://" + host + "/charts"}}
	if _, err := f.Fetch(bg, charts.Request{Source: src, Chart: "infra", Version: "1.0.0"}); !errors.Is(err, charts.ErrInsecure) {
		t.Fatalf("without spec.insecure: %v", err)
	}
	src.Spec["insecure"] = true
	if c, err := f.Fetch(bg, charts.Request{Source: src, Chart: "infra", Version: "1.x"}); err != nil || !bytes.Equal(c.Archive, a) {
		t.Fatalf("with spec.insecure: %v", err)
	}
}

// TestOCILayerDigestMismatch: a registry that serves other bytes than the
// manifest's layer digest is refused.
func TestOCILayerDigestMismatch(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") {
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, r)
			b := rec.Body.Bytes()
			if len(b) > 0 {
				b[len(b)/2] ^= 0xff
			}
			for k, vs := range rec.Header() {
				w.Header()[k] = vs
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(b)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	r := &ociRegistry{srv: srv, reqs: &counter{}, host: strings.TrimPrefix(srv.URL, "https://")}
	r.push(t, "charts", buildChart(t, "infra", "1.0.0"), "infra", "1.0.0")
	f := newFetcher(t, srv.Client(), nil)
	_, err := f.Fetch(bg, charts.Request{Source: ociHelmSource(r, nil), Chart: "infra", Version: "1.0.0"})
	if !errors.Is(err, charts.ErrDigest) || !strings.Contains(err.Error(), `chart "infra" version "1.0.0"`) {
		t.Fatalf("err = %v, want ErrDigest naming the chart", err)
	}
}
