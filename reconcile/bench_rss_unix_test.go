//go:build unix

package reconcile_test

import (
	"os"
	"runtime"
	"syscall"
	"testing"
)

// maxRSSMB is the peak resident memory of an ended process, in MB.
func maxRSSMB(tb testing.TB, ps *os.ProcessState) float64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		tb.Fatalf("no rusage for process %d", ps.Pid())
	}
	if runtime.GOOS == "darwin" {
		return float64(ru.Maxrss) / (1 << 20) // bytes
	}
	return float64(ru.Maxrss) / 1024 // kB
}

// cpuSeconds is the CPU time (user and system) this process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
