package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// benchScoped serves 10,000 resources in 50 namespaces (as bench10k) with a
// policy, to a caller who reads the 10 namespaces team-0* (2,000
// resources): the cost of cutting answers by namespace.
func benchScoped(b *testing.B, url string) {
	db, err := state.Open(filepath.Join(b.TempDir(), "gitaso.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Update(func(w *state.Writer) error {
		for i := range 10000 {
			r := resource(fmt.Sprintf("team-%02d", i%50), "storage.azure.com", "StorageAccount", fmt.Sprintf("acct%05d", i), "True", "", "Succeeded")
			r.AppliedBody = json.RawMessage(`{"location":"westeurope","sku":{"name":"Standard_LRS"}}`)
			r.DependsOn = []string{record.ResourceKey(r.Namespace, "resources.azure.com", "ResourceGroup", "rg")}
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	pol, err := access.ParsePolicy("p.csv", []byte("p, group:g, namespaces, read, team-0*\n"))
	if err != nil {
		b.Fatal(err)
	}
	id := access.Identity{Kind: access.User, Subject: "u", Name: "u", Groups: []string{"g"}}
	h := api.New(db, api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Policy: func() *access.Policy { return pol }})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(access.WithIdentity(context.Background(), id)))
	}))
	b.Cleanup(srv.Close)
	client := srv.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	var bytes int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var n int64
		for pb.Next() {
			resp, err := client.Get(srv.URL + url)
			if err != nil {
				b.Error(err)
				return
			}
			c, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("GET %s: %d", url, resp.StatusCode)
				return
			}
			n = c
		}
		bytes = n
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(bytes), "B/answer")
}

// go test -tags kustomize_disable_go_plugin_support ./api/ -run '^$' -bench 'Scoped10k' -benchtime 3s
func BenchmarkScoped10kPage500(b *testing.B) { benchScoped(b, "/api/v1/resources?limit=500") }
func BenchmarkScoped10kAll(b *testing.B)     { benchScoped(b, "/api/v1/resources") }
func BenchmarkScoped10kGraph(b *testing.B)   { benchScoped(b, "/api/v1/graph") }
func BenchmarkScoped10kSummary(b *testing.B) { benchScoped(b, "/api/v1/summary") }
