package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/gittest"
)

// --git-ca-file is trusted for the GitRepository a HelmRelease's chart
// comes from, as for --repo and Kustomizations' GitRepositories; the chart
// fetcher ignored it, so a Git server with a private CA failed the chart
// (issue 25).
func TestGitCAFileForCharts(t *testing.T) {
	srv := gittest.NewServer(t)
	charts := srv.CreateRepo("charts")
	charts.Commit(map[string]string{
		"charts/rg/Chart.yaml": "apiVersion: v2\nname: rg\nversion: 1.0.0\n",
		"charts/rg/templates/rg.yaml": "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\n" +
			"metadata:\n  name: {{ .Release.Name }}-rg\nspec:\n  location: westeurope\n",
	}, nil, "chart")
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, srv.CABundle(), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Flux's own flux-system objects say which repository this is.
	release := `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  url: https://git.example.com/fleet.git
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  path: ./clusters/c
  sourceRef:
    kind: GitRepository
    name: flux-system
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: charts
  namespace: team-a
spec:
  url: ` + charts.URL() + `
  ref:
    branch: ` + charts.Branch() + `
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: team-a
spec:
  chart:
    spec:
      chart: charts/rg
      sourceRef:
        kind: GitRepository
        name: charts
`
	if err := os.MkdirAll(filepath.Join(dir, "clusters", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clusters", "c", "release.yaml"), []byte(release), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "validate", "--dir", dir, "--flux", "--path", "clusters/c", "--git-ca-file", ca)
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "1 resources valid") {
		t.Errorf("output %q", out)
	}
	// Without it the server's certificate is not trusted.
	if _, stderr, err := run(t, "validate", "--dir", dir, "--flux", "--path", "clusters/c"); err == nil || !strings.Contains(stderr, "certificate") {
		t.Errorf("without --git-ca-file: %v\n%s", err, stderr)
	}
}
