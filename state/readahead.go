//go:build !linux || !(amd64 || arm64 || riscv64 || ppc64le || s390x || loong64)

package state

import "os"

// readAhead reads the whole file once, in order and 1 MiB at a time, before
// the check walks its pages in tree order: from a cold disk a sequential read
// is several times faster than the walk's scattered one. Best effort.
func readAhead(f *os.File, size int64) {
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := f.ReadAt(buf, off); err != nil {
			return
		}
	}
}
