package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ErrSound is returned by Rebuild for a file its check finds sound, unless
// forced: rebuilding it would lose its history for nothing.
var ErrSound = errors.New("state file is sound")

// Rebuild moves the state file at path aside, to path + ".damaged-" and the
// time (UTC), never deleting it, so that the next gitaso starts a new state
// there: its first run finds every declared resource that exists in Azure
// and adopts it (a PUT of its manifest, as ASO adopts; nothing is deleted or
// re-created), and the run history, the last applied bodies, the held
// approvals and the exported values are lost. A sound file is refused with
// ErrSound unless force; a file another gitaso holds, with ErrLocked. The
// encryption key file stays: the new state uses it. It returns where the
// file went and what its check found.
func Rebuild(path string, force bool, now time.Time) (aside string, rep *Report, err error) {
	unlock, err := lockShared(path, DefaultLockTimeout)
	if err != nil {
		return "", nil, fmt.Errorf("state: rebuild %s: %w", path, lockHint(err, DefaultLockTimeout))
	}
	defer unlock()
	if rep, err = verifyFile(path); err != nil {
		return "", nil, fmt.Errorf("state: rebuild %s: %w", path, err)
	}
	if rep.OK() && !force {
		return "", rep, fmt.Errorf("state: rebuild %s: %w (%d pages); rebuilding would lose its run history: give --force to do it anyway", path, ErrSound, rep.Pages)
	}
	aside = path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, os.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s.damaged-%s-%d", path, now.UTC().Format("20060102T150405Z"), i)
	}
	if err := os.Rename(path, aside); err != nil {
		return "", rep, fmt.Errorf("state: rebuild %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // the rename survives a crash
		d.Close()
	}
	return aside, rep, nil
}
