package render

import (
	"testing"

	"github.com/gitaso/gitaso/manifest"
)

// failedUnit returns the unit id ("Kind/namespace/name") of a snapshot,
// which must have failed (with reason unless ""), and its errors as one
// error (a diag.List; nil when it has none). The revision must not have
// been refused, and none of the unit's objects may be in the snapshot.
func failedUnit(t *testing.T, snap *manifest.Snapshot, err error, id, reason string) (manifest.Unit, error) {
	t.Helper()
	if err != nil {
		t.Fatalf("revision refused, want unit %s failed alone: %v", id, err)
	}
	for _, u := range snap.Units {
		if u.ID() != id {
			continue
		}
		if !u.Failed() {
			t.Fatalf("unit %s rendered (%d objects), want it failed", id, u.Objects)
		}
		if reason != "" && u.Reason != reason {
			t.Errorf("unit %s: reason %s, want %s (%s)", id, u.Reason, reason, u.Message)
		}
		if u.Message == "" {
			t.Errorf("unit %s: no message", id)
		}
		for _, o := range snap.Objects {
			if manifest.UnitOf(o) == id {
				t.Errorf("unit %s failed, yet its object %s is in the snapshot", id, o.ID())
			}
		}
		if len(u.Errors) == 0 {
			return u, nil
		}
		return u, u.Errors
	}
	t.Fatalf("no unit %s in %v", id, unitIDs(snap))
	return manifest.Unit{}, nil
}

// unitIDs lists a snapshot's units with their reasons.
func unitIDs(snap *manifest.Snapshot) []string {
	var out []string
	for _, u := range snap.Units {
		s := u.ID()
		if u.Reason != "" {
			s += " (" + u.Reason + ")"
		}
		out = append(out, s)
	}
	return out
}
