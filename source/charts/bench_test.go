package charts_test

import (
	"testing"

	"github.com/gitaso/gitaso/source/charts"
)

// BenchmarkFetchCached is 100 fetches of the same chart version through an
// HTTP repository: the index is downloaded once and the archive once.
func BenchmarkFetchCached(b *testing.B) {
	h := newHelmRepo(b, true, "", "")
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		h.add(b, "infra", v, "")
	}
	for b.Loop() {
		f := newFetcher(b, h.srv.Client(), func(o *charts.Options) { o.CacheDir = b.TempDir() })
		h.reqs.reset()
		for range 100 {
			c, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra", Version: "1.x"})
			if err != nil || c.Version != "1.2.0" {
				b.Fatal(err)
			}
		}
		if n, m := h.reqs.get("GET /index.yaml"), h.reqs.get("GET /charts/infra-1.2.0.tgz"); n != 1 || m != 1 {
			b.Fatalf("index fetched %d times, archive %d times; want 1 and 1", n, m)
		}
		if st := f.Stats(); st.CacheHits != 99 {
			b.Fatalf("stats %+v", st)
		}
	}
}
