package render

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/source"
)

// benchChart is a 30-template chart of ASO resources (a resource group,
// identities, storage accounts, ...) with a helper template.
func benchChart() map[string]string {
	files := map[string]string{
		"charts/bench/Chart.yaml":  "apiVersion: v2\nname: bench\nversion: 1.0.0\n",
		"charts/bench/values.yaml": "location: westeurope\nteam: none\nsku: Standard_LRS\ntags:\n  owner: platform\n",
		"charts/bench/templates/_helpers.tpl": `{{- define "bench.name" -}}{{ .Release.Name }}{{- end -}}
{{- define "bench.tags" -}}
{{- range $k, $v := .Values.tags }}
    {{ $k }}: {{ $v | quote }}
{{- end }}
{{- end -}}
`,
		"charts/bench/templates/rg.yaml": `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: {{ include "bench.name" . }}-rg
spec:
  location: {{ .Values.location }}
  tags:{{ include "bench.tags" . }}
`,
	}
	for i := range 29 {
		files[fmt.Sprintf("charts/bench/templates/sa%02d.yaml", i)] = fmt.Sprintf(`apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: {{ include "bench.name" . }}-sa%02d
  labels:
    team: {{ .Values.team }}
spec:
  location: {{ .Values.location }}
  kind: StorageV2
  sku:
    name: {{ .Values.sku }}
  owner:
    name: {{ include "bench.name" . }}-rg
  tags:{{ include "bench.tags" . }}
    index: "%d"
`, i, i)
	}
	return files
}

// helmBenchFiles is a repository with n HelmReleases of the bench chart in
// the entry path, each with its own values.
func helmBenchFiles(n int) []source.File {
	files := benchChart()
	files["clusters/snd/flux-system.yaml"] = helmRepo["clusters/snd/flux-system.yaml"]
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: team-%03d
  namespace: team-%03d
spec:
  chart:
    spec:
      chart: charts/bench
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
  values:
    team: team-%03d
    location: loc%d
    tags:
      cost-center: "%d"
`, i, i, i, i%7, i)
	}
	files["clusters/snd/releases.yaml"] = b.String()
	out := make([]source.File, 0, len(files))
	for p, d := range files {
		out = append(out, source.File{Path: p, Data: []byte(d)})
	}
	return out
}

// BenchmarkHelmRelease100 renders 100 HelmReleases of one 30-template
// chart (3,000 objects): the chart is loaded once per Render, releases
// render on all CPUs.
func BenchmarkHelmRelease100(b *testing.B) {
	files := helmBenchFiles(100)
	r, err := New(Options{Flux: true, FluxPath: "clusters/snd", Kustomize: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	out, err := r.Render(ctx, files)
	if err != nil {
		b.Fatal(err)
	}
	if n := countDocs(out); n < 3000 {
		b.Fatalf("%d documents rendered, want 3,000", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(ctx, files); err != nil {
			b.Fatal(err)
		}
	}
}

func countDocs(files []source.File) int {
	n := 0
	for _, f := range files {
		if f.Generated {
			n += strings.Count(string(f.Data), "\napiVersion:") + strings.Count(string(f.Data[:min(len(f.Data), 64)]), "apiVersion:")
		}
	}
	return n
}

// BenchmarkHelmRelease100Remote is BenchmarkHelmRelease100 with the chart
// from a HelmRepository (a ChartFetcher serving the archive): one fetch and
// one archive load per Render.
func BenchmarkHelmRelease100Remote(b *testing.B) {
	templates := map[string]string{}
	var values string
	for p, d := range benchChart() {
		switch {
		case strings.HasPrefix(p, "charts/bench/templates/"):
			templates[strings.TrimPrefix(p, "charts/bench/templates/")] = d
		case strings.HasSuffix(p, "values.yaml"):
			values = d
		}
	}
	f := &fakeFetcher{archives: map[string]*FetchedChart{"HelmRepository/flux-system/charts": {
		Name: "bench", Version: "1.0.0", Digest: "sha256:bench", URL: "https://charts.example/bench-1.0.0.tgz",
		Archive: chartArchive(b, "bench", "1.0.0", values, templates, nil)}}}
	var files []source.File
	for _, fl := range helmBenchFiles(100) {
		if strings.HasPrefix(fl.Path, "charts/") {
			continue
		}
		if fl.Path == "clusters/snd/releases.yaml" {
			fl.Data = []byte(strings.ReplaceAll(strings.ReplaceAll(string(fl.Data), "chart: charts/bench", "chart: bench"), "kind: GitRepository", "kind: HelmRepository"))
			fl.Data = []byte(strings.ReplaceAll(string(fl.Data), "name: flux-system\n        namespace", "name: charts\n        namespace"))
			fl.Data = append(fl.Data, "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: charts\n  namespace: flux-system\nspec:\n  url: https://charts.example\n"...)
		}
		files = append(files, fl)
	}
	r, err := New(Options{Flux: true, FluxPath: "clusters/snd", Kustomize: true, Charts: f})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	out, err := r.Render(ctx, files)
	if err != nil {
		b.Fatal(err)
	}
	if n := countDocs(out); n < 3000 {
		b.Fatalf("%d documents rendered, want 3,000", n)
	}
	if len(f.requests) != 1 {
		b.Fatalf("%d fetches for one chart, want 1", len(f.requests))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(ctx, files); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(f.requests))/float64(b.N+1), "fetches/op")
}
