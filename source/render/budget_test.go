package render

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/source"
)

// configMaps returns n one-key ConfigMaps named prefix-i.
func configMaps(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\ndata:\n  key: value-%d\n", prefix, i, i)
	}
	return b.String()
}

// TestRevisionKustomizeLimits: the kustomize limits hold per revision
// (issue 26: four kustomizations of 9,000 objects each passed the
// per-kustomization limit and took 5 min 38 s): the kustomization that
// passes the revision's total is named, before any build runs.
func TestRevisionKustomizeLimits(t *testing.T) {
	const kus = "resources:\n- cms.yaml\n"
	root := writeTree(t, map[string]string{
		"app0/kustomization.yaml": kus, "app0/cms.yaml": configMaps("a", 600),
		"app1/kustomization.yaml": kus, "app1/cms.yaml": configMaps("b", 600),
	})
	for _, tc := range []struct {
		name, file, limit string
		lim               source.Limits
	}{
		{"objects", "app1/kustomization.yaml", "total-kustomize-objects", source.Limits{MaxTotalKustomizeObjects: 1000}},
		{"nodes", "app1/kustomization.yaml", "kustomize-nodes", source.Limits{MaxKustomizeNodes: 8000}},
		{"rendered", "app0/kustomization.yaml", "rendered-size", source.Limits{MaxRenderedSize: 10_000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.Limits = tc.lim
			_, err := fetch(t, root, "", opts)
			wantLimit(t, err, tc.file, tc.limit)
		})
	}
	// Within the defaults the same revision renders.
	if _, err := fetch(t, root, "", DefaultOptions()); err != nil {
		t.Fatal(err)
	}
}

// fluxChart is a Flux repository (entry clusters/x) with HelmRelease
// flux-system/hostile of charts/hostile, whose template cm.yaml is data.
func fluxChart(data string) map[string]string {
	return map[string]string{
		"clusters/x/release.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  url: https://example.com/hostile.git
  ref:
    branch: main
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: hostile
  namespace: flux-system
spec:
  interval: 5m
  chart:
    spec:
      chart: ./charts/hostile
      sourceRef:
        kind: GitRepository
        name: flux-system
`,
		"charts/hostile/Chart.yaml":        "apiVersion: v2\nname: hostile\nversion: 0.1.0\n",
		"charts/hostile/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hostile\ndata:\n  " + data + "\n",
	}
}

// TestHelmBoundsNameTheRelease: a chart template that would exhaust
// memory or loop for good is stopped while it runs, with an error naming
// the HelmRelease, the chart, the template's position and the limit (issue
// 26: `repeat 2000000000` took validate to 8 GB; nested loops stalled the
// daemon). The render deadline stops a render no other bound stops.
func TestHelmBoundsNameTheRelease(t *testing.T) {
	guardMemory(t, 512<<20)
	for _, tc := range []struct {
		name, template, limit, where string
		lim                          source.Limits
	}{
		{"repeat", `k: {{ repeat 2000000000 "x" | quote }}`, "file-size", "hostile/templates/cm.yaml:6:8", source.Limits{}},
		{"loops", `{{- range until 1000 }}{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}{{ end }}`, "helm-steps", "hostile/templates/cm.yaml:6:", source.Limits{MaxHelmSteps: 100_000}},
		{"kept", `{{- $l := list }}{{ range until 100 }}{{ $l = append $l (repeat 1000000 "x") }}{{ end }}`, "helm-bytes", "hostile/templates/cm.yaml:6:", source.Limits{MaxHelmBytes: 16 << 20}},
		{"deadline", `{{- range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}`, "render-timeout", "hostile/templates/cm.yaml",
			source.Limits{MaxHelmSteps: -1, MaxHelmBytes: -1, RenderTimeout: 300 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, fluxChart(tc.template))
			opts := DefaultOptions()
			opts.Flux, opts.FluxPath, opts.Limits = true, "clusters/x", tc.lim
			_, err := fetch(t, root, "", opts)
			l := diag.AsList(err)
			if len(l) != 1 {
				t.Fatalf("want one error, got %v", err)
			}
			var le *source.LimitError
			msg := l[0].Error()
			if l[0].File != "clusters/x/release.yaml" || !errors.As(l[0], &le) || le.Limit != tc.limit ||
				!strings.Contains(msg, "HelmRelease flux-system/hostile, chart hostile@0.1.0: "+tc.where) ||
				!strings.Contains(msg, "limit "+tc.limit+"=") {
				t.Errorf("want an error naming the release, %s and limit %s, got %v", tc.where, tc.limit, msg)
			}
		})
	}
}
