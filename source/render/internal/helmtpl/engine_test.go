package helmtpl

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// renderBoth renders c with Helm's engine and with Render (default-sized
// budget) and returns both results.
func renderBoth(t *testing.T, c *chart.Chart, vals map[string]any) (helm, ours map[string]string, herr, oerr error) {
	t.Helper()
	opts := chartutil.ReleaseOptions{Name: "rel", Namespace: "ns", Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(c, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	helm, herr = engine.Engine{}.Render(c, rv)
	rv, _ = chartutil.ToRenderValues(c, vals, opts, chartutil.DefaultCapabilities)
	ours, oerr = Render(context.Background(), c, rv, Budget{MaxOutput: 32 << 20, MaxBytes: 256 << 20, MaxSteps: 10_000_000})
	return helm, ours, herr, oerr
}

func chartOf(templates map[string]string) *chart.Chart {
	c := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "c", Version: "0.1.0"},
		Files: []*chart.File{{Name: "config/a.conf", Data: []byte("a=1\n")}, {Name: "config/b.conf", Data: []byte("b=2\n")}}}
	for name, text := range templates {
		c.Templates = append(c.Templates, &chart.File{Name: "templates/" + name, Data: []byte(text)})
	}
	return c
}

// example loads examples/flux-helm's team-infra chart with its aso-library
// dependency, and the values of its HelmRelease.
func example(t testing.TB) (*chart.Chart, map[string]any) {
	t.Helper()
	c, err := loader.Load("../../../../examples/flux-helm/charts/team-infra")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := loader.Load("../../../../examples/flux-helm/charts/aso-library")
	if err != nil {
		t.Fatal(err)
	}
	c.AddDependency(lib)
	vals, err := chartutil.ReadValues([]byte(`team: team-a
service: claims
environment: snd
location: uksouth
resourceGroup: snd-team-a-claims-rg
identity:
  oidcIssuer: https://oidc.example.com/
  serviceAccount: claims-service
storage:
  accountName: sndteamaclaims01
  containers: [uploads, reports]
tags:
  cost-centre: team-a
`))
	if err != nil {
		t.Fatal(err)
	}
	return c, vals
}

// TestSameAsHelm: the repository's charts and templates using what the
// instrumentation touches (printing through String methods, missing
// values, include, tpl with define, ranges, break, Files, printf, required,
// lookup) render byte for byte as Helm's engine renders them.
func TestSameAsHelm(t *testing.T) {
	for _, dir := range []string{"../../../../deploy/helm/gitaso", "team-infra"} {
		t.Run(dir, func(t *testing.T) {
			var c *chart.Chart
			vals := map[string]any{}
			if dir == "team-infra" {
				c, vals = example(t)
			} else {
				var err error
				if c, err = loader.Load(dir); err != nil {
					t.Fatal(err)
				}
			}
			if err := chartutil.ProcessDependenciesWithMerge(c, vals); err != nil {
				t.Fatal(err)
			}
			helm, ours, herr, oerr := renderBoth(t, c, vals)
			if herr != nil || len(helm) == 0 {
				t.Fatalf("helm rendered %d templates: %v", len(helm), herr)
			}
			for _, m := range []map[string]string{helm, ours} {
				delete(m, "gitaso/templates/secret.yaml") // a random token
			}
			if (herr == nil) != (oerr == nil) {
				t.Fatalf("helm: %v, ours: %v", herr, oerr)
			}
			if diff := cmp.Diff(helm, ours); diff != "" {
				t.Errorf("differs from Helm (-helm +ours):\n%s", diff)
			}
		})
	}
	c := chartOf(map[string]string{
		"_helpers.tpl": `{{- define "c.name" -}}{{ .Chart.Name }}-{{ .Release.Name }}{{- end }}`,
		"a.yaml": `kube: {{ .Capabilities.KubeVersion }} {{ .Capabilities.KubeVersion.Major }}
{{- $kv := .Capabilities.KubeVersion }}
kv: {{ $kv }}
missing: {{ .Values.missing }}|{{ .Values.nested.missing }}|{{ index .Values "x" }}
name: {{ include "c.name" . | upper }}
tpl: {{ tpl "{{ define \"t\" }}T{{ .Release.Namespace }}{{ end }}{{ include \"t\" . }}" . }}
list: {{ list 1 "a" 2.5 nil }}
map: {{ dict "b" 1 "a" (list 1 2) }}
{{- range $i, $v := until 5 }}
- {{ $i }}={{ $v }}{{ if eq $i 3 }}{{ break }}{{ end }}
{{- end }}
{{- range .Values.items }}{{ . }},{{ else }}none{{ end }}
files: {{ .Files.Glob "config/*" | len }}
{{ (.Files.Glob "config/*").AsConfig | indent 2 }}
{{ .Files.Get "config/a.conf" | nindent 2 }}
printf: {{ printf "%05d %q %v" 42 "s" .Values.items }}
lookup: {{ lookup "v1" "ConfigMap" "ns" "x" }}
seq: {{ seq 5 }} {{ untilStep 0 10 3 }} {{ repeat 3 "ab" }} {{ regexReplaceAll "(a)" "banana" "<$1>" }} {{ replace "a" "AA" "banana" }}
chart: {{ .Chart }}
release: {{ .Release.Name }} {{ .Release.IsInstall }} {{ .Template.Name }}
yaml: {{ toYaml .Values | nindent 2 }}
err: {{ .Values.nilval | default "d" }} {{ print nil }} {{ html "<a>" }} {{ js "'" }} {{ urlquery "a b" }}
`,
	})
	helm, ours, herr, oerr := renderBoth(t, c, map[string]any{"nested": map[string]any{}, "nilval": nil})
	if herr != nil || oerr != nil {
		t.Fatalf("helm: %v, ours: %v", herr, oerr)
	}
	if diff := cmp.Diff(helm, ours); diff != "" {
		t.Errorf("differs from Helm (-helm +ours):\n%s", diff)
	}
	// Errors read as Helm's.
	for _, text := range []string{`{{ required "need x" .Values.x }}`, `{{ fail "no" }}`, `{{ .Values.x.y.z }}`, `{{ include "nope" . }}`} {
		helm, ours, herr, oerr := renderBoth(t, chartOf(map[string]string{"a.yaml": text}), map[string]any{})
		if herr == nil || oerr == nil || herr.Error() != oerr.Error() || len(helm) != len(ours) {
			t.Errorf("%s: helm: %v, ours: %v", text, herr, oerr)
		}
	}
}

// TestBounds: each hostile template stops with the bound it passed, at
// its template and position, in well under a second and a few MB.
func TestBounds(t *testing.T) {
	b := Budget{MaxOutput: 1 << 20, MaxBytes: 8 << 20, MaxSteps: 100_000}
	for _, tc := range []struct{ name, text, limit, where string }{
		{"repeat", `k: {{ repeat 2000000000 "x" | quote }}`, "output", "c/templates/a.yaml:1:6"},
		{"repeat-within-output", `{{ range until 100 }}{{ $x := repeat 1000000 "x" }}{{ end }}`, "bytes", "c/templates/a.yaml:1:30"},
		{"indent", `{{ "a\nb\nc" | indent 2000000000 }}`, "output", "c/templates/a.yaml:1:15"},
		{"nindent", `{{ nindent 2000000000 "a" }}`, "output", "c/templates/a.yaml:1:3"},
		{"until", `{{ until 2000000000 }}`, "output", "c/templates/a.yaml:1:3"},
		{"untilStep", `{{ untilStep 0 2000000000 1 }}`, "output", "c/templates/a.yaml:1:3"},
		{"seq", `{{ seq 2000000000 }}`, "output", "c/templates/a.yaml:1:3"},
		{"randAlphaNum", `{{ randAlphaNum 2000000000 }}`, "output", "c/templates/a.yaml:1:3"},
		{"replace", `{{ $s := repeat 100000 "a" }}{{ replace "a" $s $s }}`, "output", "c/templates/a.yaml:1:32"},
		{"regex", `{{ $s := repeat 100000 "a" }}{{ regexReplaceAll "a" $s "$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0" }}`, "output", "c/templates/a.yaml:1:32"},
		{"nested-loops", `{{- range until 1000 }}{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}{{ end }}`, "steps", "c/templates/a.yaml:1:67"},
		{"recursion", `{{ define "r" }}{{ template "r" . }}{{ template "r" . }}{{ end }}{{ template "r" . }}`, "steps", "c/templates/a.yaml:1:16"},
		{"include-recursion", `{{ define "r" }}{{ include "r" . }}{{ end }}{{ include "r" . }}`, "nesting", "c/templates/a.yaml:1:47"},
		{"doubling", `{{- $s := "xx" }}{{ range until 40 }}{{ $s = cat $s $s }}{{ end }}`, "bytes", "c/templates/a.yaml:1:45"},
		{"list-doubling", `{{- $s := list 1 }}{{ range until 60 }}{{ $s = concat $s $s }}{{ end }}`, "output", "c/templates/a.yaml:1:47"},
		{"dag", `{{- $l := list 1 }}{{ range until 60 }}{{ $l = list $l $l }}{{ end }}{{ toJson $l }}`, "bytes", "c/templates/a.yaml:1:72"},
		{"dag-printed", `{{- $l := list 1 }}{{ range until 60 }}{{ $l = list $l $l }}{{ end }}{{ $l }}`, "bytes", "c/templates/a.yaml:1:72"},
		{"self-map", `{{- $d := dict }}{{ $_ := set $d "a" $d }}{{ $d }}`, "depth", "c/templates/a.yaml:1:45"},
		{"self-map-copy", `{{- $d := dict }}{{ $_ := set $d "a" $d }}{{ deepCopy $d }}`, "depth", "c/templates/a.yaml:1:45"},
		{"kept", `{{- $l := list }}{{ range until 100 }}{{ $l = append $l (repeat 500000 "x") }}{{ end }}`, "bytes", "c/templates/a.yaml:1:57"},
		{"output", `{{ range until 1000 }}{{ repeat 10000 "x" }}{{ end }}`, "output", "c/templates/a.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chartOf(map[string]string{"a.yaml": tc.text})
			rv, err := chartutil.ToRenderValues(c, map[string]any{}, chartutil.ReleaseOptions{Name: "rel"}, chartutil.DefaultCapabilities)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = Render(context.Background(), c, rv, b)
			var be *BoundError
			if !errors.As(err, &be) || be.Limit != tc.limit || be.Where != tc.where {
				t.Fatalf("got %v (%+v), want bound %s at %s", err, be, tc.limit, tc.where)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestContextEnds: a render stops when its context ends, inside a loop
// that writes nothing.
func TestContextEnds(t *testing.T) {
	c := chartOf(map[string]string{"a.yaml": `{{- range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`})
	rv, _ := chartutil.ToRenderValues(c, map[string]any{}, chartutil.ReleaseOptions{Name: "rel"}, chartutil.DefaultCapabilities)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Render(ctx, c, rv, Budget{})
	var be *BoundError
	if !errors.As(err, &be) || !errors.Is(err, context.Canceled) || !strings.HasPrefix(be.Where, "c/templates/a.yaml") {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkRender compares Render with Helm's engine on the example
// chart (the price of the bounds: steps, wrapped functions, weighed
// values).
func BenchmarkRender(b *testing.B) {
	c, vals := example(b)
	if err := chartutil.ProcessDependenciesWithMerge(c, vals); err != nil {
		b.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: "rel", Namespace: "ns"}, chartutil.DefaultCapabilities)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("helm", func(b *testing.B) {
		for b.Loop() {
			if _, err := (engine.Engine{}).Render(c, rv); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bounded", func(b *testing.B) {
		for b.Loop() {
			if _, err := Render(context.Background(), c, rv, Budget{MaxOutput: 32 << 20, MaxBytes: 256 << 20, MaxSteps: 10_000_000}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
