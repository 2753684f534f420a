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
// changes (Watch). A new content is taken once two reads in a row see it
// (a file being written in place is not taken half written); a file that
// does not parse leaves the policy in force and is logged.
type PolicyFile struct {
	path    string
	cur     atomic.Pointer[Policy]
	sum     [32]byte // of the policy in force
	pending [32]byte // of a new content seen once
}

// LoadPolicyFile reads and parses the policy file at path.
func LoadPolicyFile(path string) (*PolicyFile, error) {
	f := &PolicyFile{path: path}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy file: %w", err)
	}
	p, err := ParsePolicy(path, b)
	if err != nil {
		return nil, err
	}
	f.cur.Store(p)
	f.sum = sha256.Sum256(b)
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
	if bytes.Equal(sum[:], f.sum[:]) {
		f.pending = f.sum
		return false, nil
	}
	if !bytes.Equal(sum[:], f.pending[:]) {
		f.pending = sum // seen once: taken when the next read sees it too
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
