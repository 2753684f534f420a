package reliability

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileRenderBounds runs the render cases of the hostile corpus (issue
// 26: a chart repeating a string 2e9 times, nested loops that write
// nothing, kustomizations past the per-revision limits) as real `gitaso
// validate` processes under a 1 GiB memory guard (GOMEMLIMIT at two
// thirds, the resident set read from /proc every 20 ms, as RunHostile
// does): each is refused, within the guard, with an error naming the
// HelmRelease or kustomization, the file and the limit. Before the bounds,
// the chart took validate to 8 GB (killed:mem), the loops never ended, the
// four kustomizations took 5 min 38 s and the 18 MB one 3.8 GB.
func TestHostileRenderBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gitaso and renders hostile inputs")
	}
	bin := buildGitaso(t)
	launcher, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := HostileOptions{Timeout: 150 * time.Second, MemLimit: 1 << 30, Launcher: launcher}
	want := map[string][]string{
		"helm-repeat":       {"HelmRelease flux-system/hostile, chart hostile@0.1.0", "hostile/templates/cm.yaml:6:", "repeat 2000000000", "limit file-size=32MiB"},
		"helm-loops":        {"HelmRelease flux-system/hostile, chart hostile@0.1.0", "hostile/templates/cm.yaml:6:", "limit helm-steps=10000000"},
		"helm-doubling":     {"HelmRelease flux-system/hostile, chart hostile@0.1.0", "hostile/templates/cm.yaml:6:", "cat:", "limit helm-bytes=256MiB"},
		"helm-self-map":     {"HelmRelease flux-system/hostile, chart hostile@0.1.0", "hostile/templates/cm.yaml:6:", "nests more than 1000 levels"},
		"kustomize-objects": {"app1/kustomization.yaml:", "limit total-kustomize-objects=10000"},
		"kustomize-keys":    {"app0/kustomization.yaml:", "limit kustomize-nodes=750000"},
	}
	for _, hc := range hostileCases(o) {
		if want[hc.name] == nil {
			continue
		}
		t.Run(hc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), hc.name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := hc.make(dir); err != nil {
				t.Fatal(err)
			}
			c, err := validate(context.Background(), bin, "", dir, o, hc.args...)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s in %v, peak RSS %d MiB: %s", hc.name, c.Outcome, c.Duration.Round(time.Millisecond), c.MaxRSS>>20, c.Error)
			if c.Outcome != OutcomeRefused || c.MaxRSS <= 0 || c.MaxRSS > o.MemLimit {
				t.Fatalf("outcome %s, peak RSS %d MiB, want refused within %d MiB:\n%s", c.Outcome, c.MaxRSS>>20, o.MemLimit>>20, c.Output)
			}
			for _, w := range want[hc.name] {
				if !strings.Contains(c.Output, w) {
					t.Errorf("the error does not say %q:\n%s", w, c.Output)
				}
			}
		})
	}
}
