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
// resources with a body padded by 1,150 bytes (a 38 MB file), or
// GITASO_BENCH_CHECK_N of them padded by GITASO_BENCH_CHECK_PAD bytes;
// GITASO_BENCH_CHECK_COLD=1 drops the file from the page cache before each
// check (Linux), so that it is read from the disk. The 100,000-resource
// daemon benchmark leaves a 331 MB file:
//
//	GITASO_BENCH_CHECK_N=100000 GITASO_BENCH_CHECK_PAD=1500 go test ./state/ -run '^$' -bench BenchmarkCheck -benchtime 5x
func BenchmarkCheck(b *testing.B) {
	n, pad := benchN, 1150
	for env, into := range map[string]*int{"GITASO_BENCH_CHECK_N": &n, "GITASO_BENCH_CHECK_PAD": &pad} {
		if s := os.Getenv(env); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v <= 0 {
				b.Fatalf("%s=%q: want a positive number", env, s)
			}
			*into = v
		}
	}
	cold := os.Getenv("GITASO_BENCH_CHECK_COLD") == "1"
	path := filepath.Join(b.TempDir(), "gitaso.db")
	db, err := Open(path, WithoutKeyFile())
	if err != nil {
		b.Fatal(err)
	}
	body := json.RawMessage(fmt.Sprintf(`{"location":"westeurope","tags":{"pad":%q}}`, strings.Repeat("x", pad)))
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
		if cold {
			b.StopTimer()
			if err := dropCache(path); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		rep, err := Check(path)
		if err != nil || !rep.OK() {
			b.Fatalf("check: %+v, %v", rep, err)
		}
	}
	b.ReportMetric(float64(fi.Size())/1e6, "file-MB")
}
