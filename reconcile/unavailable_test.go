package reconcile_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
)

// registryDown is a directory source whose HelmRelease's chart registry stops answering while down is set: its
// Fetch fails as the renderer's does then (source/render TestHelmRegistryUnavailableIsNotARefusal), with a revision
// error whose input error wraps source.ErrUnavailable.
type registryDown struct {
	source.Source
	down atomic.Bool
}

func (s *registryDown) Fetch(ctx context.Context) (*manifest.Snapshot, error) {
	snap, err := s.Source.Fetch(ctx)
	if err != nil || !s.down.Load() {
		return snap, err
	}
	return nil, &source.RevisionError{Revision: snap.Revision, Errors: diag.List{{File: "apps/team-a.yaml", Line: 7,
		Object: "team-a/HelmRelease/web", Field: "spec.chart.spec.sourceRef",
		Msg: "HelmRepository team-a/platform: GET https://charts.example/index.yaml: 503 Service Unavailable",
		Err: fmt.Errorf("helm chart: %w", source.ErrUnavailable)}}}
}

// TestLoopChartRegistryDownIsASourceFailure: a commit whose chart registry does not answer is not refused (a
// refusal stands until a later commit, and the loop would not try that revision again): the poll is a source
// failure (status, metric), nothing is recorded as refused, the last good revision stays, and the next poll after
// the registry answers applies the commit.
func TestLoopChartRegistryDownIsASourceFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	var src *registryDown
	const interval = 100 * time.Millisecond
	l, env, write, _ := startDirLoop(t, filepath.Join(t.TempDir(), "state.db"), resourceGroups(1),
		func(s source.Source) source.Source { src = &registryDown{Source: s}; return src },
		func(c *reconcile.Config) { c.Interval = interval })
	db, ctx := l.db, context.Background()

	src.down.Store(true)
	write(resourceGroups(2))
	h := l.waitStatus(t, "the source failure", func(h record.Health) bool { return h.Source.Failing })
	if !strings.Contains(h.Source.Error, "503 Service Unavailable") || !strings.Contains(h.Source.Error, "cannot be rendered now") {
		t.Errorf("source error %q", h.Source.Error)
	}
	time.Sleep(5 * interval) // polls while down: failures, never a refusal
	if v := l.metric(t, "gitaso_revision_refused"); v != 0 {
		t.Errorf("gitaso_revision_refused %v while the registry is down", v)
	}
	if v := l.metric(t, "gitaso_source_consecutive_failures"); v < 2 {
		t.Errorf("gitaso_source_consecutive_failures %v after several polls", v)
	}
	if _, refused, err := db.Refused(); err != nil || refused {
		t.Errorf("a refusal stands (%v, %v) for a registry that does not answer", refused, err)
	}

	src.down.Store(false)
	l.waitStatus(t, "the source fetched again", func(h record.Health) bool { return !h.Source.Failing })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := env.Client.Get(ctx, "/subscriptions/"+env.Sub+"/resourceGroups/disk-rg-001", "2020-06-01"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the commit was not applied once the registry answered")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
