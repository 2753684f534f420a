package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Compact rewrites the state file at path without its free pages (bbolt
// never gives them back to the file system) and returns its size before
// and after. It needs the file to itself: a running `gitaso serve` holds
// its lock, and Compact fails with ErrLocked after DefaultLockTimeout. The
// copy is written beside the file, synced, and renamed over it, so a crash
// leaves either the old file or the new one, never half of one. The
// encryption key file is untouched (values are copied sealed). A damaged
// file is checked first and refused with a *DamagedError, the file as it was.
func Compact(path string) (before, after int64, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("state: compact: %w", err)
	}
	before = fi.Size()
	if _, err := checkExisting(path, DefaultLockTimeout); err != nil {
		if errors.Is(err, ErrDamaged) {
			return before, 0, err
		}
		return before, 0, fmt.Errorf("state: compact %s: %w", path, lockHint(err, DefaultLockTimeout))
	}
	src, err := openBolt(path, &bolt.Options{Timeout: DefaultLockTimeout, ReadOnly: true})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return before, 0, fmt.Errorf("state: compact %s: %w (is `gitaso serve` running?)", path, ErrLocked)
		}
		return before, 0, fmt.Errorf("state: compact %s: %w", path, err)
	}
	defer src.Close()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".compact")
	_ = os.Remove(tmp)
	dst, err := bolt.Open(tmp, fi.Mode().Perm(), &bolt.Options{Timeout: DefaultLockTimeout, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return before, 0, fmt.Errorf("state: compact %s: %w", path, err)
	}
	if err := compactGuarded(path, dst, src); err != nil {
		dst.Close()
		os.Remove(tmp)
		return before, 0, fmt.Errorf("state: compact %s: %w", path, err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		os.Remove(tmp)
		return before, 0, fmt.Errorf("state: compact %s: %w", path, err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return before, 0, fmt.Errorf("state: compact %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return before, 0, fmt.Errorf("state: compact %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // the rename itself survives a crash
		d.Close()
	}
	if fi, err := os.Stat(path); err == nil {
		after = fi.Size()
	}
	return before, after, nil
}

// compactGuarded is bolt.Compact with a panic on a page the check let
// through turned into a *DamagedError.
func compactGuarded(path string, dst, src *bolt.DB) (err error) {
	defer func(old bool) {
		debug.SetPanicOnFault(old)
		if v := recover(); v != nil {
			where, _ := panicSite()
			err = &DamagedError{Path: path, Panic: v, Where: where}
		}
	}(debug.SetPanicOnFault(true))
	return bolt.Compact(dst, src, 64<<20)
}
