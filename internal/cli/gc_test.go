package cli

import (
	"log/slog"
	"os"
	"runtime/debug"
	"testing"
)

// serve's collector target: daemonGCPercent by default, GOGC when set.
func TestSetDaemonGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	log := slog.New(slog.DiscardHandler)

	v, had := os.LookupEnv("GOGC")
	os.Unsetenv("GOGC")
	t.Cleanup(func() {
		if had {
			os.Setenv("GOGC", v)
		}
	})
	setDaemonGC(log)
	if got := debug.SetGCPercent(100); got != daemonGCPercent {
		t.Errorf("without GOGC the target is %d, want %d", got, daemonGCPercent)
	}

	t.Setenv("GOGC", "100")
	setDaemonGC(log)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=100 the target is %d, want GOGC's 100", got)
	}
}
