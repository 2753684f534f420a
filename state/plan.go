package state

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
)

// Plan returns the latest stored plan JSON, or nil, nil when none was
// stored. A plan stored compressed with gzip (SetPlan takes either; the
// reconciler compresses: a 10,000-resource plan is 16 MB of JSON and about
// 1 MB compressed, written on every run) is returned decompressed.
func (db *DB) Plan() ([]byte, error) {
	b, err := db.metaBytes(metaPlan, "plan")
	if err != nil || !isGzip(b) {
		return b, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("state: read plan: %w", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("state: read plan: %w", err)
	}
	return out, nil
}

// isGzip reports whether b starts with gzip's magic number (JSON never
// starts with byte 0x1f).
func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// PlanStored returns the latest plan as stored, and whether it is gzip
// compressed: the API sends compressed bytes as they are to clients that
// accept gzip, and decompresses them as it writes for the others.
func (db *DB) PlanStored() (b []byte, gzipped bool, err error) {
	b, err = db.metaBytes(metaPlan, "plan")
	return b, isGzip(b), err
}
