package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/internal/kubetest"
)

type countingRT struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// BenchmarkExports1k: 1,000 resources' exports written into a real API
// server by a freshly started gitaso (first sync: every value new), and the
// resync of a running one when nothing changed. Reports API requests per
// sync.
//
//	go test -run '^$' -bench Exports1k -benchtime 3x ./cluster
func BenchmarkExports1k(b *testing.B) {
	env := kubetest.Start(b)
	ns := env.Namespace(b, "bench")
	var n atomic.Int64
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingRT{rt: rt, n: &n} }
	// The client's default rate (50 requests/s, bursts of 100) and, as the
	// API server's own floor, no client-side limit.
	cl, err := cluster.FromConfig(cfg, cluster.Options{})
	if err != nil {
		b.Fatal(err)
	}
	unlimited, err := cluster.FromConfig(cfg, cluster.Options{QPS: -1})
	if err != nil {
		b.Fatal(err)
	}
	want := func(gen int) []cluster.Export {
		out := make([]cluster.Export, 1000)
		for i := range out {
			out[i] = cluster.Export{Owner: fmt.Sprintf("bench/managedidentity.azure.com/UserAssignedIdentity/id-%d", i),
				Namespace: ns, Name: fmt.Sprintf("id-%d-settings", i),
				Data: map[string]string{"clientId": fmt.Sprintf("%08d-0000-0000-0000-%012d", i, gen), "principalId": fmt.Sprint(gen)}}
		}
		return out
	}
	ctx := context.Background()
	gen := 0
	firstSync := func(b *testing.B, cl *cluster.Cluster) {
		n.Store(0)
		for b.Loop() {
			gen++
			x, err := cluster.NewExporter(cl, cluster.ExporterOptions{})
			if err != nil {
				b.Fatal(err)
			}
			res, err := x.Sync(ctx, want(gen))
			if err != nil || len(res.Errors) > 0 || res.Applied != 1000 {
				b.Fatalf("sync: %v %+v", err, res)
			}
		}
		b.ReportMetric(float64(n.Load())/float64(b.N), "requests/op")
	}
	b.Run("first-sync", func(b *testing.B) { firstSync(b, cl) })
	b.Run("first-sync-no-client-limit", func(b *testing.B) { firstSync(b, unlimited) })
	b.Run("resync-unchanged", func(b *testing.B) {
		x, err := cluster.NewExporter(cl, cluster.ExporterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		w := want(1 << 20)
		if _, err := x.Sync(ctx, w); err != nil {
			b.Fatal(err)
		}
		n.Store(0)
		for b.Loop() {
			res, err := x.Sync(ctx, w)
			if err != nil || res.Unchanged != 1000 {
				b.Fatalf("resync: %v %+v", err, res)
			}
		}
		b.ReportMetric(float64(n.Load())/float64(b.N), "requests/op")
	})
}
