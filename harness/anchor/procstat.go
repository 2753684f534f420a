package anchor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat (100 on every Linux architecture
// Go supports).
const clockTicks = 100

// ProcUsage is what one process used, read from /proc.
type ProcUsage struct {
	Name       string  `json:"name"`
	PID        int     `json:"pid"`
	CPUSeconds float64 `json:"cpuSeconds"` // user + system
	PeakRSSMiB float64 `json:"peakRssMiB"` // VmHWM
	RSSMiB     float64 `json:"rssMiB"`     // VmRSS when read
}

// readUsage reads a live process's CPU time and memory.
func readUsage(name string, pid int) (ProcUsage, error) {
	u := ProcUsage{Name: name, PID: pid}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return u, fmt.Errorf("anchor: usage of %s (pid %d): %w", name, pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces; the fields after it are plain.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return u, fmt.Errorf("anchor: usage of %s (pid %d): malformed stat", name, pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return u, fmt.Errorf("anchor: usage of %s (pid %d): short stat", name, pid)
	}
	utime, _ := strconv.ParseFloat(f[11], 64) // field 14
	stime, _ := strconv.ParseFloat(f[12], 64) // field 15
	u.CPUSeconds = (utime + stime) / clockTicks
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return u, fmt.Errorf("anchor: usage of %s (pid %d): %w", name, pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmHWM":
			u.PeakRSSMiB = kb / 1024
		case "VmRSS":
			u.RSSMiB = kb / 1024
		}
	}
	return u, nil
}

// children returns the PIDs of this process's direct children whose command name (comm) starts with prefix.
func children(prefix string) []int {
	me := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == me && strings.HasPrefix(s[open+1:close], prefix) {
			out = append(out, pid)
		}
	}
	return out
}
