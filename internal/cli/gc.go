package cli

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// daemonGCPercent is the garbage collector's target for `gitaso serve` when
// GOGC is not set: the heap grows to 1.25× its live data before a
// collection instead of Go's default 2×, and the runtime keeps about 10%
// more than that. A daemon's live heap is its resources (about 5 KB each
// during a run: 500 MB at 100,000) and its work is
// waiting on ARM: at 100,000 resources the collector used 0.9% of the CPU
// at GOGC=50 (67 collections, 2.5 CPU-seconds in the first 143 s), so
// trading a few more collections for a heap a sixth smaller is cheap
// (issue 12: resident set during a run ≤ 200 MB at 10,000, ≤ 1 GB at
// 100,000). GOGC and GOMEMLIMIT, when set, win.
const daemonGCPercent = 25

// setDaemonGC applies daemonGCPercent unless GOGC is set, and says what
// the collector runs with.
func setDaemonGC(log *slog.Logger) {
	if v, ok := os.LookupEnv("GOGC"); ok {
		log.Debug("garbage collector target from GOGC", "GOGC", v)
		return
	}
	debug.SetGCPercent(daemonGCPercent)
	log.Debug("garbage collector target", "percent", daemonGCPercent)
}
