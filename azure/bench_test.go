package azure

import (
	"context"
	"net/http"
	"testing"
)

// BenchmarkGet measures GETs through the full pipeline (bearer token, retry,
// rate-limit policy, body download, JSON check) against a local TLS server.
func BenchmarkGet(b *testing.B) {
	for _, bc := range []struct {
		name   string
		limits RateLimits
	}{
		{"unlimited", RateLimits{Disabled: true}},
		// Limiter on, buckets too large to wait: measures the policy's overhead.
		{"limiter", RateLimits{Reads: Limit{Burst: 1 << 30, PerSecond: 1e9}, Writes: Limit{Burst: 1, PerSecond: 1}, Deletes: Limit{Burst: 1, PerSecond: 1}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := benchClient(b, bc.limits)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Get(ctx, rgID, rgAPI); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			c := benchClient(b, bc.limits)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Get(ctx, rgID, rgAPI); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func benchClient(b *testing.B, limits RateLimits) *Client {
	f := newFakeAzure(b)
	f.noRecord = true
	body := []byte(`{"id":"` + rgID + `","name":"rg1","type":"Microsoft.Resources/resourceGroups","location":"westeurope","properties":{"provisioningState":"Succeeded"}}`)
	f.handle("GET", rgID, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	o := testOptions()
	o.Limits = limits
	c, err := NewClients(f.cloud(), o).For(secretCred(b, "bench/aso-credential"))
	if err != nil {
		b.Fatal(err)
	}
	return c
}
