package cli

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// daemonGCPercent is the garbage collector's target for `gitaso serve` when
// GOGC is not set: the heap grows to 1.5× its live data before a
// collection instead of Go's default 2×. A daemon's live heap is its
// resources (about 80 MB at 10,000), so the default let a run's heap reach
// 170 MB; the extra collections cost about 2 CPU-seconds over a 16-minute
// first apply (issue 12: resident set during a run ≤ 200 MB). GOGC and
// GOMEMLIMIT, when set, win.
const daemonGCPercent = 50

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
