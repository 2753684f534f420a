package source

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/manifest"
)

// chartsRenderer passes files through and says the output came from the
// chart version it is set to, as the HelmRelease renderer does.
type chartsRenderer struct {
	mu      sync.Mutex
	version string
	calls   int
}

func (r *chartsRenderer) Render(_ context.Context, files []File) ([]File, error) { return files, nil }

func (r *chartsRenderer) RenderSources(ctx context.Context, files []File) ([]File, []manifest.External, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.version == "" {
		return files, nil, nil
	}
	return files, []manifest.External{{Kind: "HelmChart", User: "team-a/infra", Name: "infra", Version: r.version,
		Digest: "sha256:" + strings.Repeat(r.version[:1], 64)}}, nil
}

// TestChartVersionIsARevision: with the same commit, a new version of a
// chart the objects came from is a new revision (the commit's, "+", a
// digest of the charts); the same charts give the same revision; a
// snapshot without external sources is not rendered again.
func TestChartVersionIsARevision(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("alice", testPassword))
	repo := srv.CreateRepo("platform")
	sha := repo.Commit(map[string]string{"infra/rg.yaml": rgYAML}, nil, "first")
	g, _ := newTestGit(t, srv, repo, t.TempDir(), "infra")
	r := &chartsRenderer{version: "1.0.0"}
	g.opts.Renderer = r
	ctx := context.Background()
	fetch := func() *manifest.Snapshot {
		t.Helper()
		snap, err := g.Fetch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	a := fetch()
	if !strings.HasPrefix(a.Revision, sha+"+") || len(a.Revision) != len(sha)+13 || len(a.External) != 1 {
		t.Fatalf("revision %q with %d external sources", a.Revision, len(a.External))
	}
	if b := fetch(); b.Revision != a.Revision {
		t.Errorf("same chart, same commit: revision %s then %s", a.Revision, b.Revision)
	}
	r.version = "1.1.0"
	c := fetch()
	if c.Revision == a.Revision || !strings.HasPrefix(c.Revision, sha+"+") || c.External[0].Version != "1.1.0" {
		t.Errorf("new chart version: revision %s (was %s), external %+v", c.Revision, a.Revision, c.External)
	}
	// Without external sources the revision is the commit, and the
	// snapshot is kept until the commit changes.
	r.version = ""
	d := fetch()
	if d.Revision != sha {
		t.Errorf("no external sources: revision %s, want %s", d.Revision, sha)
	}
	calls := r.calls
	fetch()
	if r.calls != calls {
		t.Errorf("a snapshot without external sources was rendered again for the same commit")
	}
}
