package rss

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// mapping is one line of /proc/self/smaps with the fields DropExecutablePages
// looks at.
type mapping struct {
	start, end uintptr
	perms      string
	path       string
	rssKB      int64
	anonKB     int64
}

// DropExecutablePages madvises MADV_DONTNEED the read-only mappings of the
// running executable that hold no private page, and returns how many kB of
// them were resident before.
func DropExecutablePages() (int64, error) {
	ms, err := executableMappings()
	if err != nil {
		return 0, err
	}
	var dropped int64
	for _, m := range ms {
		if strings.Contains(m.perms, "w") || m.anonKB != 0 || m.rssKB == 0 {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); errno != 0 {
			return dropped, fmt.Errorf("rss: madvise %x-%x: %w", m.start, m.end, errno)
		}
		dropped += m.rssKB
	}
	return dropped, nil
}

// ExecutableResidentKB is how much of the running executable is resident.
func ExecutableResidentKB() (int64, error) {
	ms, err := executableMappings()
	if err != nil {
		return 0, err
	}
	var kb int64
	for _, m := range ms {
		kb += m.rssKB
	}
	return kb, nil
}

// executableMappings are the mappings of the running executable's file.
func executableMappings() ([]mapping, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("rss: executable: %w", err)
	}
	ms, err := readSmaps()
	if err != nil {
		return nil, err
	}
	out := ms[:0]
	for _, m := range ms {
		if m.path == exe {
			out = append(out, m)
		}
	}
	return out, nil
}

func readSmaps() ([]mapping, error) {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("rss: %w", err)
	}
	var out []mapping
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		line := s.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && len(f) >= 5 && !strings.HasSuffix(f[0], ":") {
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			m := mapping{start: uintptr(start), end: uintptr(end), perms: f[1]}
			if len(f) >= 6 {
				m.path = strings.Join(f[5:], " ")
			}
			out = append(out, m)
			continue
		}
		if len(out) == 0 || len(f) < 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			out[len(out)-1].rssKB = v
		case "Anonymous:":
			out[len(out)-1].anonKB = v
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("rss: reading smaps: %w", err)
	}
	return out, nil
}
