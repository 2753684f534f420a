package source

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/gittest"
)

// recorder is a Renderer that records the paths it receives and returns
// every file but those of charts (as a renderer must), and one non-YAML
// file, which is not parsed.
type recorder struct{ paths []string }

func (r *recorder) Render(_ context.Context, files []File) ([]File, error) {
	r.paths = r.paths[:0]
	var out []File
	for _, f := range files {
		r.paths = append(r.paths, f.Path)
		if !strings.Contains(f.Path, "/charts/") || strings.HasSuffix(f.Path, ".tpl") {
			out = append(out, f)
		}
	}
	return out, nil
}

// chartRepo is a repository with a Helm chart directory beside manifests.
var chartRepo = map[string]string{
	"infra/rg.yaml":                               rgYAML,
	"infra/notes.txt":                             "not read: outside a chart",
	"infra/charts/app/Chart.yaml":                 "apiVersion: v2\nname: app\nversion: 1.0.0\n",
	"infra/charts/app/.helmignore":                "*.bak\n",
	"infra/charts/app/values.yaml":                "x: 1\n",
	"infra/charts/app/templates/_helpers.tpl":     "{{- define \"app.name\" -}}app{{- end }}\n",
	"infra/charts/app/templates/NOTES.txt":        "installed {{ .Release.Name }} & more\n",
	"infra/charts/app/charts/lib/Chart.yaml":      "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n",
	"infra/charts/app/charts/lib/templates/l.tpl": "{{- define \"lib.x\" -}}x{{- end }}\n",
	"infra/charts/app/.hidden/ignored.tpl":        "hidden directories stay skipped",
}

var chartRepoRendered = []string{
	"infra/charts/app/.helmignore",
	"infra/charts/app/Chart.yaml",
	"infra/charts/app/charts/lib/Chart.yaml",
	"infra/charts/app/charts/lib/templates/l.tpl",
	"infra/charts/app/templates/NOTES.txt",
	"infra/charts/app/templates/_helpers.tpl",
	"infra/charts/app/values.yaml",
	"infra/rg.yaml",
}

// TestChartFilesReachRenderer: every file of a chart directory reaches
// the renderer (Git and directory sources), and only *.yaml files of what
// it returns are parsed.
func TestChartFilesReachRenderer(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	for p, data := range chartRepo {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var dirRec recorder
	snap, err := NewDir(root, "infra", WithRenderer(&dirRec)).Fetch(ctx)
	if err != nil {
		t.Fatalf("dir: %v", err)
	}
	if got := ids(snap.Objects); !slices.Equal(got, []string{"infra/rg.yaml:1 team-a/ResourceGroup/rg"}) {
		t.Errorf("dir: objects %v", got)
	}
	if diff := cmp.Diff(chartRepoRendered, dirRec.paths); diff != "" {
		t.Errorf("dir: files given to the renderer (-want +got):\n%s", diff)
	}
	srv := gittest.NewServer(t, gittest.WithBasicAuth("alice", testPassword))
	repo := srv.CreateRepo("charts")
	repo.Commit(chartRepo, nil, "chart")
	var gitRec recorder
	g, err := NewGit(GitOptions{URL: repo.URL(), Branch: repo.Branch(), Path: "infra", CacheDir: t.TempDir(),
		Username: "alice", Password: testPassword, CABundle: srv.CABundle(), Renderer: &gitRec})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	snap, err = g.Fetch(ctx)
	if err != nil {
		t.Fatalf("git: %v", err)
	}
	if got := ids(snap.Objects); !slices.Equal(got, []string{"infra/rg.yaml:1 team-a/ResourceGroup/rg"}) {
		t.Errorf("git: objects %v", got)
	}
	if diff := cmp.Diff(chartRepoRendered, gitRec.paths); diff != "" {
		t.Errorf("git: files given to the renderer (-want +got):\n%s", diff)
	}
}

// TestChartFilesLimits: a chart's files count towards the limits.
func TestChartFilesLimits(t *testing.T) {
	root := t.TempDir()
	for p, data := range map[string]string{
		"c/Chart.yaml":        "apiVersion: v2\nname: c\nversion: 1.0.0\n",
		"c/templates/big.tpl": string(make([]byte, 2048)),
	} {
		full := filepath.Join(root, filepath.FromSlash(p))
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := NewDir(root, "", WithRenderer(&recorder{}), WithLimits(Limits{MaxFileSize: 1024})).Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "c/templates/big.tpl") {
		t.Fatalf("want a file-size error naming the template, got %v", err)
	}
}
