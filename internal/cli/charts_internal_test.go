package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The chart cache: --chart-cache wins; serve and apply keep charts beside the state file; plan and validate
// keep them in memory, except an offline plan, which reads what serve and apply cached; an offline validate
// (no state file) must be told where the cache is.
func TestChartCacheDir(t *testing.T) {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, c := range []struct {
		name    string
		s       settings
		want    string
		wantErr string
	}{
		{"flag", settings{chartCache: "cache", stateFile: "gitaso.db", persistCharts: true}, abs("cache"), ""},
		{"serve/apply", settings{stateFile: "data/gitaso.db", persistCharts: true}, abs("data/gitaso.db.charts"), ""},
		{"plan", settings{stateFile: "gitaso.db"}, "", ""},
		{"plan offline", settings{stateFile: "gitaso.db", chartsOffline: true}, abs("gitaso.db.charts"), ""},
		{"validate offline", settings{chartsOffline: true}, "", "--charts-offline needs --chart-cache"},
	} {
		got, err := c.s.chartCacheDir()
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case got != c.want:
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// --charts-offline comes from GITASO_CHARTS_OFFLINE like every flag, and validate, which has no state file, must be
// told where the cached charts are.
func TestChartsOfflineFromEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITASO_CHARTS_OFFLINE", "true")
	var out, errb bytes.Buffer
	err := Run(t.Context(), []string{"validate", "--dir", dir, "--flux", "--path", "."}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "--charts-offline needs --chart-cache") {
		t.Fatalf("validate with GITASO_CHARTS_OFFLINE=true and no --chart-cache: %v", err)
	}
	t.Setenv("GITASO_CHART_CACHE", t.TempDir())
	out.Reset()
	if err := Run(t.Context(), []string{"validate", "--dir", dir, "--flux", "--path", "."}, &out, &errb); err != nil {
		t.Fatalf("validate with GITASO_CHART_CACHE: %v\n%s", err, errb.String())
	}
}

// The same settings from a --config file.
func TestChartsOfflineFromConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "gitaso.yaml")
	if err := os.WriteFile(cfg, []byte("charts-offline: true\nflux: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := Run(t.Context(), []string{"validate", "--config", cfg, "--dir", dir, "--path", "."}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "--charts-offline needs --chart-cache") {
		t.Fatalf("validate with charts-offline in --config and no chart-cache: %v", err)
	}
	if err := os.WriteFile(cfg, []byte("charts-offline: true\nflux: true\nchart-cache: "+t.TempDir()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Run(t.Context(), []string{"validate", "--config", cfg, "--dir", dir, "--path", "."}, &out, &errb); err != nil {
		t.Fatalf("validate with chart-cache in --config: %v\n%s", err, errb.String())
	}
}
