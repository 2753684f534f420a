package render

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/source"
)

// errRenderTimeout is the cause of a Render's context ending at its
// deadline (source.Limits.RenderTimeout).
var errRenderTimeout = errors.New("render deadline passed")

// revisionBudget is what the renders of one revision used, against the
// per-revision limits: kustomize objects and YAML nodes read (every build
// counts what it reads, a base read by several kustomizations each time),
// bytes rendered (kustomize builds and Helm releases). It also remembers
// what started last, to name it when the deadline passes. Safe for
// concurrent use (releases render in parallel).
type revisionBudget struct {
	lim source.Limits

	mu       sync.Mutex
	objects  int
	nodes    int64
	rendered int64
	current  string // the kustomization file or HelmRelease rendering last
	file     string
}

// withDeadline returns ctx with the render deadline of b's limits
// (RenderTimeout).
func (b *revisionBudget) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if b.lim.RenderTimeout <= 0 || b.lim.RenderTimeout >= time.Duration(1<<62) {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, b.lim.RenderTimeout, errRenderTimeout)
}

// starting records what renders now, for the deadline's error.
func (b *revisionBudget) starting(file, what string) {
	b.mu.Lock()
	b.file, b.current = file, what
	b.mu.Unlock()
}

// addBuild counts a kustomize build's input: docs documents and nodes YAML
// nodes the files it reaches hold.
func (b *revisionBudget) addBuild(kfile string, docs int, nodes int64) *diag.Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objects += docs
	b.nodes += nodes
	if b.objects > b.lim.MaxTotalKustomizeObjects {
		return &diag.Error{File: kfile, Err: &source.LimitError{Limit: "total-kustomize-objects", Max: int64(b.lim.MaxTotalKustomizeObjects),
			What: fmt.Sprintf("with this kustomization's %d documents the revision's kustomize builds read %d documents", docs, b.objects)}}
	}
	if b.nodes > b.lim.MaxKustomizeNodes {
		return &diag.Error{File: kfile, Err: &source.LimitError{Limit: "kustomize-nodes", Max: b.lim.MaxKustomizeNodes,
			What: fmt.Sprintf("with this kustomization's %d YAML nodes the revision's kustomize builds read %d (kustomize keeps about 650 bytes a node, 1,400 at its peak)", nodes, b.nodes)}}
	}
	return nil
}

// addRendered counts n bytes a build or a release rendered.
func (b *revisionBudget) addRendered(file, what string, n int64) *diag.Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rendered += n
	if b.rendered > b.lim.MaxRenderedSize {
		return &diag.Error{File: file, Err: &source.LimitError{Limit: "rendered-size", Max: b.lim.MaxRenderedSize,
			What: fmt.Sprintf("with the %d bytes %s rendered the revision's renders produced %d bytes", n, what, b.rendered)}}
	}
	return nil
}

// timeoutError returns err, or when ctx passed its render deadline (and
// its parent did not end) the deadline as a limit error naming what was
// rendering (b's last start), unless err already names it.
func timeoutError(parent, ctx context.Context, b *revisionBudget, err error) error {
	if err == nil || parent.Err() != nil || !errors.Is(context.Cause(ctx), errRenderTimeout) {
		return err
	}
	if l := diag.AsList(err); l != nil {
		for _, e := range l {
			var le *source.LimitError
			if errors.As(e, &le) && le.Limit == "render-timeout" {
				return err
			}
		}
	}
	b.mu.Lock()
	file, what := b.file, b.current
	b.mu.Unlock()
	msg := "the revision was still rendering at the render deadline"
	if what != "" {
		msg += " (" + what + ")"
	}
	return diag.List{{File: file, Err: &source.LimitError{Limit: "render-timeout", Max: int64(b.lim.RenderTimeout), What: msg}}}
}

// kustomizeBuildCtx is kustomizeBuild abandoned when ctx ends: kustomize
// takes no context, so the build goes on in its goroutine (bounded by the
// kustomize limits) while the render returns; fs is not used again. The
// output counts against b.
func kustomizeBuildCtx(ctx context.Context, b *revisionBudget, fs filesys.FileSystem, dir, kfile string) ([]builtObject, *diag.Error) {
	b.starting(kfile, "kustomize build of "+kfile)
	type result struct {
		objs []builtObject
		err  *diag.Error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: &diag.Error{File: kfile, Err: fmt.Errorf("%w: kustomize panicked: %v", ErrKustomizeBuild, p)}}
			}
			done <- r
		}()
		r.objs, r.err = kustomizeBuild(fs, dir, kfile)
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		var n int64
		for _, o := range r.objs {
			n += int64(len(o.yaml))
		}
		if e := b.addRendered(kfile, "this kustomization", n); e != nil {
			return nil, e
		}
		return r.objs, nil
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), errRenderTimeout) {
			return nil, &diag.Error{File: kfile, Err: &source.LimitError{Limit: "render-timeout", Max: int64(b.lim.RenderTimeout),
				What: "kustomize was still building this kustomization at the render deadline"}}
		}
		return nil, &diag.Error{File: kfile, Msg: "kustomize build abandoned", Err: ctx.Err()}
	}
}
