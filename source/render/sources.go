package render

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// pass is one render of a revision (one Render, RenderSources or
// RenderUnits call): what its parts share, handed to them as an argument.
type pass struct {
	// budget is what the render used against the per-revision limits.
	budget *revisionBudget
	// sources collects the sources outside the repository the output
	// depends on, which RenderUnits returns; nil for Render, whose caller
	// hears of none (a pending substituteFrom source stays an error then).
	sources *externals
}

// newPass starts a render with lim's budget, collecting the external
// sources when collect is set.
func newPass(lim source.Limits, collect bool) *pass {
	p := &pass{budget: &revisionBudget{lim: lim}}
	if collect {
		p.sources = &externals{seen: map[manifest.External]bool{}}
	}
	return p
}

// externals are the sources outside the repository one render's output
// depends on, each once. Safe for concurrent use.
type externals struct {
	mu   sync.Mutex
	seen map[manifest.External]bool
	list []manifest.External
}

// add records e; a nil collector records nothing.
func (x *externals) add(e manifest.External) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.seen[e] {
		x.seen[e] = true
		x.list = append(x.list, e)
	}
}

// chart records a chart a HelmRelease took from outside the repository.
func (x *externals) chart(u ChartUse) {
	x.add(manifest.External{Kind: "HelmChart", User: u.Release, Name: u.Chart, Version: u.Version, Digest: u.Digest, URL: u.URL})
}

// sorted returns what was recorded, in manifest.External order.
func (x *externals) sorted() []manifest.External {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := slices.Clone(x.list)
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// exportedFor returns Options.Exported, recording each export it finds in
// x (RenderSources): exported values that change make a new revision, as a
// new chart version does.
func (r *Renderer) exportedFor(x *externals) ExportedData {
	ex := r.opts.Exported
	if ex == nil || x == nil {
		return ex
	}
	return func(secret bool, namespace, name string) (map[string]string, bool) {
		d, found := ex(secret, namespace, name)
		if found {
			kind := "ConfigMap"
			if secret {
				kind = "Secret"
			}
			x.add(manifest.External{Kind: "Exported" + kind, User: namespace + "/" + name, Name: name, Digest: dataDigest(d, secret)})
		}
		return d, found
	}
}

// secretDigestKey keys the digests of Secret data, so that a revision never
// carries a plain hash of a secret value (which a short secret would not
// survive); the price is one new revision, planned as no-ops, after a
// restart.
var secretDigestKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}()

// dataDigest identifies a ConfigMap's or Secret's data without keeping it.
func dataDigest(d map[string]string, secret bool) string {
	h := sha256.New()
	if secret {
		h = hmac.New(sha256.New, secretDigestKey)
	}
	for _, k := range slices.Sorted(maps.Keys(d)) {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(d[k]))
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

var _ source.SourcesRenderer = (*Renderer)(nil)

// RenderSources is Render that also returns the sources outside the
// repository the output depends on: the chart (name, version, digest) of
// every HelmRelease whose chart came from a Helm repository, an OCI
// registry or another Git repository, and the exported ConfigMaps and
// Secrets substituteFrom read (a digest of their data, never the values). source.Build folds them into the
// revision, so a new chart version matching a release's semver range is a
// new revision, planned and applied like a commit.
//
// A unit (Flux Kustomization or HelmRelease) that did not render refuses
// the revision here, its errors among the revision's: a caller that does
// not know units must not take its objects' absence for a deletion.
// RenderUnits lists such units instead.
func (r *Renderer) RenderSources(ctx context.Context, files []source.File) ([]source.File, []manifest.External, error) {
	res, err := r.RenderUnits(ctx, files)
	if res == nil {
		return nil, nil, err
	}
	if es := source.UnitErrors(res.Units); len(es) > 0 {
		var pe *source.PartialRenderError
		if errors.As(err, &pe) {
			es = append(es, pe.Errors...)
		}
		return nil, nil, es
	}
	return res.Files, res.External, err
}

var _ source.UnitsRenderer = (*Renderer)(nil)

// RenderUnits is RenderSources that renders each Flux Kustomization and
// HelmRelease as a unit of its own (source.UnitsRenderer): one that cannot
// be rendered is listed in Rendered.Units with its Reason and Errors and
// its objects (and its child Kustomizations') are left out, instead of
// refusing the revision. See renderFlux and renderHelm.
func (r *Renderer) RenderUnits(ctx context.Context, files []source.File) (*source.Rendered, error) {
	p := newPass(r.opts.Limits.WithDefaults(), true)
	out, units, err := r.renderUnits(ctx, p, files)
	if err != nil && out == nil { // a PartialRenderError comes with its files
		return nil, err
	}
	return &source.Rendered{Files: out, External: p.sources.sorted(), Units: units}, err
}
