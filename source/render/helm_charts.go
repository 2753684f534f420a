package render

import (
	"context"

	"github.com/gitaso/gitaso/source/charts"
)

// ChartsFetcher adapts package charts' Fetcher (Helm repositories over
// HTTP and OCI, OCI registries with ACR's token exchange, other Git
// repositories; a cache by digest) to the ChartFetcher a Renderer takes
// (Options.Charts).
func ChartsFetcher(f *charts.Fetcher) ChartFetcher { return chartsFetcher{f} }

type chartsFetcher struct{ f *charts.Fetcher }

func (a chartsFetcher) Fetch(ctx context.Context, req ChartRequest) (*FetchedChart, error) {
	c, err := a.f.Fetch(ctx, charts.Request{
		Source: charts.Source{Kind: req.Source.Kind, Namespace: req.Source.Namespace, Name: req.Source.Name,
			Spec: req.Source.Spec, File: req.Source.File, Line: req.Source.Line},
		Secret: charts.Secret(req.Secret), Chart: req.Chart, Version: req.Version,
	})
	return fetched(c, err)
}

func (a chartsFetcher) FetchURL(ctx context.Context, repoURL, name, version string, secret map[string]string) (*FetchedChart, error) {
	return fetched(a.f.FetchURL(ctx, repoURL, name, version, charts.Secret(secret)))
}

func fetched(c *charts.Chart, err error) (*FetchedChart, error) {
	if err != nil {
		return nil, err
	}
	return &FetchedChart{Name: c.Name, Version: c.Version, Digest: c.Digest, URL: c.URL, Archive: c.Archive, Cached: c.Cached}, nil
}
