// Package hostile holds hostile inputs and guards for tests of gitaso's
// input limits: the 609-byte alias bomb and a heap guard that stops
// a test binary before a regression takes the machine down.
package hostile

import (
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// Bomb609 is the "billion laughs" of issue 7: a 609-byte ConfigMap whose
// aliases expand to 9^9 (387 million) strings.
var Bomb609 = func() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\n  namespace: default\n  annotations:\n    note: billion laughs\ndata:\n")
	b.WriteString(`  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	prev := "a"
	for _, c := range "bcdefghi" {
		fmt.Fprintf(&b, "  %c: &%c [%s]\n", c, c, strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ","))
		prev = string(c)
	}
	b.WriteString("  z: " + strings.Repeat("x", 609-b.Len()-6) + "\n")
	return b.String()
}()

// GuardMemory fails the test binary at once (a panic in a goroutine) when
// the Go heap passes limit, and makes the garbage collector work hard near
// it, until the test ends.
func GuardMemory(t testing.TB, limit uint64) {
	t.Helper()
	old := debug.SetMemoryLimit(int64(limit / 2))
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		debug.SetMemoryLimit(old)
	})
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(s)
			if s[0].Value.Uint64() > limit {
				panic(fmt.Sprintf("memory guard: %s uses more than %d MiB of heap", t.Name(), limit>>20))
			}
		}
	}()
}
