package charts_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/source/charts"
)

// A chart from a GitRepository served over plain http:// is read, as Flux
// reads it ("an HTTP/S or SSH address") and as gitaso reads the
// GitRepository of a Kustomization, with a warning; it was refused unless
// Options.AllowPlainHTTP (issue 25).
func TestGitRepositoryChartPlainHTTP(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithPlainHTTP())
	repo := srv.CreateRepo("charts")
	repo.Commit(map[string]string{
		"charts/app/Chart.yaml":        "apiVersion: v2\nname: app\nversion: 1.2.3\n",
		"charts/app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
	}, nil, "app")
	if !strings.HasPrefix(repo.URL(), "http://") {
		t.Fatalf("server URL %s", repo.URL())
	}
	var logs strings.Builder
	f := newFetcher(t, nil, func(o *charts.Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	src := charts.Source{Kind: "GitRepository", Namespace: "flux-system", Name: "charts",
		Spec: map[string]any{"url": repo.URL(), "ref": map[string]any{"branch": repo.Branch()}}}
	c, err := f.Fetch(bg, charts.Request{Source: src, Chart: "charts/app"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "app" || c.Version != "1.2.3" {
		t.Errorf("got %s %s", c.Name, c.Version)
	}
	if !strings.Contains(logs.String(), `msg="reading over plain http:// (no TLS)`) || !strings.Contains(logs.String(), `what="Git repository"`) {
		t.Errorf("no warning:\n%s", logs.String())
	}
}
