package render

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/manifest"
)

// TestIgnoredReleaseFeedsValuesFrom: a release that renders no ASO object
// but a ConfigMap another release's valuesFrom reads (it dependsOn it) is
// still rendered for that release: its ConfigMap reaches the dependent's
// values, though the release itself is counted as ignored. Before, its
// objects were dropped as soon as it rendered, before the next level
// looked for them: the dependent failed ("no ConfigMap team-z/exported").
func TestIgnoredReleaseFeedsValuesFrom(t *testing.T) {
	hr := func(name, chart, extra string) string {
		return fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: %s
  namespace: team-z
spec:
  chart:
    spec:
      chart: %s
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
%s`, name, chart, extra)
	}
	files := withFiles(map[string]string{
		"apps/team-a.yaml": "",
		"apps/team-b.yaml": hr("consumer", "charts/infra", `  dependsOn:
    - name: settings
  valuesFrom:
    - kind: ConfigMap
      name: exported
`) + "---\n" + hr("settings", "charts/settings", ""),
		"charts/settings/Chart.yaml": "apiVersion: v2\nname: settings\nversion: 0.1.0\n",
		"charts/settings/templates/exported.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: exported
data:
  values.yaml: |
    fromConfigMap: exported-by-settings
`,
	})
	for i := range 2 { // the second time with what the first remembered
		snap, err := helmFetch(t, files, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range snap.Units {
			if u.Failed() {
				t.Fatalf("render %d: unit %s failed: %s", i, u.ID(), u.Message)
			}
			if u.Name == "settings" && !u.Ignored {
				t.Errorf("render %d: settings renders no ASO object and is not counted as ignored", i)
			}
		}
		if got := field(findID(t, snap.Objects, "team-z/ConfigMap/consumer-rendered"), "data", "fromConfigMap"); got != "exported-by-settings" {
			t.Errorf("render %d: consumer fromConfigMap = %v", i, got)
		}
	}
}

// TestRememberedReleaseFeedsValuesFrom: the same with the settings chart
// fetched from a Helm repository and the memory of releases on: a release
// another release depends on is never skipped by memory (its ConfigMap
// would be missing from the dependent's valuesFrom), rendered on every
// render; with its registry down it fails (ArtifactFailed) and its
// dependent waits, rather than being ignored with nothing to feed it.
func TestRememberedReleaseFeedsValuesFrom(t *testing.T) {
	repo := newChartRepo(t)
	repo.publish("1.0.0", chartArchive(t, "certm", "1.0.0", "", map[string]string{"exported.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: exported
data:
  values.yaml: |
    fromConfigMap: exported-by-settings
`}, nil))
	files := withFiles(map[string]string{
		"apps/team-a.yaml": "",
		"apps/team-b.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: platform
  namespace: team-z
spec:
  url: ` + repo.srv.URL + `
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: settings
  namespace: team-z
spec:
  chart:
    spec:
      chart: certm
      version: 1.x
      sourceRef:
        kind: HelmRepository
        name: platform
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: consumer
  namespace: team-z
spec:
  dependsOn:
    - name: settings
  chart:
    spec:
      chart: charts/infra
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
  valuesFrom:
    - kind: ConfigMap
      name: exported
`,
	})
	root := writeRepo(t, files)
	memory := filepath.Join(t.TempDir(), "releases.json")
	for i := range 2 {
		snap, err := fluxFetch(t, root, "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, repo)), ReleaseMemory: memory})
		if u := releaseUnit(t, snap, err, "HelmRelease/team-z/consumer"); u.Failed() {
			t.Fatalf("render %d: consumer failed: %s", i, u.Message)
		}
		if got := field(findID(t, snap.Objects, "team-z/ConfigMap/consumer-rendered"), "data", "fromConfigMap"); got != "exported-by-settings" {
			t.Errorf("render %d: consumer fromConfigMap = %v", i, got)
		}
		if u := releaseUnit(t, snap, err, "HelmRelease/team-z/settings"); !u.Ignored || strings.Contains(u.Message, "remembered") {
			t.Errorf("render %d: settings %+v, want ignored (rendered, not remembered)", i, u)
		}
	}
	repo.down.Store(true)
	snap, err := fluxFetch(t, root, "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, repo)), ReleaseMemory: memory})
	if u := releaseUnit(t, snap, err, "HelmRelease/team-z/settings"); u.Reason != manifest.ReasonArtifactFailed {
		t.Errorf("registry down: settings %+v, want ArtifactFailed", u)
	}
	if u := releaseUnit(t, snap, err, "HelmRelease/team-z/consumer"); u.Reason != manifest.ReasonDependencyNotReady {
		t.Errorf("registry down: consumer %+v, want DependencyNotReady", u)
	}
}

// TestRememberedReleaseCapabilities: a chart that renders an ASO object
// only when .Capabilities has its API version (as charts gate objects of
// CRDs) renders none, is remembered, and renders it once
// --helm-api-versions adds the version: the memory's key holds the
// capabilities. Before, it was keyed by digest and values only and the
// release stayed ignored.
func TestRememberedReleaseCapabilities(t *testing.T) {
	repo := newChartRepo(t)
	repo.publish("1.0.0", chartArchive(t, "certm", "1.0.0", "replicas: 1\n", map[string]string{
		"deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: certm\n",
		"rg.yaml": `{{- if .Capabilities.APIVersions.Has "resources.azure.com/v1api20200601" }}
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg-certm
spec:
  location: westeurope
{{- end }}
`}, nil))
	root := writeRepo(t, certmRepo(repo.srv.URL, ""))
	memory := filepath.Join(t.TempDir(), "releases.json")
	const id = "HelmRelease/cert-manager/cert-manager"
	for i := range 2 {
		snap, err := fluxFetch(t, root, "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, repo)), ReleaseMemory: memory})
		if u := releaseUnit(t, snap, err, id); !u.Ignored {
			t.Fatalf("render %d without the API version: %+v, want ignored", i, u)
		}
	}
	snap, err := fluxFetch(t, root, "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, repo)), ReleaseMemory: memory,
		HelmAPIVersions: []string{"resources.azure.com/v1api20200601"}})
	if u := releaseUnit(t, snap, err, id); u.Ignored || u.Failed() {
		t.Errorf("with the API version: %+v, want rendered", u)
	}
	findID(t, snap.Objects, "cert-manager/ResourceGroup/rg-certm")
}

// TestRememberedReleaseMovedRegistry: a release remembered to render no
// ASO object whose HelmRepository now names another registry, which does
// not answer, fails (ArtifactFailed) as Flux would: the memory is of the
// chart of the old registry. Before, the chart spec named the source only
// by name, and the release was ignored.
func TestRememberedReleaseMovedRegistry(t *testing.T) {
	repo := newChartRepo(t)
	repo.publish("1.0.0", chartArchive(t, "certm", "1.0.0", "replicas: 1\n", map[string]string{
		"deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: certm\n"}, nil))
	moved := newChartRepo(t)
	moved.down.Store(true)
	memory := filepath.Join(t.TempDir(), "releases.json")
	const id = "HelmRelease/cert-manager/cert-manager"
	snap, err := fluxFetch(t, writeRepo(t, certmRepo(repo.srv.URL, "")), "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, repo)), ReleaseMemory: memory})
	if u := releaseUnit(t, snap, err, id); !u.Ignored {
		t.Fatalf("first render: %+v, want ignored", u)
	}
	snap, err = fluxFetch(t, writeRepo(t, certmRepo(moved.srv.URL, "")), "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, moved)), ReleaseMemory: memory})
	if u := releaseUnit(t, snap, err, id); u.Reason != manifest.ReasonArtifactFailed {
		t.Errorf("moved registry down: %+v, want ArtifactFailed", u)
	}
	// The old registry down: the remembered release is ignored.
	repo.down.Store(true)
	snap, err = fluxFetch(t, writeRepo(t, certmRepo(repo.srv.URL, "")), "clusters/snd", Options{Charts: ChartsFetcher(mustFetcher(t, repo)), ReleaseMemory: memory})
	if u := releaseUnit(t, snap, err, id); !u.Ignored || u.Failed() {
		t.Errorf("old registry down: %+v, want ignored", u)
	}
}
