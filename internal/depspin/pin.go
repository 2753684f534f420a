package depspin

import (
	_ "github.com/Masterminds/semver/v3"
	_ "github.com/google/go-containerregistry/pkg/authn"
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "github.com/google/go-containerregistry/pkg/v1/empty"
	_ "github.com/google/go-containerregistry/pkg/v1/mutate"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "helm.sh/helm/v3/pkg/chart"
	_ "helm.sh/helm/v3/pkg/chart/loader"
	_ "helm.sh/helm/v3/pkg/chartutil"
	_ "helm.sh/helm/v3/pkg/downloader"
	_ "helm.sh/helm/v3/pkg/engine"
	_ "helm.sh/helm/v3/pkg/getter"
	_ "helm.sh/helm/v3/pkg/provenance"
	_ "helm.sh/helm/v3/pkg/registry"
	_ "helm.sh/helm/v3/pkg/releaseutil"
	_ "helm.sh/helm/v3/pkg/repo"
	_ "helm.sh/helm/v3/pkg/strvals"
)
