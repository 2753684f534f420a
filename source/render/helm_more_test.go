package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// chartArchive builds a chart archive (.tgz) as "helm package" would.
func chartArchive(t testing.TB, name, version, values string, templates map[string]string, files map[string]string) []byte {
	t.Helper()
	c := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version},
		Raw:      []*chart.File{{Name: chartutil.ValuesfileName, Data: []byte(values)}},
	}
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	c.Values = vals
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for k := range templates {
			if !yield(k) {
				return
			}
		}
	}) {
		c.Templates = append(c.Templates, &chart.File{Name: "templates/" + n, Data: []byte(templates[n])})
	}
	for n, d := range files {
		c.Files = append(c.Files, &chart.File{Name: n, Data: []byte(d)})
	}
	p, err := chartutil.Save(c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeFetcher serves chart archives by source kind and name.
type fakeFetcher struct {
	archives map[string]*FetchedChart // "Kind/namespace/name" → chart
	urls     map[string]*FetchedChart // "repoURL name" → chart
	mu       sync.Mutex
	requests []ChartRequest
	fetchURL []string
}

func (f *fakeFetcher) Fetch(_ context.Context, req ChartRequest) (*FetchedChart, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	c, ok := f.archives[req.Source.Kind+"/"+req.Source.Namespace+"/"+req.Source.Name]
	if !ok {
		return nil, fmt.Errorf("no chart %s in %s %s/%s", req.Chart, req.Source.Kind, req.Source.Namespace, req.Source.Name)
	}
	return c, nil
}

func (f *fakeFetcher) FetchURL(_ context.Context, repoURL, name, version string, _ map[string]string) (*FetchedChart, error) {
	f.mu.Lock()
	f.fetchURL = append(f.fetchURL, repoURL+" "+name+"@"+version)
	f.mu.Unlock()
	if c, ok := f.urls[repoURL+" "+name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("no %s %s in %s", name, version, repoURL)
}

var remoteTemplates = map[string]string{
	"rg.yaml": `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: {{ .Release.Name }}
spec:
  location: {{ .Values.location }}
`,
	"identity.yaml": `apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: {{ .Release.Name }}-id
spec:
  location: {{ .Values.location }}
  owner:
    name: {{ .Release.Name }}
`,
}

// remoteRepo holds HelmReleases of charts from outside the repository:
// chartRef to an OCIRepository and to a HelmChart, chart.spec from a
// HelmRepository (twice, the same chart: fetched once).
var remoteRepo = map[string]string{
	"apps/sources.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: acr
  namespace: team-a
spec:
  type: oci
  url: oci://contoso.azurecr.io/charts
  secretRef:
    name: acr-creds
---
apiVersion: v1
kind: Secret
metadata:
  name: acr-creds
  namespace: team-a
stringData:
  username: u
  password: p
---
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: infra
  namespace: team-a
spec:
  url: oci://contoso.azurecr.io/charts/infra
  ref:
    semver: 2.x
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: shared
  namespace: team-a
spec:
  chart: infra
  version: ">=2.0.0"
  sourceRef:
    kind: HelmRepository
    name: acr
  valuesFiles:
    - values.yaml
    - values-prod.yaml
`,
	"apps/releases.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: by-oci
  namespace: team-a
spec:
  chartRef:
    kind: OCIRepository
    name: infra
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: by-helmchart
  namespace: team-a
spec:
  chartRef:
    kind: HelmChart
    name: shared
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: by-repo-1
  namespace: team-a
spec:
  chart:
    spec:
      chart: infra
      version: 2.x
      sourceRef:
        kind: HelmRepository
        name: acr
  values:
    location: ${LOCATION}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: by-repo-2
  namespace: team-a
spec:
  chart:
    spec:
      chart: infra
      version: 2.x
      sourceRef:
        kind: HelmRepository
        name: acr
  values:
    location: northeurope
`,
}

func remoteFetcher(t testing.TB) *fakeFetcher {
	a := chartArchive(t, "infra", "2.1.0", "location: westus\n", remoteTemplates, map[string]string{"values-prod.yaml": "location: eastus\n"})
	fc := func(url string) *FetchedChart {
		return &FetchedChart{Name: "infra", Version: "2.1.0", Digest: "sha256:abc", URL: url, Archive: a}
	}
	return &fakeFetcher{archives: map[string]*FetchedChart{
		"HelmRepository/team-a/acr":  fc("oci://contoso.azurecr.io/charts/infra:2.1.0"),
		"OCIRepository/team-a/infra": fc("oci://contoso.azurecr.io/charts/infra:2.1.0"),
	}}
}

// TestHelmRemoteCharts: charts from a HelmRepository, an OCIRepository
// (chartRef) and a HelmChart (chartRef) come through the ChartFetcher,
// with the source's spec and secret; one request is fetched once; OnChart
// hears of every release's chart; valuesFiles of a packaged chart are
// relative to the chart.
func TestHelmRemoteCharts(t *testing.T) {
	f := remoteFetcher(t)
	var mu sync.Mutex
	var uses []ChartUse
	files := withFiles(remoteRepo)
	snap, err := helmFetch(t, files, Options{Charts: f, OnChart: func(u ChartUse) {
		mu.Lock()
		defer mu.Unlock()
		uses = append(uses, u)
	}})
	if err != nil {
		t.Fatal(err)
	}
	for id, loc := range map[string]string{
		"team-a/ResourceGroup/by-oci":       "westus",      // chart default
		"team-a/ResourceGroup/by-helmchart": "eastus",      // HelmChart valuesFiles
		"team-a/ResourceGroup/by-repo-1":    "uksouth",     // ${LOCATION} substituted by the Kustomization
		"team-a/ResourceGroup/by-repo-2":    "northeurope", // its own values
	} {
		o := findID(t, snap.Objects, id)
		if got := field(o, "spec", "location"); got != loc {
			t.Errorf("%s location = %v, want %s", id, got, loc)
		}
		if got := o.Annotations()[AnnotationHelmChart]; got != "infra@2.1.0" {
			t.Errorf("%s chart annotation %q", id, got)
		}
	}
	// HelmRepository acr (by-repo-1 and -2, and the HelmChart's own
	// version): two requests; OCIRepository: one.
	var got []string
	for _, r := range f.requests {
		got = append(got, fmt.Sprintf("%s/%s %s@%s secret=%v spec.url=%v", r.Source.Kind, r.Source.Name, r.Chart, r.Version, r.Secret["username"] != "", r.Source.Spec["url"]))
	}
	slices.Sort(got)
	want := []string{
		"HelmRepository/acr infra@2.x secret=true spec.url=oci://contoso.azurecr.io/charts",
		"HelmRepository/acr infra@>=2.0.0 secret=true spec.url=oci://contoso.azurecr.io/charts",
		"OCIRepository/infra @ secret=false spec.url=oci://contoso.azurecr.io/charts/infra",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fetch requests (-want +got):\n%s", diff)
	}
	slices.SortFunc(uses, func(a, b ChartUse) int { return strings.Compare(a.Release, b.Release) })
	wantUses := []ChartUse{
		{Release: "team-a/by-helmchart", Chart: "infra", Version: "2.1.0", Digest: "sha256:abc", URL: "oci://contoso.azurecr.io/charts/infra:2.1.0"},
		{Release: "team-a/by-oci", Chart: "infra", Version: "2.1.0", Digest: "sha256:abc", URL: "oci://contoso.azurecr.io/charts/infra:2.1.0"},
		{Release: "team-a/by-repo-1", Chart: "infra", Version: "2.1.0", Digest: "sha256:abc", URL: "oci://contoso.azurecr.io/charts/infra:2.1.0"},
		{Release: "team-a/by-repo-2", Chart: "infra", Version: "2.1.0", Digest: "sha256:abc", URL: "oci://contoso.azurecr.io/charts/infra:2.1.0"},
	}
	if diff := cmp.Diff(wantUses, uses); diff != "" {
		t.Errorf("OnChart (-want +got):\n%s", diff)
	}

	// Without a fetcher, such a release fails (its unit), naming it.
	snap, err = helmFetch(t, files, Options{})
	if _, err = failedUnit(t, snap, err, "HelmRelease/team-a/by-oci", manifest.ReasonArtifactFailed); err == nil || !errors.Is(err, ErrHelmSource) || !strings.Contains(err.Error(), "apps/releases.yaml:8: team-a/HelmRelease/by-oci: spec.chartRef: the chart is in OCIRepository team-a/infra (apps/sources.yaml:21), outside the repository") {
		t.Errorf("without a fetcher: %v", err)
	}
}

// TestHelmPostRenderers: spec.postRenderers[].kustomize patches (strategic
// merge, JSON 6902 with a target, v2beta1's patchesStrategicMerge and
// patchesJson6902) are applied to the chart's output; the template
// annotation survives.
func TestHelmPostRenderers(t *testing.T) {
	files := withFiles(map[string]string{"apps/team-b.yaml": "", "apps/team-a.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: team-a
  namespace: team-a
spec:
  chart:
    spec:
      chart: ./charts/infra
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
  commonMetadata:
    labels:
      cost-center: "42"
    annotations:
      contact: team-a@contoso.com
  postRenderers:
    - kustomize:
        patches:
          - patch: |
              apiVersion: resources.azure.com/v1api20200601
              kind: ResourceGroup
              metadata:
                name: team-a-rg
              spec:
                location: francecentral
          - target:
              kind: UserAssignedIdentity
            patch: |
              - op: replace
                path: /spec/location
                value: swedencentral
---
apiVersion: helm.toolkit.fluxcd.io/v2beta1
kind: HelmRelease
metadata:
  name: old
  namespace: team-a
spec:
  chart:
    spec:
      chart: ./charts/infra
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
  postRenderers:
    - kustomize:
        patchesStrategicMerge:
          - apiVersion: resources.azure.com/v1api20200601
            kind: ResourceGroup
            metadata:
              name: old-rg
            spec:
              location: norwayeast
        patchesJson6902:
          - target:
              kind: UserAssignedIdentity
              name: old-identity
            patch:
              - op: add
                path: /spec/tags
                value:
                  patched: "yes"
`})
	snap, err := helmFetch(t, files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id     string
		fields []string
		want   any
	}{
		{"team-a/ResourceGroup/team-a-rg", []string{"spec", "location"}, "francecentral"},
		{"team-a/ResourceGroup/team-a-rg", []string{"metadata", "annotations", AnnotationHelmTemplate}, "infra/templates/resourcegroup.yaml"},
		{"team-a/ResourceGroup/team-a-pre", []string{"metadata", "annotations", AnnotationHelmHook}, "pre-install,pre-upgrade"},
		{"team-a/UserAssignedIdentity/team-a-identity", []string{"spec", "location"}, "swedencentral"},
		{"team-a/UserAssignedIdentity/team-a-identity", []string{"metadata", "labels", "cost-center"}, "42"}, // commonMetadata
		{"team-a/ResourceGroup/team-a-rg", []string{"metadata", "annotations", "contact"}, "team-a@contoso.com"},
		{"team-a/ResourceGroup/old-rg", []string{"spec", "location"}, "norwayeast"},
		{"team-a/UserAssignedIdentity/old-identity", []string{"spec", "tags"}, map[string]any{"patched": "yes"}},
		{"team-a/UserAssignedIdentity/old-identity", []string{"spec", "location"}, "westeurope"},
	} {
		o := findID(t, snap.Objects, c.id)
		if diff := cmp.Diff(c.want, field(o, c.fields...)); diff != "" {
			t.Errorf("%s %v (-want +got):\n%s", c.id, c.fields, diff)
		}
		if o.File != "apps/team-a.yaml" || o.Line == 0 {
			t.Errorf("%s at %s:%d", c.id, o.File, o.Line)
		}
	}
}

// TestHelmSuspend: spec.suspend and kustomize.toolkit.fluxcd.io/reconcile:
// disabled on a HelmRelease (or a Kustomization) make its ASO objects
// read-only (reconcile-policy: skip) unless they set a policy; nothing
// is dropped.
func TestHelmSuspend(t *testing.T) {
	hr := helmRepo["apps/team-b.yaml"]
	files := withFiles(map[string]string{
		"apps/team-b.yaml": strings.Replace(hr, "  releaseName: team-b-infra\n", "  releaseName: team-b-infra\n  suspend: true\n", 1),
		"apps/team-a.yaml": strings.Replace(helmRepo["apps/team-a.yaml"], "  name: team-a\n  namespace: team-a\nspec:\n  interval: 10m\n",
			"  name: team-a\n  namespace: team-a\n  annotations:\n    kustomize.toolkit.fluxcd.io/reconcile: disabled\nspec:\n  interval: 10m\n", 1),
	})
	snap, err := helmFetch(t, files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]any{
		"team-b/ResourceGroup/team-b-infra-rg":                    "skip",
		"team-b/UserAssignedIdentity/team-b-infra-identity":       "skip",
		"team-b/ConfigMap/team-b-infra-rendered":                  nil, // not ASO
		"team-a/ResourceGroup/team-a-rg":                          "skip",
		"team-c-prod/UserAssignedIdentity/team-c-prod-c-identity": nil,
	} {
		if got := field(findID(t, snap.Objects, id), "metadata", "annotations", aso.AnnotationReconcilePolicy); got != want {
			t.Errorf("%s reconcile-policy = %v, want %v", id, got, want)
		}
	}

	// The annotation on the Kustomization: its objects, and so its
	// HelmReleases' (their annotation), stay as Flux first applied them.
	files = withFiles(map[string]string{"apps/ks-rg.yaml": `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: plain
  namespace: team-a
spec:
  location: uksouth
`, "clusters/snd/apps.yaml": strings.Replace(helmRepo["clusters/snd/apps.yaml"], "  namespace: flux-system\n", "  namespace: flux-system\n  annotations:\n    kustomize.toolkit.fluxcd.io/reconcile: disabled\n", 1)})
	snap, err = helmFetch(t, files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := field(findID(t, snap.Objects, "team-a/ResourceGroup/plain"), "metadata", "annotations", aso.AnnotationReconcilePolicy); got != "skip" {
		t.Errorf("Kustomization with reconcile: disabled: policy %v, want skip", got)
	}
}

// TestHelmRenderErrors: a failing template names the HelmRelease (file,
// line, object, field) and helm's template and line, and fails the
// release's unit (BuildFailed), not the revision; so do sources gitaso
// cannot read (ArtifactFailed).
func TestHelmRenderErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		files  map[string]string
		unit   string
		reason string
		is     error
		want   []string
	}{{
		name: "required value",
		unit: "HelmRelease/team-a/team-a", reason: manifest.ReasonBuildFailed,
		files: map[string]string{"charts/infra/templates/required.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: req
data:
  x: {{ required "spec.values.mustSet is required" .Values.mustSet }}
`},
		is: ErrHelmRender,
		want: []string{
			"apps/team-a.yaml:65: team-a/HelmRelease/team-a: spec.values: HelmRelease team-a/team-a, chart infra@1.2.3",
			"infra/templates/required.yaml:6:",
			"spec.values.mustSet is required",
		},
	}, {
		name: "template syntax",
		unit: "HelmRelease/team-a/team-a", reason: manifest.ReasonBuildFailed,
		files: map[string]string{"charts/infra/templates/bad.yaml": "a: {{ .Values.x \n"},
		is:    ErrHelmRender,
		want:  []string{"apps/team-a.yaml:37: team-a/HelmRelease/team-a: spec.chart.spec: ", "infra/templates/bad.yaml:1"},
	}, {
		name: "output not YAML",
		unit: "HelmRelease/team-a/team-a", reason: manifest.ReasonBuildFailed,
		files: map[string]string{"charts/infra/templates/bad.yaml": "a: [b\n"},
		is:    ErrHelmRender,
		want:  []string{"team-a/HelmRelease/team-a: spec.chart.spec: ", "infra/templates/bad.yaml"},
	}, {
		name: "missing valuesFrom",
		unit: "HelmRelease/team-a/team-a", reason: manifest.ReasonBuildFailed,
		files: map[string]string{"apps/team-a.yaml": strings.Replace(helmRepo["apps/team-a.yaml"], "      name: absent\n      optional: true\n", "      name: absent\n", 1)},
		is:    ErrHelmValues,
		want:  []string{"team-a/HelmRelease/team-a: spec.valuesFrom[4].name: no ConfigMap team-a/absent in the repository"},
	}, {
		name: "bucket",
		unit: "HelmRelease/flux-system/infra", reason: manifest.ReasonArtifactFailed,
		files: map[string]string{"apps/team-b.yaml": strings.Replace(helmRepo["apps/team-b.yaml"], "kind: GitRepository", "kind: Bucket", 1)},
		is:    ErrHelmSource,
		want:  []string{"apps/team-b.yaml:13: flux-system/HelmRelease/infra: spec.chart.spec.sourceRef.kind: Bucket flux-system"},
	}, {
		name: "missing library",
		unit: "HelmRelease/flux-system/infra", reason: manifest.ReasonArtifactFailed,
		files: map[string]string{"charts/aso-lib/Chart.yaml": ""},
		is:    ErrHelmChart,
		want:  []string{"spec.chart.spec.chart: ", `dependency aso-lib (file://../aso-lib): "charts/aso-lib": no Chart.yaml there`},
	}} {
		t.Run(c.name, func(t *testing.T) {
			snap, err := helmFetch(t, withFiles(c.files), Options{})
			_, err = failedUnit(t, snap, err, c.unit, c.reason)
			if err == nil {
				t.Fatal("rendered")
			}
			if !errors.Is(err, c.is) {
				t.Errorf("not %v: %v", c.is, err)
			}
			if l := diag.AsList(err); len(l) == 0 {
				t.Errorf("not a diag.List: %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestHelmEntryRelease: a HelmRelease in a file of the entry path renders
// too; the file's other documents keep their lines.
func TestHelmEntryRelease(t *testing.T) {
	files := withFiles(map[string]string{"clusters/snd/apps.yaml": "", "clusters/snd/infra.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: entry
  namespace: platform
spec:
  chart:
    spec:
      chart: charts/infra
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: after
  namespace: platform
spec:
  location: uksouth
`})
	snap, err := helmFetch(t, files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if o := findID(t, snap.Objects, "platform/ResourceGroup/after"); o.File != "clusters/snd/infra.yaml" || o.Line != 15 {
		t.Errorf("after at %s:%d, want clusters/snd/infra.yaml:15", o.File, o.Line)
	}
	if o := findID(t, snap.Objects, "platform/ResourceGroup/entry-rg"); o.File != "clusters/snd/infra.yaml" || o.Line != 1 || o.Annotations()[AnnotationFluxKustomization] != "" {
		t.Errorf("entry-rg at %s:%d %v", o.File, o.Line, o.Annotations())
	}
	for _, o := range snap.Ignored {
		if o.Kind() == "HelmRelease" {
			t.Errorf("HelmRelease %s left in the output", o.ID())
		}
	}
}

func TestShortenReleaseName(t *testing.T) {
	long := "some-front-appended-namespace-release-with-a-very-long-name"
	got := shortenReleaseName(long)
	if len(got) != 53 || !strings.HasPrefix(got, long[:40]+"-") || got[41:] != sha256Hex([]byte(long))[:12] {
		t.Errorf("shortenReleaseName = %q", got)
	}
	if got := shortenReleaseName("short"); got != "short" {
		t.Errorf("short name changed: %q", got)
	}
	h := &helmRelease{}
	h.obj.Content = map[string]any{"metadata": map[string]any{"name": "app", "namespace": "flux-system"}}
	h.spec.TargetNamespace = "team-with-a-rather-long-namespace-name"
	h.obj.Content["metadata"].(map[string]any)["name"] = "and-a-long-release-name"
	if got := h.releaseName(); got != shortenReleaseName("team-with-a-rather-long-namespace-name-and-a-long-release-name") || len(got) != 53 {
		t.Errorf("releaseName = %q", got)
	}
}

// TestHelmFinishShapes: the metadata gitaso adds lands in every shape of
// metadata a template may write (block, flow, existing keys, comments).
func TestHelmFinishShapes(t *testing.T) {
	h := &helmRelease{}
	h.obj.Content = map[string]any{"metadata": map[string]any{"name": "rel", "namespace": "flux-system"}}
	for _, c := range []struct {
		name, text, ns string
	}{
		{"block", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    app: x\n  annotations:\n    keep: \"1\"\ndata:\n  k: v\n", "rel-ns"},
		{"no labels", "# a comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n    name: a   # trailing\ndata:\n  k: v", "rel-ns"},
		{"flow", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {app: x}}\n", "rel-ns"},
		{"empty labels", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {}\n", "rel-ns"},
		{"own namespace", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: mine\n  name: a\n", "mine"},
		{"key present", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    gitaso.io/helm-template: stale\n", "rel-ns"},
		{"cluster-scoped", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n", "default"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := (&helmRun{}).finish(h, renderItem{template: "c/templates/a.yaml", text: c.text}, "rel-ns", map[string]string{AnnotationHelmRelease: "flux-system/rel"})
			if err != nil {
				t.Fatal(err)
			}
			objs, err := source.ParseFile("x.yaml", []byte(out))
			if err != nil || len(objs) != 1 {
				t.Fatalf("%v %v\n%s", objs, err, out)
			}
			o := objs[0]
			if o.Namespace() != c.ns {
				t.Errorf("namespace %q, want %q\n%s", o.Namespace(), c.ns, out)
			}
			if o.Annotations()[AnnotationHelmTemplate] != "c/templates/a.yaml" || o.Annotations()[AnnotationHelmRelease] != "flux-system/rel" {
				t.Errorf("annotations %v\n%s", o.Annotations(), out)
			}
			if o.Labels()[helmLabelName] != "rel" || o.Labels()[helmLabelNamespace] != "flux-system" {
				t.Errorf("labels %v\n%s", o.Labels(), out)
			}
			if strings.Contains(c.text, "app: x") && o.Labels()["app"] != "x" {
				t.Errorf("label app lost\n%s", out)
			}
		})
	}
}

// TestHelmOutputLimit: a release whose chart renders more than the file
// size limit is refused with a LimitError naming the release.
func TestHelmOutputLimit(t *testing.T) {
	files := withFiles(map[string]string{"charts/infra/templates/big.yaml": `{{- range until 400 }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: big-{{ . }}
data:
  padding: "................................................................"
{{- end }}
`})
	_, err := helmFetch(t, files, Options{Limits: source.Limits{MaxFileSize: 16 << 10}})
	if !errors.Is(err, source.ErrLimit) || !strings.Contains(err.Error(), "team-a/HelmRelease/team-a: spec.chart.spec: HelmRelease team-a/team-a, chart infra@1.2.3: ") {
		t.Fatalf("want a limit error naming the release, got %v", err)
	}
}

// TestHelmDependsOn: a HelmRelease renders after those its dependsOn
// names, so its valuesFrom finds a ConfigMap one of them renders.
func TestHelmDependsOn(t *testing.T) {
	hr := func(name, extra string) string {
		return fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: %s
  namespace: team-z
spec:
  chart:
    spec:
      chart: charts/infra
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
%s`, name, extra)
	}
	files := withFiles(map[string]string{
		"apps/team-a.yaml": "",
		"apps/team-b.yaml": hr("consumer", `  dependsOn:
    - name: producer
  valuesFrom:
    - kind: ConfigMap
      name: exported
`) + "---\n" + hr("producer", `  values:
    export: true
`),
		"charts/infra/templates/export.yaml": `{{- if .Values.export }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: exported
data:
  values.yaml: |
    fromConfigMap: exported-by-producer
{{- end }}
`,
	})
	snap, err := helmFetch(t, files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := field(findID(t, snap.Objects, "team-z/ConfigMap/consumer-rendered"), "data", "fromConfigMap"); got != "exported-by-producer" {
		t.Errorf("consumer fromConfigMap = %v", got)
	}
}

// TestHelmValuesFromSOPS: valuesFrom reads a SOPS-encrypted Secret of the
// repository, decrypted.
func TestHelmValuesFromSOPS(t *testing.T) {
	files := withFiles(map[string]string{
		"apps/team-a.yaml":             "",
		"platform/aso-credential.yaml": readFixture(t, "aso-credential.sops.yaml"),
		"apps/team-b.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: p
  namespace: platform
spec:
  chart:
    spec:
      chart: charts/infra
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
  valuesFrom:
    - kind: Secret
      name: aso-credential
      valuesKey: AZURE_TENANT_ID
      targetPath: identity.clientId
`})
	snap, err := helmFetch(t, files, Options{AgeIdentities: testIdentities(t, "test-only.agekey")})
	if err != nil {
		t.Fatal(err)
	}
	cm := findID(t, snap.Objects, "platform/ConfigMap/p-rendered")
	if got := field(cm, "data", "clientId"); got != "00000000-0000-0000-0000-0000000000aa" {
		t.Errorf("clientId from the decrypted Secret = %v", got)
	}
	// A value from a Secret is secret in the chart's objects too.
	if d := cmp.Diff([]string{"Secret platform/aso-credential=00000000-0000-0000-0000-0000000000aa"}, froms(cm)); d != "" {
		t.Errorf("secret values of the rendered ConfigMap (-want +got):\n%s", d)
	}
}

// TestHelmChartInsideKustomizationPath: a chart directory below a
// Kustomization's path (and below the entry) is a chart, not manifests:
// its templates are not in the generated kustomization.
func TestHelmChartInsideKustomizationPath(t *testing.T) {
	files := map[string]string{}
	for p, c := range helmRepo {
		if strings.HasPrefix(p, "charts/") {
			p = "apps/" + p
		}
		files[p] = strings.ReplaceAll(c, "chart: ./charts/infra", "chart: ./apps/charts/infra")
	}
	files["apps/team-b.yaml"] = strings.ReplaceAll(files["apps/team-b.yaml"], "chart: charts/infra", "chart: apps/charts/infra")
	files["apps/team-a.yaml"] = strings.ReplaceAll(files["apps/team-a.yaml"], "- charts/infra/values", "- apps/charts/infra/values")
	files["clusters/snd/charts/entry/Chart.yaml"] = "apiVersion: v2\nname: entry\nversion: 0.1.0\n"
	files["clusters/snd/charts/entry/templates/x.yaml"] = "{{ .Values.not.yaml }\n"
	snap, err := helmFetch(t, files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	findID(t, snap.Objects, "team-a/ResourceGroup/team-a-rg")
	for _, o := range append(snap.Objects, snap.Ignored...) {
		if strings.Contains(o.File, "/charts/") {
			t.Errorf("%s parsed from a chart's file %s", o.ID(), o.File)
		}
	}
}

// TestDefaultKubeVersion: DefaultKubeVersion follows the client-go of go.mod.
func TestDefaultKubeVersion(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Skip(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "k8s.io/client-go" {
			parts := strings.Split(strings.TrimPrefix(f[1], "v"), ".")
			if want := "v1." + parts[1] + ".0"; DefaultKubeVersion != want {
				t.Errorf("DefaultKubeVersion %s, but go.mod has k8s.io/client-go %s: set it to %s", DefaultKubeVersion, f[1], want)
			}
			return
		}
	}
	t.Error("no k8s.io/client-go in go.mod")
}

// TestHelmExampleFluxHelm renders examples/flux-helm (the repository the
// end-to-end test plans and applies) with its chart served by a fake
// fetcher as the registry would hold it (packaged, aso-library vendored).
func TestHelmExampleFluxHelm(t *testing.T) {
	const dir = "../../examples/flux-helm"
	if _, err := os.Stat(dir + "/charts/team-infra/Chart.yaml"); err != nil {
		t.Skip("no example:", err)
	}
	app, err := loader.LoadDir(dir + "/charts/team-infra")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := loader.LoadDir(dir + "/charts/aso-library")
	if err != nil {
		t.Fatal(err)
	}
	app.AddDependency(lib)
	p, err := chartutil.Save(app, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	archive, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeFetcher{archives: map[string]*FetchedChart{"HelmRepository/config-cluster-flux/platform-charts": {
		Name: "team-infra", Version: app.Metadata.Version, Digest: "sha256:x", URL: "oci://sndplatformcr01.azurecr.io/helm/team-infra", Archive: archive}}}
	snap, err := fluxFetch(t, dir, "clusters/snd", Options{Strict: true, Charts: f})
	if err != nil {
		t.Fatal(err)
	}
	var asoIDs []string
	for _, o := range snap.Objects {
		if aso.IsASOGroup(o.Group()) {
			asoIDs = append(asoIDs, o.ID())
			if o.Annotations()[AnnotationHelmRelease] != "team-a/claims-infra" || o.File != "services/team-a/claims-infra.yaml" {
				t.Errorf("%s: %s:%d %v", o.ID(), o.File, o.Line, o.Annotations())
			}
		}
	}
	if len(asoIDs) < 5 {
		t.Errorf("ASO objects: %v", asoIDs)
	}
	if len(f.requests) != 1 || f.requests[0].Version != "1.x" || f.requests[0].Source.Spec["url"] != "oci://sndplatformcr01.azurecr.io/helm" {
		t.Errorf("requests %+v", f.requests)
	}
	t.Logf("%d ASO objects: %v", len(asoIDs), asoIDs)
}

// TestHelmRepositoryDependency: a chart of the repository whose
// dependency lives in a Helm repository gets it through the fetcher, and
// OnChart hears of it; another Git repository's chart comes through the
// fetcher too.
func TestHelmRepositoryDependency(t *testing.T) {
	lib := chartArchive(t, "net-lib", "1.4.0", "", map[string]string{"_net.tpl": `{{- define "net-lib.vnet" -}}
apiVersion: network.azure.com/v1api20201101
kind: VirtualNetwork
metadata:
  name: {{ .Release.Name }}-vnet
spec:
  location: {{ .Values.location }}
  owner:
    name: {{ .Release.Name }}-rg
{{- end -}}
`}, nil)
	other := chartArchive(t, "other", "0.9.0", "location: westus\n", remoteTemplates, nil)
	f := &fakeFetcher{
		urls:     map[string]*FetchedChart{"https://charts.example/net net-lib": {Name: "net-lib", Version: "1.4.0", Digest: "sha256:net", URL: "https://charts.example/net/net-lib-1.4.0.tgz", Archive: lib}},
		archives: map[string]*FetchedChart{"GitRepository/flux-system/other-repo": {Name: "other", Version: "0.9.0", Digest: "sha256:other", URL: "https://github.com/contoso/other.git", Archive: other}},
	}
	files := withFiles(map[string]string{
		"apps/team-a.yaml":                 "",
		"charts/infra/Chart.yaml":          helmRepo["charts/infra/Chart.yaml"] + "  - name: net-lib\n    version: 1.x\n    repository: https://charts.example/net\n",
		"charts/infra/templates/vnet.yaml": "{{ include \"net-lib.vnet\" . }}\n",
		"apps/other.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: other-repo
  namespace: flux-system
spec:
  url: https://github.com/contoso/other.git
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: other
  namespace: team-o
spec:
  chart:
    spec:
      chart: ./charts/other
      sourceRef:
        kind: GitRepository
        name: other-repo
        namespace: flux-system
`,
	})
	var uses []ChartUse
	snap, err := helmFetch(t, files, Options{Charts: f, OnChart: func(u ChartUse) { uses = append(uses, u) }})
	if err != nil {
		t.Fatal(err)
	}
	findID(t, snap.Objects, "team-b/VirtualNetwork/team-b-infra-vnet")
	findID(t, snap.Objects, "team-o/ResourceGroup/other")
	if diff := cmp.Diff([]string{"https://charts.example/net net-lib@1.x"}, f.fetchURL); diff != "" {
		t.Errorf("dependency fetched once per Render (-want +got):\n%s", diff)
	}
	slices.SortFunc(uses, func(a, b ChartUse) int { return strings.Compare(a.Release, b.Release) })
	want := []ChartUse{
		{Release: "flux-system/infra", Chart: "net-lib", Version: "1.4.0", Digest: "sha256:net", URL: "https://charts.example/net/net-lib-1.4.0.tgz"},
		{Release: "team-c/c", Chart: "net-lib", Version: "1.4.0", Digest: "sha256:net", URL: "https://charts.example/net/net-lib-1.4.0.tgz"},
		{Release: "team-o/other", Chart: "other", Version: "0.9.0", Digest: "sha256:other", URL: "https://github.com/contoso/other.git"},
	}
	if diff := cmp.Diff(want, uses); diff != "" {
		t.Errorf("OnChart (-want +got):\n%s", diff)
	}
	if len(f.requests) != 1 || f.requests[0].Chart != "./charts/other" {
		t.Errorf("requests %+v", f.requests)
	}
}
