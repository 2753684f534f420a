package source

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/gittest"
)

// A Kustomization's GitRepository over plain http:// is read (Flux: "an
// HTTP/S or SSH address"), with a warning, as a chart's GitRepository is.
func TestRepositoriesPlainHTTPWarns(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithPlainHTTP())
	repo := srv.CreateRepo("apps")
	repo.Commit(map[string]string{"rg.yaml": "kind: ResourceGroup\n"}, nil, "apps")
	var logs strings.Builder
	rs := &Repositories{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	for range 2 {
		if _, files, err := rs.Files(context.Background(), RepositoryRequest{URL: repo.URL(), Branch: repo.Branch()}); err != nil || len(files) != 1 {
			t.Fatalf("files %v, err %v", files, err)
		}
	}
	if n := strings.Count(logs.String(), "reading over plain http://"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
}
