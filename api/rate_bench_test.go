package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/harness/apiload"
	"github.com/gitaso/gitaso/state"
)

// benchRate sends b.N GET url at rate requests per second (open loop: each
// request's latency runs from the time it was due) to the API serving
// 10,000 resources over TCP, and reports the latencies of the 200 answers,
// the 200 answers per second, the share shed (429) and the process's peak
// RSS (server and load generator: one process). For figures of the daemon
// alone see docs/api.md (apiload against gitaso serve).
//
//	go test -tags kustomize_disable_go_plugin_support ./api/ -run '^$' -bench 'Rate' -benchtime 15000x
func benchRate(b *testing.B, url string, rate float64, gz bool) {
	benchRateWriting(b, url, rate, gz, false)
}

// benchRateWriting is benchRate; with writing, ten resources change every
// 250 ms meanwhile, as a run records its progress.
func benchRateWriting(b *testing.B, url string, rate float64, gz, writing bool) {
	path := filepath.Join(b.TempDir(), "gitaso.db")
	if err := apiload.Generate(context.Background(), path, 10000); err != nil {
		b.Fatal(err)
	}
	db, err := state.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	srv := httptest.NewServer(api.New(db, api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	b.Cleanup(srv.Close)
	// The daemon builds its index at startup; so does this server before
	// the clock starts.
	resp, err := http.Get(srv.URL + url)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	if writing {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		b.Cleanup(func() { cancel(); <-done })
		go func() {
			defer close(done)
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if err := apiload.Change(db, i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}

	b.ResetTimer()
	res, err := apiload.Run(context.Background(), apiload.Options{URL: srv.URL + url, Rate: rate, Count: b.N, Gzip: gz, Settle: time.Millisecond})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if res.Failed > 0 {
		b.Fatalf("%d requests failed: %s", res.Failed, res.FirstError)
	}
	b.ReportMetric(res.Throughput, "req/s")
	b.ReportMetric(float64(res.P50)/1e6, "p50-ms")
	b.ReportMetric(float64(res.P99)/1e6, "p99-ms")
	b.ReportMetric(float64(res.Max)/1e6, "max-ms")
	b.ReportMetric(100*float64(res.Rejected)/float64(max(res.Sent, 1)), "shed-%")
	b.ReportMetric(float64(res.RSSPeak)/(1<<20), "rss-MB")
}

func BenchmarkAPI10kPage500Rate500(b *testing.B) {
	benchRate(b, "/api/v1/resources?limit=500", 500, false)
}

func BenchmarkAPI10kPage500Rate500Gzip(b *testing.B) {
	benchRate(b, "/api/v1/resources?limit=500", 500, true)
}

// While a run writes ten resources every 250 ms: each commit rebuilds the
// index (ten records encoded again) and drops the kept pages.
func BenchmarkAPI10kPage500Rate500Writing(b *testing.B) {
	benchRateWriting(b, "/api/v1/resources?limit=500", 500, false, true)
}

func BenchmarkAPI10kPage500Rate2000(b *testing.B) {
	benchRate(b, "/api/v1/resources?limit=500", 2000, false)
}
