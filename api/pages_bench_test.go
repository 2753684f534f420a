package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// bench10k serves the API over 10,000 resources of about 670 bytes (a
// storage account's record with its applied body), one in 20 not ready.
func bench10k(b *testing.B) *httptest.Server {
	b.Helper()
	db, err := state.Open(filepath.Join(b.TempDir(), "gitaso.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Update(func(w *state.Writer) error {
		for i := range 10000 {
			st := "True"
			if i%20 == 7 {
				st = "False"
			}
			r := resource(fmt.Sprintf("team-%02d", i%50), "storage.azure.com", "StorageAccount", fmt.Sprintf("acct%05d", i), st, "", "Succeeded")
			r.AppliedBody = json.RawMessage(`{"location":"westeurope","properties":{"minimumTlsVersion":"TLS1_2","allowBlobPublicAccess":false,"encryption":{"keySource":"Microsoft.Storage"},"networkAcls":{"defaultAction":"Deny","bypass":"AzureServices"}},"sku":{"name":"Standard_LRS"},"tags":{"team":"a","cost-center":"4711"}}`)
			r.DependsOn = []string{record.ResourceKey(r.Namespace, "resources.azure.com", "ResourceGroup", "rg")}
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api.New(db, api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	b.Cleanup(srv.Close)
	return srv
}

func benchGet(b *testing.B, url string) {
	srv := bench10k(b)
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

// Requests per second over 10,000 resources (2 cores, client in process):
//
//	go test -tags kustomize_disable_go_plugin_support ./api/ -run '^$' -bench 'API10k' -benchtime 3s
func BenchmarkAPI10kPage500(b *testing.B) { benchGet(b, "/api/v1/resources?limit=500") }
func BenchmarkAPI10kPage500NotReady(b *testing.B) {
	benchGet(b, "/api/v1/resources?limit=500&ready=false")
}
func BenchmarkAPI10kAll(b *testing.B)     { benchGet(b, "/api/v1/resources") }
func BenchmarkAPI10kGraph(b *testing.B)   { benchGet(b, "/api/v1/graph") }
func BenchmarkAPI10kSummary(b *testing.B) { benchGet(b, "/api/v1/summary") }
