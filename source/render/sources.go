package render

import (
	"context"
	"sort"
	"sync"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// chartUsesKey carries, in a Render's context, the function that hears of
// the charts that render took from outside the repository.
type chartUsesKey struct{}

var _ source.SourcesRenderer = (*Renderer)(nil)

// RenderSources is Render that also returns the sources outside the
// repository the output depends on: the chart (name, version, digest) of
// every HelmRelease whose chart came from a Helm repository, an OCI
// registry or another Git repository. source.Build folds them into the
// revision, so a new chart version matching a release's semver range is a
// new revision, planned and applied like a commit.
func (r *Renderer) RenderSources(ctx context.Context, files []source.File) ([]source.File, []manifest.External, error) {
	var (
		mu   sync.Mutex
		seen = map[manifest.External]bool{}
		ext  []manifest.External
	)
	ctx = context.WithValue(ctx, chartUsesKey{}, func(u ChartUse) {
		e := manifest.External{Kind: "HelmChart", User: u.Release, Name: u.Chart, Version: u.Version, Digest: u.Digest, URL: u.URL}
		mu.Lock()
		defer mu.Unlock()
		if !seen[e] {
			seen[e] = true
			ext = append(ext, e)
		}
	})
	out, err := r.Render(ctx, files)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(ext, func(i, j int) bool { return ext[i].Less(ext[j]) })
	return out, ext, nil
}
