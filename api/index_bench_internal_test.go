package api

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gitaso/gitaso/harness/apiload"
	"github.com/gitaso/gitaso/state"
)

// The index after a commit that changed ten of 10,000 resources: a walk of
// the records (a digest each) and ten encoded again.
//
//	go test -tags kustomize_disable_go_plugin_support ./api/ -run '^$' -bench IndexRebuild -benchmem
func BenchmarkIndexRebuild10kChanged10(b *testing.B) {
	path := filepath.Join(b.TempDir(), "gitaso.db")
	if err := apiload.Generate(context.Background(), path, 10000); err != nil {
		b.Fatal(err)
	}
	db, err := state.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	var ix resourceIndex
	if _, err := ix.current(db); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		b.StopTimer()
		if err := apiload.Change(db, i); err != nil {
			b.Fatal(err)
		}
		i++
		b.StartTimer()
		if _, err := ix.current(db); err != nil {
			b.Fatal(err)
		}
	}
}
