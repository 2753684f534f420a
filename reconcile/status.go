package reconcile

import (
	"strings"
	"time"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// A resource's status (its Ready condition, generation and exports) changes
// at three moments: when a run starts working on it (markInProgress), when
// the executor reports its result (recordOne), and when an operation a
// previous process left in flight ends (recordResumed). The rules they share
// are here, written once.

// generation returns the generation of record s once its desired body has
// the hash desired ("" when unknown) and its ARM ID is armID: it counts
// changes of the manifest, as Kubernetes' metadata.generation counts spec
// changes, and starts at 1.
func generation(s record.Resource, desired, armID string) int64 {
	gen := s.Generation
	if gen == 0 || (desired != "" && desired != s.DesiredHash) || (armID != "" && !strings.EqualFold(s.ARMID, armID)) {
		gen++
	}
	return gen
}

// setReady makes cond, observed at generation gen, the Ready condition of
// s, merged with base (the condition before the run) under ASO's
// overwrite rules (record.MergeCondition).
func setReady(s *record.Resource, base, cond record.Condition, gen int64, now time.Time) {
	cond.ObservedGeneration = gen
	s.Ready, _ = record.MergeCondition(base, cond, now)
	s.UpdatedAt = now
}

// dropExports deletes the config map and secret values s exported into
// namespace.
func dropExports(w *state.Writer, namespace string, s record.Resource) error {
	for name := range outputNames(s.Outputs) {
		if err := w.DeleteExports(namespace, name); err != nil {
			return err
		}
	}
	for name := range outputNames(toSet(s.SecretOutputs)) {
		if err := w.DeleteSecretExports(namespace, name); err != nil {
			return err
		}
	}
	return nil
}

// forget deletes the record under key and everything it exported: the
// resource is gone from Azure, or no longer gitaso's.
func forget(w *state.Writer, key string, s record.Resource) error {
	if err := dropExports(w, s.Namespace, s); err != nil {
		return err
	}
	return w.DeleteResource(key)
}
