package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gitaso/gitaso/source/charts"
)

// TestHelmChartsFetcher renders a HelmRelease whose chart is in an HTTP
// Helm repository (an httptest server serving index.yaml and the archive)
// through package charts' Fetcher; a second Render of an unchanged chart
// does not download the archive again.
func TestHelmChartsFetcher(t *testing.T) {
	archive := chartArchive(t, "infra", "2.1.0", "location: westus\n", remoteTemplates, nil)
	older := chartArchive(t, "infra", "2.0.0", "location: westus\n", remoteTemplates, nil)
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	var downloads atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.yaml":
			fmt.Fprintf(w, `apiVersion: v1
entries:
  infra:
    - name: infra
      version: 2.1.0
      digest: %s
      urls: [%s/infra-2.1.0.tgz]
    - name: infra
      version: 2.0.0
      digest: %s
      urls: [infra-2.0.0.tgz]
generated: "2026-01-01T00:00:00Z"
`, sum(archive), srv.URL, sum(older))
		case "/infra-2.1.0.tgz":
			downloads.Add(1)
			_, _ = w.Write(archive)
		case "/infra-2.0.0.tgz":
			downloads.Add(1)
			_, _ = w.Write(older)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f, err := charts.New(charts.Options{HTTPClient: srv.Client(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	files := withFiles(map[string]string{"apps/team-b.yaml": "", "apps/team-a.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: platform
  namespace: team-a
spec:
  url: ` + srv.URL + `
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
  values:
    location: ${LOCATION}
`})
	var uses []ChartUse
	opts := Options{Charts: ChartsFetcher(f), OnChart: func(u ChartUse) { uses = append(uses, u) }}
	root := writeRepo(t, files)
	for i := range 2 {
		snap, err := fluxFetch(t, root, "clusters/snd", opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := field(findID(t, snap.Objects, "team-a/ResourceGroup/web"), "spec", "location"); got != "uksouth" {
			t.Errorf("render %d: location %v", i, got)
		}
	}
	if n := downloads.Load(); n != 1 {
		t.Errorf("archive downloaded %d times, want once (cached by digest)", n)
	}
	if len(uses) != 2 || uses[0].Version != "2.1.0" || uses[0].Digest != "sha256:"+sum(archive) || !strings.HasSuffix(uses[0].URL, "infra-2.1.0.tgz") {
		t.Errorf("OnChart %+v", uses)
	}
}
