package examples_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/getter"
	"sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/render"
)

// fluxHelmDir is the Flux repository of the HelmRelease example.
const fluxHelmDir = "flux-helm"

// copyDir copies a directory tree.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// packageChart packages a chart of flux-helm/charts the way its CI does (`helm dependency build` then
// `helm package`, with Helm's SDK): the aso-library dependency (repository file://../aso-library) is vendored as
// charts/aso-library-<version>.tgz inside the archive, because Flux pulls a chart from a registry as packaged
// and does not resolve its dependencies. edit, when set, changes the chart before it is saved (a new version,
// a new default value). It returns the .tgz.
func packageChart(t *testing.T, name string, edit func(*chart.Chart)) []byte {
	t.Helper()
	work := t.TempDir()
	copyDir(t, filepath.Join(fluxHelmDir, "charts"), work)
	dir := filepath.Join(work, name)
	var out bytes.Buffer
	m := &downloader.Manager{
		Out: &out, ChartPath: dir, SkipUpdate: true,
		Getters:          getter.Providers{},
		RepositoryConfig: filepath.Join(work, "repositories.yaml"),
		RepositoryCache:  filepath.Join(work, "cache"),
	}
	if err := m.Update(); err != nil {
		t.Fatalf("helm dependency build %s: %v\n%s", name, err, out.String())
	}
	c, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatalf("load chart %s: %v", name, err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(c)
	}
	saved, err := chartutil.Save(c, t.TempDir())
	if err != nil {
		t.Fatalf("helm package %s: %v", name, err)
	}
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fluxHelmVars returns the data of the ConfigMap config-cluster-flux/platform-vars of the example.
func fluxHelmVars(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fluxHelmDir, "clusters", "snd", "platform-vars.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := source.ParseFile("platform-vars.yaml", b)
	if err != nil || len(objs) != 1 {
		t.Fatalf("platform-vars.yaml: %v (%d objects)", err, len(objs))
	}
	data, err := manifest.ConfigMapData(objs[0])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// releaseValues returns the HelmRelease's spec.values with the ${VARS} of platform-vars substituted (by hand:
// each variable is a whole scalar).
func releaseValues(t *testing.T, vars map[string]string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fluxHelmDir, "services", "team-a", "claims-infra.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for k, v := range vars {
		text = strings.ReplaceAll(text, "${"+k+"}", v)
	}
	var hr struct {
		Spec struct {
			Values map[string]any `json:"values"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(text), &hr); err != nil {
		t.Fatal(err)
	}
	return hr.Spec.Values
}

// TestFluxHelmChartsRender renders the team-infra chart as packaged (library vendored) with Helm's own engine and
// the HelmRelease's values, independently of gitaso's HelmRelease renderer, and checks every object is a valid ASO
// object that plans: the example's charts are right on their own.
func TestFluxHelmChartsRender(t *testing.T) {
	tgz := packageChart(t, "team-infra", nil)
	c, err := loader.LoadArchive(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Dependencies()) != 1 || c.Dependencies()[0].Name() != "aso-library" {
		t.Fatalf("packaged chart's dependencies: %v", c.Dependencies())
	}
	vars := fluxHelmVars(t)
	vals, err := chartutil.ToRenderValues(c, releaseValues(t, vars),
		chartutil.ReleaseOptions{Name: "team-a-claims-infra", Namespace: "team-a", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(c, vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var files []source.File
	for name, text := range out {
		if testing.Verbose() {
			t.Logf("%s:\n%s", name, text)
		}
		if strings.TrimSpace(text) != "" && strings.HasSuffix(name, ".yaml") {
			files = append(files, source.File{Path: name, Data: []byte(text)})
		}
	}
	snap, err := source.BuildWithLimits(t.Context(), "chart", files, nil, source.Limits{})
	if err != nil {
		t.Fatalf("parse rendered chart:\n%v", err)
	}
	g, err := planner.Build(snap, planner.Options{SubscriptionID: "00000000-0000-0000-0000-000000000000"})
	if err != nil {
		t.Fatalf("planner.Build:\n%v", err)
	}
	var kinds []string
	for _, o := range snap.Objects {
		if aso.IsASOGroup(o.Group()) {
			kinds = append(kinds, o.Kind()+"/"+o.Name())
		}
	}
	want := []string{"ResourceGroup/snd-team-a-claims-rg", "UserAssignedIdentity/claims-identity",
		"FederatedIdentityCredential/claims-identity-fic", "StorageAccount/sndteamaclaims01",
		"StorageAccountsBlobService/sndteamaclaims01-blob", "StorageAccountsBlobServicesContainer/sndteamaclaims01-uploads",
		"StorageAccountsBlobServicesContainer/sndteamaclaims01-reports", "RoleAssignment/claims-identity-sndteamaclaims01"}
	if len(g.Nodes) != len(want) {
		t.Errorf("chart renders %d ASO resources, want %d:\n%s", len(g.Nodes), len(want), strings.Join(kinds, "\n"))
	}
	for _, w := range want {
		found := false
		for _, k := range kinds {
			found = found || k == w
		}
		if !found {
			t.Errorf("chart does not render %s (rendered: %v)", w, kinds)
		}
	}
}

// archiveFetcher is a render.ChartFetcher serving packaged charts from memory, newest version first, for tests
// that check rendering without a registry.
type archiveFetcher struct {
	charts map[string][]byte // "name@version" → .tgz
	reqs   []render.ChartRequest
}

func (f *archiveFetcher) Fetch(_ context.Context, req render.ChartRequest) (*render.FetchedChart, error) {
	f.reqs = append(f.reqs, req)
	for _, v := range []string{"1.1.0", "1.0.0"} {
		if b, ok := f.charts[req.Chart+"@"+v]; ok {
			sum := sha256.Sum256(b)
			return &render.FetchedChart{Name: req.Chart, Version: v, Digest: "sha256:" + hex.EncodeToString(sum[:]), Archive: b}, nil
		}
	}
	return nil, fmt.Errorf("no chart %s %s", req.Chart, req.Version)
}

func (f *archiveFetcher) FetchURL(context.Context, string, string, string, map[string]string) (*render.FetchedChart, error) {
	return nil, errors.New("no dependencies are fetched")
}

// TestFluxHelmRender reads the example as `gitaso --flux --path clusters/snd` does, with the packaged chart served
// by a fetcher in memory: the services Kustomization substitutes platform-vars into the HelmRepository and the
// HelmRelease, the release renders the chart's ASO objects into team-a, each says which Kustomization, release and
// chart made it, and the plan has them all.
func TestFluxHelmRender(t *testing.T) {
	f := &archiveFetcher{charts: map[string][]byte{"team-infra@1.0.0": packageChart(t, "team-infra", nil)}}
	var uses []render.ChartUse
	r, err := render.New(render.Options{Kustomize: true, Flux: true, FluxPath: "clusters/snd", Strict: true,
		Charts: f, OnChart: func(u render.ChartUse) { uses = append(uses, u) }})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := source.NewDir(fluxHelmDir, "", source.WithRenderer(r)).Fetch(t.Context())
	if err != nil {
		t.Fatalf("render the Flux repository:\n%v", err)
	}
	if len(f.reqs) != 1 {
		t.Fatalf("chart requests: %+v", f.reqs)
	}
	req := f.reqs[0]
	if req.Source.Kind != "HelmRepository" || req.Source.Name != "platform-charts" || req.Chart != "team-infra" || req.Version != "1.x" ||
		req.Source.Spec["url"] != "oci://sndplatformcr01.azurecr.io/helm" || req.Source.Spec["provider"] != "azure" || req.Source.Spec["type"] != "oci" {
		t.Errorf("chart request: %+v", req)
	}
	if len(uses) != 1 || uses[0].Release != "team-a/claims-infra" || uses[0].Version != "1.0.0" {
		t.Errorf("OnChart: %+v", uses)
	}
	g, err := planner.Build(snap, planner.Options{SubscriptionID: "00000000-0000-0000-0000-000000000000"})
	if err != nil {
		t.Fatalf("planner.Build:\n%v", err)
	}
	if len(g.Nodes) != 8 {
		t.Errorf("%d ASO resources, want the chart's 8", len(g.Nodes))
	}
	for _, o := range snap.Objects {
		if !aso.IsASOGroup(o.Group()) {
			continue
		}
		a := o.Annotations()
		if o.Namespace() != "team-a" || a[render.AnnotationHelmRelease] != "team-a/claims-infra" ||
			a[render.AnnotationHelmChart] != "team-infra@1.0.0" || a[render.AnnotationFluxKustomization] != "config-cluster-flux/services" {
			t.Errorf("%s (%s:%d): annotations %v", o, o.File, o.Line, a)
		}
	}
}
