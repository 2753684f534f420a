package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrSound is returned by Rebuild for a file its check finds sound, unless
// forced: rebuilding it would lose its history for nothing.
var ErrSound = errors.New("state file is sound")

// Rebuilt is what Rebuild did.
type Rebuilt struct {
	// Aside is where the old file went (it is never deleted).
	Aside string
	// Report is what the check of the old file found.
	Report *Report
	// Salvaged says that every record was copied into the new file (only
	// the freelist was damaged): nothing is lost.
	Salvaged bool
	// SalvageErr is why a salvage that was tried failed (the file was then
	// moved aside as for any damage).
	SalvageErr error
}

// Rebuild replaces the state file at path, keeping the old one beside it as
// path + ".damaged-" and the time (UTC), never deleting it.
//
// When only the freelist is damaged (Report.DataIntact) every record is
// copied into the new file and nothing is lost. Otherwise the file is only
// moved aside and a new state is written there, carrying the rebuilt marker
// (RebuiltMark): its first run finds every declared resource that exists in
// Azure and records the ones that match their manifest as applied without a
// write (the others are adopted with a PUT of their manifest, as ASO adopts;
// nothing is deleted or re-created), and the run history, the last applied bodies, the held approvals and the
// exported values are lost. The encryption key file stays: the new state
// uses it.
//
// A sound file is refused with ErrSound unless force; a file another gitaso
// holds, with ErrLocked.
func Rebuild(path string, force bool, now time.Time) (*Rebuilt, error) {
	unlock, err := lockShared(path, DefaultLockTimeout)
	if err != nil {
		return nil, fmt.Errorf("state: rebuild %s: %w", path, lockHint(err, DefaultLockTimeout))
	}
	defer unlock()
	rep, err := verifyFile(path)
	if err != nil {
		return nil, fmt.Errorf("state: rebuild %s: %w", path, err)
	}
	if rep.OK() && !force {
		return nil, fmt.Errorf("state: rebuild %s: %w (%d pages); rebuilding would lose its run history: give --force to do it anyway", path, ErrSound, rep.Pages)
	}
	out := &Rebuilt{Report: rep, Aside: asidePath(path, now)}
	var salvaged string
	if rep.DataIntact {
		if salvaged, err = salvage(path); err != nil {
			out.SalvageErr = err
		}
	}
	if err := os.Rename(path, out.Aside); err != nil {
		if salvaged != "" {
			os.Remove(salvaged)
		}
		return nil, fmt.Errorf("state: rebuild %s: %w", path, err)
	}
	if salvaged != "" {
		if err := os.Rename(salvaged, path); err != nil {
			os.Remove(salvaged)
			out.SalvageErr = err
		} else {
			out.Salvaged = true
		}
	}
	if !out.Salvaged {
		// The new state starts marked: its first runs adopt what Azure
		// holds as declared without a write.
		if err := createRebuilt(path, RebuiltMark{At: now.UTC(), Aside: out.Aside}); err != nil {
			syncDir(path)
			return nil, fmt.Errorf("state: rebuild %s (the old file is at %s): %w", path, out.Aside, err)
		}
	}
	syncDir(path)
	return out, nil
}

// asidePath is where Rebuild moves the old file: a name not taken yet.
func asidePath(path string, now time.Time) string {
	base := path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	aside := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, os.ErrNotExist) {
			return aside
		}
		aside = fmt.Sprintf("%s-%d", base, i)
	}
}

// salvage copies every record of the file at path into a new file beside it,
// checks the copy and returns its path. bbolt opens the old file read-only,
// which does not read its freelist, and copies bucket by bucket.
func salvage(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".rebuild")
	_ = os.Remove(tmp)
	src, err := openBolt(path, &bolt.Options{Timeout: DefaultLockTimeout, ReadOnly: true})
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := bolt.Open(tmp, fi.Mode().Perm(), &bolt.Options{Timeout: DefaultLockTimeout, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return "", err
	}
	err = compactGuarded(path, dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		var rep *Report
		if rep, err = verifyFile(tmp); err == nil && !rep.OK() {
			err = fmt.Errorf("the copy fails its check: %v", rep.Problems)
		}
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// syncDir makes the renames in path's directory survive a crash.
func syncDir(path string) {
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
