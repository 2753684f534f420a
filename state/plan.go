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

// A run whose objects wait for values its resources export applies in
// phases (reconcile.Once), each phase a run with its own plan. SetPlan keeps
// the latest phase's plan; the plans of the earlier phases of the latest
// run are kept beside it in the meta bucket, under phasePlanPrefix and the
// run's ID, so the run's whole plan can be shown. A new first phase drops
// them: at most maxPhases-1 are kept.
var phasePlanPrefix = []byte("phasePlan/")

func phasePlanKey(runID uint64) []byte {
	return append(bytes.Clone(phasePlanPrefix), u64(runID)...)
}

// KeepPhasePlan keeps the stored plan (the plan of the phase that ran
// before, run runID) as that run's plan, before the next phase's SetPlan
// replaces it. Nothing is kept when no plan is stored.
func (w *Writer) KeepPhasePlan(runID uint64) error {
	meta := w.tx.Bucket(bucketMeta)
	b := meta.Get(metaPlan)
	if b == nil {
		return nil
	}
	if err := meta.Put(phasePlanKey(runID), bytes.Clone(b)); err != nil {
		return fmt.Errorf("state: keep the plan of run %d: %w", runID, err)
	}
	return nil
}

// ClearPhasePlans drops the kept plans of earlier phases: a new run begins.
func (w *Writer) ClearPhasePlans() error {
	c := w.tx.Bucket(bucketMeta).Cursor()
	var keys [][]byte
	for k, _ := c.Seek(phasePlanPrefix); k != nil && bytes.HasPrefix(k, phasePlanPrefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := w.tx.Bucket(bucketMeta).Delete(k); err != nil {
			return fmt.Errorf("state: drop the plans of earlier phases: %w", err)
		}
	}
	return nil
}

// PhasePlanStored returns the kept plan of run runID (an earlier phase of
// the latest run) as stored and whether it is gzip compressed, or nil when
// it is not kept.
func (db *DB) PhasePlanStored(runID uint64) (b []byte, gzipped bool, err error) {
	b, err = db.metaBytes(phasePlanKey(runID), "plan of run")
	return b, isGzip(b), err
}
