package render

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/charts"
)

// TestHelmRegistryUnavailableIsNotARefusal: a Helm repository that answers 503, 429 or not at all fails the
// release's unit with ArtifactFailed and Retry (its error wraps source.ErrUnavailable: rendered again without a new
// commit); one that answers 404 for the chart is the repository's own mistake: ArtifactFailed until a new commit
// (issue 24: a chart registry that stops answering is a source failure, like Git; issue 25: it fails the release
// alone, never the revision).
func TestHelmRegistryUnavailableIsNotARefusal(t *testing.T) {
	var status atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	url := srv.URL
	f, err := charts.New(charts.Options{HTTPClient: srv.Client(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	files := withFiles(map[string]string{"apps/team-a.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: platform
  namespace: team-a
spec:
  url: ` + url + `
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: team-a
spec:
  chart:
    spec:
      chart: infra
      version: 2.x
      sourceRef:
        kind: HelmRepository
        name: platform
`})
	opts := Options{Charts: ChartsFetcher(f)}
	root := writeRepo(t, files)
	for _, tc := range []struct {
		name        string
		status      int
		closed      bool
		unavailable bool
	}{
		{"503", http.StatusServiceUnavailable, false, true},
		{"429", http.StatusTooManyRequests, false, true},
		{"404", http.StatusNotFound, false, false},
		{"connection refused", 0, true, true},
	} {
		status.Store(int64(tc.status))
		if tc.closed {
			srv.Close()
		}
		snap, err := fluxFetch(t, root, "clusters/snd", opts)
		u, err := failedUnit(t, snap, err, "HelmRelease/team-a/web", manifest.ReasonArtifactFailed)
		if err == nil {
			t.Fatalf("%s: unit failed without errors", tc.name)
		}
		if u.Retry != tc.unavailable || errors.Is(err, source.ErrUnavailable) != tc.unavailable {
			t.Errorf("%s: retry %v, want %v: %v", tc.name, u.Retry, tc.unavailable, err)
		}
		if !strings.Contains(err.Error(), "team-a/HelmRelease/web") {
			t.Errorf("%s: the error does not name the release: %v", tc.name, err)
		}
	}
}
