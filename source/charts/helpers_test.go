package charts_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/source/charts"
)

// buildChart packages a chart with helm's chartutil.Save and returns the
// .tgz.
func buildChart(t testing.TB, chartName, version string) []byte {
	t.Helper()
	c := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: chartName, Version: version, Type: "application"},
		Values:   map[string]any{"replicas": 1},
		Templates: []*chart.File{{Name: "templates/cm.yaml",
			Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-" + chartName + "\n")}},
	}
	dir := t.TempDir()
	p, err := chartutil.Save(c, dir)
	if err != nil {
		t.Fatalf("chartutil.Save: %v", err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// counter counts requests by path.
type counter struct {
	mu    sync.Mutex
	paths map[string]int
	auth  []string // Authorization headers seen
}

func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		if c.paths == nil {
			c.paths = map[string]int{}
		}
		c.paths[r.Method+" "+r.URL.Path]++
		if a := r.Header.Get("Authorization"); a != "" {
			c.auth = append(c.auth, a)
		}
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paths[key]
}

// count sums the requests whose "METHOD path" contains sub.
func (c *counter) count(sub string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.paths {
		if strings.Contains(k, sub) {
			n += v
		}
	}
	return n
}

func (c *counter) authCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.auth)
}

func (c *counter) reset() {
	c.mu.Lock()
	c.paths, c.auth = nil, nil
	c.mu.Unlock()
}

// helmRepo is an HTTP Helm repository served by the test.
type helmRepo struct {
	srv     *httptest.Server
	reqs    *counter
	mu      sync.Mutex
	index   *repo.IndexFile
	files   map[string][]byte // path → content
	user    string
	pass    string
	rawIdx  []byte // when set, served instead of index
	charts  map[string][]byte
	baseURL string // absolute base for index URLs ("" relative)
}

func newHelmRepo(t testing.TB, tlsOn bool, user, pass string) *helmRepo {
	t.Helper()
	h := &helmRepo{reqs: &counter{}, index: repo.NewIndexFile(), files: map[string][]byte{}, user: user, pass: pass, charts: map[string][]byte{}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != h.user || p != h.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if r.URL.Path == "/index.yaml" {
			raw := h.rawIdx
			if raw == nil {
				var err error
				if raw, err = yaml.Marshal(h.index); err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
			}
			etag := `"` + sha(raw)[:16] + `"`
			w.Header().Set("ETag", etag)
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			_, _ = w.Write(raw)
			return
		}
		b, ok := h.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		_, _ = w.Write(b)
	})
	if tlsOn {
		h.srv = httptest.NewTLSServer(h.reqs.wrap(handler))
	} else {
		h.srv = httptest.NewServer(h.reqs.wrap(handler))
	}
	t.Cleanup(h.srv.Close)
	return h
}

// add publishes a chart version; digest "" is the archive's, "-" none.
func (h *helmRepo) add(t testing.TB, chartName, version string, digest string) []byte {
	t.Helper()
	b := buildChart(t, chartName, version)
	h.addArchive(t, chartName, version, b, digest)
	return b
}

func (h *helmRepo) addArchive(t testing.TB, chartName, version string, b []byte, digest string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	file := fmt.Sprintf("charts/%s-%s.tgz", chartName, version)
	h.files["/"+file] = b
	switch digest {
	case "":
		digest = sha(b)
	case "-":
		digest = ""
	}
	md := &chart.Metadata{APIVersion: chart.APIVersionV2, Name: chartName, Version: version}
	if err := h.index.MustAdd(md, file, h.baseURL, digest); err != nil {
		t.Fatal(err)
	}
	h.index.SortEntries()
	h.charts[chartName+"@"+version] = b
}

func (h *helmRepo) URL() string { return h.srv.URL }

func (h *helmRepo) source(extra map[string]any) charts.Source {
	spec := map[string]any{"url": h.URL()}
	for k, v := range extra {
		spec[k] = v
	}
	return charts.Source{Kind: "HelmRepository", Namespace: "flux-system", Name: "charts", Spec: spec, File: "repos.yaml", Line: 3}
}

// ociRegistry is go-containerregistry's registry behind TLS.
type ociRegistry struct {
	srv  *httptest.Server
	reqs *counter
	host string
	user string
	pass string
}

func newOCIRegistry(t testing.TB, user, pass string) *ociRegistry {
	t.Helper()
	o := &ociRegistry{reqs: &counter{}, user: user, pass: pass}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != o.user || p != o.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
				w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		inner.ServeHTTP(w, r)
	})
	o.srv = httptest.NewTLSServer(o.reqs.wrap(h))
	t.Cleanup(o.srv.Close)
	o.host = strings.TrimPrefix(o.srv.URL, "https://")
	return o
}

// push stores a chart as helm push does: repository <ns>/<chart>, tag the
// version with "+" as "_", config of the Helm config media type, one layer
// of the chart media type. It returns the manifest and layer digests.
func (o *ociRegistry) push(t testing.TB, ns string, archive []byte, chartName, version string) (manifestDigest, layerDigest string) {
	t.Helper()
	return o.pushLayer(t, ns+"/"+chartName, strings.ReplaceAll(version, "+", "_"), archive, charts.HelmChartLayerMediaType)
}

func (o *ociRegistry) pushLayer(t testing.TB, repoName, tag string, data []byte, mediaType string) (string, string) {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.MediaType(charts.HelmConfigMediaType))
	img, err := mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(data, types.MediaType(mediaType)), MediaType: types.MediaType(mediaType)})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(o.host + "/" + repoName + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	var auth authn.Authenticator = authn.Anonymous
	if o.user != "" {
		auth = &authn.Basic{Username: o.user, Password: o.pass}
	}
	if err := remote.Write(ref, img, remote.WithTransport(o.srv.Client().Transport), remote.WithAuth(auth)); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	md, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var ld v1.Hash
	if ld, err = ls[len(ls)-1].Digest(); err != nil {
		t.Fatal(err)
	}
	return md.String(), ld.String()
}

// newFetcher returns a fetcher trusting the given client's CA.
func newFetcher(t testing.TB, client *http.Client, mod func(*charts.Options)) *charts.Fetcher {
	t.Helper()
	opts := charts.Options{HTTPClient: client}
	if mod != nil {
		mod(&opts)
	}
	f, err := charts.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// cacheFiles lists the archives of a cache directory.
func cacheFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "sha256", "*.tgz"))
	return m
}

var bg = context.Background()
