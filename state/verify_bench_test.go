package state

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/record"
)

// BenchmarkCheck measures the check Open runs on an existing file: 10,000
// resources of about 3.3 KB each (33 MB, the size per resource of the
// 100,000-resource daemon benchmark's 331 MB file), or
// GITASO_BENCH_CHECK_N of them:
//
//	GITASO_BENCH_CHECK_N=100000 go test ./state/ -run '^$' -bench BenchmarkCheck -benchtime 5x
func BenchmarkCheck(b *testing.B) {
	n := benchN
	if s := os.Getenv("GITASO_BENCH_CHECK_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			b.Fatalf("GITASO_BENCH_CHECK_N=%q: want a positive count", s)
		}
	}
	path := filepath.Join(b.TempDir(), "gitaso.db")
	db, err := Open(path, WithoutKeyFile())
	if err != nil {
		b.Fatal(err)
	}
	body := json.RawMessage(fmt.Sprintf(`{"location":"westeurope","tags":{"pad":%q}}`, strings.Repeat("x", 1150)))
	for start := 0; start < n; start += 10_000 {
		rs := make([]record.Resource, 0, 10_000)
		for i := start; i < min(n, start+10_000); i++ {
			r := sampleResource(fmt.Sprintf("team-%04d", i%5000), "StorageAccount", fmt.Sprintf("sa%06d", i), record.StatusTrue)
			r.AppliedBody = body
			rs = append(rs, r)
		}
		putResources(b, db, rs)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		rep, err := Check(path)
		if err != nil || !rep.OK() {
			b.Fatalf("check: %+v, %v", rep, err)
		}
	}
	b.ReportMetric(float64(fi.Size())/1e6, "file-MB")
}
