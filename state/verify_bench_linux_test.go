package state

import (
	"os"
	"syscall"
)

// dropCache evicts path's pages from the kernel's page cache
// (posix_fadvise POSIX_FADV_DONTNEED), so that the next read comes from the
// disk. Only this file's pages: the rest of the machine keeps its cache.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	const fadvDontNeed = 4
	if _, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0); errno != 0 {
		return errno
	}
	return nil
}
