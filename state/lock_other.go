//go:build !unix

package state

import (
	"os"
	"time"
)

// lockShared is a no-op where flock does not exist: bbolt's own lock,
// taken right after the check, still keeps two gitaso processes apart.
func lockShared(path string, _ time.Duration) (unlock func(), err error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return func() {}, nil
}
