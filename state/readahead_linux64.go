//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64)

package state

import (
	"os"
	"syscall"
)

// readAhead has the kernel read the whole file into its page cache, in order,
// before the check walks its pages in tree order (readahead(2), 8 MiB at a
// time): from a cold disk a sequential read is several times faster than the
// walk's scattered one, and pages already cached cost nothing (no copy).
// Best effort. (64-bit only: on 32-bit Linux the offset takes two
// arguments; readahead.go reads the file there.)
func readAhead(f *os.File, size int64) {
	const chunk = 8 << 20
	for off := int64(0); off < size; off += chunk {
		if _, _, errno := syscall.Syscall(syscall.SYS_READAHEAD, f.Fd(), uintptr(off), chunk); errno != 0 {
			return
		}
	}
}
