package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// Check checks the state file at path without opening it with bbolt (a
// damaged file cannot panic it) and reports what is damaged: the meta pages,
// the file's length against the pages they record, the freelist, and every
// page of every bucket's tree (type, overflow, keys in order, each page used
// once, none both used and free, none lost). It waits up to
// DefaultLockTimeout for a gitaso that holds the file for writing and then
// fails with ErrLocked; a missing file is an error wrapping fs.ErrNotExist.
// The values themselves (JSON records) are not decoded.
func Check(path string) (*Report, error) {
	rep, err := checkFile(path, DefaultLockTimeout)
	if err != nil {
		return nil, fmt.Errorf("state: check %s: %w", path, lockHint(err, DefaultLockTimeout))
	}
	return rep, nil
}

// lockHint adds to ErrLocked who holds the file.
func lockHint(err error, waited time.Duration) error {
	if errors.Is(err, ErrLocked) {
		return fmt.Errorf("%w (waited %s; is `gitaso serve` running?)", err, waited)
	}
	return err
}

// checkFile checks path under a shared lock.
func checkFile(path string, timeout time.Duration) (*Report, error) {
	unlock, err := lockShared(path, timeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return verifyFile(path)
}

// checkExisting is Open's check: nil for a missing file (a new state), a
// *DamagedError for a damaged one (a zero-length file included), and the
// report otherwise (MetaFallback may say a meta page is damaged).
func checkExisting(path string, timeout time.Duration) (*Report, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	rep, err := checkFile(path, timeout)
	if err != nil {
		return nil, err
	}
	if !rep.OK() {
		return rep, &DamagedError{Path: path, Report: rep}
	}
	return rep, nil
}
