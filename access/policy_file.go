package access

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// PolicyFile is a policy read from a file and read again when the file
// changes (Watch). A file that no longer parses leaves the policy it had in
// force and is logged; one that parses replaces it at once.
type PolicyFile struct {
	path string
	cur  atomic.Pointer[Policy]
	sum  [32]byte
}

// LoadPolicyFile reads and parses the policy file at path.
func LoadPolicyFile(path string) (*PolicyFile, error) {
	f := &PolicyFile{path: path}
	if _, err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Policy returns the policy in force.
func (f *PolicyFile) Policy() *Policy { return f.cur.Load() }

// reload reads the file again; it reports whether the policy changed.
func (f *PolicyFile) reload() (bool, error) {
	b, err := os.ReadFile(f.path)
	if err != nil {
		return false, fmt.Errorf("read policy file: %w", err)
	}
	sum := sha256.Sum256(b)
	if f.cur.Load() != nil && bytes.Equal(sum[:], f.sum[:]) {
		return false, nil
	}
	p, err := ParsePolicy(f.path, b)
	if err != nil {
		return false, err
	}
	f.cur.Store(p)
	f.sum = sum
	return true, nil
}

// Watch reads the file again every interval until ctx ends, logging each
// change taken and each file that does not parse (the policy in force
// stays).
func (f *PolicyFile) Watch(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := f.reload()
		switch {
		case err != nil:
			if err.Error() != lastErr {
				log.ErrorContext(ctx, "policy file not taken: the policy in force stays", "file", f.path, "error", err)
			}
			lastErr = err.Error()
		case changed:
			lastErr = ""
			log.InfoContext(ctx, "policy file read again", "file", f.path, "default", f.Policy().Default())
		}
	}
}
