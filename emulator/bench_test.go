package emulator_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

// benchEnv returns an emulator, an owner token and an existing resource group path.
func benchEnv(b *testing.B) (*emulator.Emulator, string, string) {
	e := newEmulator(b, emulator.WithoutThrottling(), emulator.WithRequestLogSize(1000))
	sp, err := e.AddPrincipal(emulator.PrincipalSpec{Roles: []emulator.RoleGrant{{Role: "Owner"}}})
	if err != nil {
		b.Fatal(err)
	}
	tok, err := e.IssueAccessToken(sp.ObjectID, emulator.ARMAudience, time.Now().Add(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	rg := rgPath(e, "bench")
	if st := rawDo(b, e, tok, http.MethodPut, rg+"?api-version="+rgAPI, `{"location":"westus2"}`); st != 201 {
		b.Fatalf("RG: %d", st)
	}
	return e, tok, rg
}

func rawDo(b testing.TB, e *emulator.Emulator, tok, method, path, body string) int {
	var rd io.Reader
	if body != "" {
		rd = stringsReader(body)
	}
	req, _ := http.NewRequest(method, e.ARMEndpoint()+path, rd)
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.HTTPClient().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// BenchmarkGET measures authenticated GETs of one resource over HTTPS with keep-alive, 8 parallel clients per CPU.
func BenchmarkGET(b *testing.B) {
	e, tok, rg := benchEnv(b)
	id := rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/bench"
	if st := rawDo(b, e, tok, http.MethodPut, id+"?api-version="+miAPI, `{"location":"westus2","tags":{"a":"b"}}`); st != 201 {
		b.Fatalf("seed: %d", st)
	}
	path := id + "?api-version=" + miAPI
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if st := rawDo(b, e, tok, http.MethodGet, path, ""); st != 200 {
				b.Errorf("GET: %d", st)
				return
			}
			n.Add(1)
		}
	})
	b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "req/s")
}

// BenchmarkPUT measures creates of a synchronous type (user-assigned identities), 8 parallel clients per CPU.
func BenchmarkPUT(b *testing.B) {
	e, tok, rg := benchEnv(b)
	var seq atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1)
			path := rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id" + strconv.FormatInt(i, 10) + "?api-version=" + miAPI
			if st := rawDo(b, e, tok, http.MethodPut, path, `{"location":"westus2","tags":{"a":"b"}}`); st != 201 {
				b.Errorf("PUT: %d", st)
				return
			}
		}
	})
	b.ReportMetric(float64(seq.Load())/time.Since(start).Seconds(), "req/s")
}

// BenchmarkStoreMemory100k reports the heap held per 100k stored resources (storage accounts with defaults),
// created through the ARM API.
func BenchmarkStoreMemory100k(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		e, tok, rg := benchEnv(b)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		const n = 100_000
		sem := make(chan struct{}, 16)
		done := make(chan struct{})
		var errs atomic.Int64
		for i := 0; i < n; i++ {
			sem <- struct{}{}
			go func(i int) {
				defer func() { <-sem; done <- struct{}{} }()
				p := fmt.Sprintf("%s/providers/Microsoft.Storage/storageAccounts/sa%06d?api-version=%s", rg, i, storageAPI)
				if st := rawDo(b, e, tok, http.MethodPut, p, `{"location":"westus2","kind":"StorageV2","sku":{"name":"Standard_LRS"},"tags":{"team":"a"}}`); st != 202 {
					errs.Add(1)
				}
			}(i)
		}
		for i := 0; i < n; i++ {
			<-done
		}
		b.StopTimer()
		if errs.Load() > 0 {
			b.Fatalf("%d PUTs failed", errs.Load())
		}
		e.ResetStats()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if s := e.Stats(); s.Resources < n {
			b.Fatalf("stored %d resources", s.Resources)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB/100k")
		b.StartTimer()
	}
}
