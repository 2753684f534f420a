package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source/charts"
)

// chartRepo is a Helm repository over HTTPS: an index and archives, which
// it can stop serving (503), counting the requests it answers.
type chartRepo struct {
	srv      *httptest.Server
	mu       sync.Mutex
	archives map[string][]byte // version → archive
	down     atomic.Bool
	requests atomic.Int64
	fetched  atomic.Int64 // archives downloaded
}

func newChartRepo(t *testing.T) *chartRepo {
	c := &chartRepo{archives: map[string][]byte{}}
	c.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		if c.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if r.URL.Path == "/index.yaml" {
			var b strings.Builder
			b.WriteString("apiVersion: v1\nentries:\n  certm:\n")
			for v, a := range c.archives {
				sum := sha256.Sum256(a)
				fmt.Fprintf(&b, "  - name: certm\n    apiVersion: v2\n    version: %s\n    digest: %s\n    urls: [%s/certm-%s.tgz]\n", v, hex.EncodeToString(sum[:]), c.srv.URL, v)
			}
			w.Write([]byte(b.String()))
			return
		}
		for v, a := range c.archives {
			if r.URL.Path == "/certm-"+v+".tgz" {
				c.fetched.Add(1)
				w.Write(a)
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *chartRepo) publish(version string, archive []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.archives[version] = archive
}

func certmRepo(url, annotations string) map[string]string {
	return withFiles(map[string]string{"apps/team-a.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: jetstack
  namespace: cert-manager
spec:
  url: ` + url + `
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: cert-manager
  namespace: cert-manager` + annotations + `
spec:
  chart:
    spec:
      chart: certm
      version: 1.x
      sourceRef:
        kind: HelmRepository
        name: jetstack
  values:
    replicas: 2
`})
}

func releaseUnit(t *testing.T, snap *manifest.Snapshot, err error, id string) manifest.Unit {
	t.Helper()
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	for _, u := range snap.Units {
		if u.ID() == id {
			return u
		}
	}
	t.Fatalf("no unit %s", id)
	return manifest.Unit{}
}

// A release that renders no ASO object is counted and left out, remembered
// by its chart's digest and values: not rendered again, and ignored rather
// than failed when its registry does not answer; a new chart version that
// renders an ASO object is rendered. A release skipped by annotation or
// --skip-release is never fetched.
func TestReleasesThatRenderNoASOObject(t *testing.T) {
	repo := newChartRepo(t)
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: certm\nspec:\n  replicas: {{ .Values.replicas }}\n"
	repo.publish("1.0.0", chartArchive(t, "certm", "1.0.0", "replicas: 1\n", map[string]string{"deploy.yaml": deploy}, nil))
	f, err := charts.New(charts.Options{HTTPClient: repo.srv.Client(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	memory := filepath.Join(t.TempDir(), "releases.json")
	opts := Options{Charts: ChartsFetcher(f), ReleaseMemory: memory}
	root := writeRepo(t, certmRepo(repo.srv.URL, ""))
	const id = "HelmRelease/cert-manager/cert-manager"

	snap, err := fluxFetch(t, root, "clusters/snd", opts)
	u := releaseUnit(t, snap, err, id)
	if !u.Ignored || u.Failed() || !strings.Contains(u.Message, "renders no ASO object (chart certm@1.0.0)") {
		t.Errorf("first render: %+v, want ignored, rendering no ASO object", u)
	}
	for _, o := range append(snap.Objects, snap.Ignored...) {
		if manifest.UnitOf(o) == id {
			t.Errorf("object %s of an ignored release is in the snapshot", o.ID())
		}
	}
	if b, err := os.ReadFile(memory); err != nil || !strings.Contains(string(b), "certm@1.0.0") {
		t.Fatalf("memory file: %v %s", err, b)
	}

	// A new process (a new renderer) with the same memory: not rendered.
	snap, err = fluxFetch(t, root, "clusters/snd", opts)
	if u = releaseUnit(t, snap, err, id); !u.Ignored || !strings.Contains(u.Message, "remembered by its digest") {
		t.Errorf("second render: %+v, want remembered by its digest", u)
	}

	// The registry stops answering: ignored, not failed.
	repo.down.Store(true)
	snap, err = fluxFetch(t, root, "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, repo)), ReleaseMemory: memory})
	if u = releaseUnit(t, snap, err, id); u.Failed() || !u.Ignored || !strings.Contains(u.Message, "its registry does not answer") {
		t.Errorf("registry down: %+v, want ignored as remembered", u)
	}
	// Other values: not the release remembered, so it fails as before.
	other := writeRepo(t, certmRepo(repo.srv.URL, ""))
	if err := os.WriteFile(filepath.Join(other, "apps/team-a.yaml"), []byte(strings.ReplaceAll(certmRepo(repo.srv.URL, "")["apps/team-a.yaml"], "replicas: 2", "replicas: 3")), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err = fluxFetch(t, other, "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, repo)), ReleaseMemory: memory})
	if u = releaseUnit(t, snap, err, id); u.Reason != manifest.ReasonArtifactFailed {
		t.Errorf("registry down, values changed: %+v, want ArtifactFailed", u)
	}
	repo.down.Store(false)

	// A new version adds an ASO object: rendered, and forgotten.
	rg := "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg-certm\n  namespace: cert-manager\nspec:\n  location: westeurope\n"
	repo.publish("1.1.0", chartArchive(t, "certm", "1.1.0", "replicas: 1\n", map[string]string{"deploy.yaml": deploy, "rg.yaml": rg}, nil))
	snap, err = fluxFetch(t, root, "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, repo)), ReleaseMemory: memory}) // a fetcher whose index is not cached
	if u = releaseUnit(t, snap, err, id); u.Ignored {
		t.Errorf("1.1.0 renders a ResourceGroup: %+v", u)
	}
	findID(t, snap.Objects, "cert-manager/ResourceGroup/rg-certm")
	repo.down.Store(true)
	snap, err = fluxFetch(t, root, "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, repo)), ReleaseMemory: memory})
	if u = releaseUnit(t, snap, err, id); u.Reason != manifest.ReasonArtifactFailed {
		t.Errorf("registry down after the chart rendered ASO objects: %+v, want ArtifactFailed", u)
	}
	repo.down.Store(false)

	// Skipped: never fetched.
	for name, tc := range map[string]struct {
		ann  string
		skip []string
	}{
		"annotation": {ann: "\n  annotations:\n    gitaso.io/skip: \"true\""},
		"flag":       {skip: []string{"cert-manager/*"}},
	} {
		before := repo.requests.Load()
		root := writeRepo(t, certmRepo(repo.srv.URL, tc.ann))
		snap, err := fluxFetch(t, root, "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, repo)), SkipReleases: tc.skip})
		if u := releaseUnit(t, snap, err, id); !u.Ignored || !strings.Contains(u.Message, "skipped") {
			t.Errorf("%s: %+v, want skipped", name, u)
		}
		if n := repo.requests.Load() - before; n != 0 {
			t.Errorf("%s: the registry saw %d requests for a skipped release", name, n)
		}
	}
}

func mustFetcher(t *testing.T, repo *chartRepo) *charts.Fetcher {
	t.Helper()
	f, err := charts.New(charts.Options{HTTPClient: repo.srv.Client(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return f
}
