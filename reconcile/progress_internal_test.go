package reconcile

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// TestParentDeletionForgetsItsChildren: the transaction that records a
// parent's deletion forgets the resources ARM deleted with it, before the
// executor reports them (a crash in between must not leave records that the
// next run would send a DELETE of their own).
func TestParentDeletionForgetsItsChildren(t *testing.T) {
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const id = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id"
	parent := record.Resource{Namespace: "ns", Group: "managedidentity.azure.com", Version: "v1api20230131", Kind: "UserAssignedIdentity",
		Name: "id", ARMID: id, Outputs: map[string]string{"id-settings/principalId": "p"}}
	child := record.Resource{Namespace: "ns", Group: "managedidentity.azure.com", Version: "v1api20230131", Kind: "FederatedIdentityCredential",
		Name: "fic", ARMID: id + "/federatedIdentityCredentials/fic"}
	other := record.Resource{Namespace: "ns", Group: "managedidentity.azure.com", Version: "v1api20230131", Kind: "FederatedIdentityCredential",
		Name: "other", ARMID: id + "2/federatedIdentityCredentials/fic"}
	if err := db.Update(func(w *state.Writer) error {
		for _, r := range []record.Resource{parent, child, other} {
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		return w.PutExports("ns", "id-settings", map[string]string{"principalId": "p"})
	}); err != nil {
		t.Fatal(err)
	}
	res := func(r record.Resource) *planner.Resource {
		return &planner.Resource{Namespace: r.Namespace, Group: r.Group, Version: r.Version, Kind: r.Kind, Name: r.Name, ARMID: r.ARMID, Action: planner.Delete}
	}
	pp, pc, po := res(parent), res(child), res(other)
	pc.DeletedWith = pp.Key()
	p := &planner.Plan{Revision: "r1", Resources: []*planner.Resource{pc, po, pp}}
	prior := map[string]record.Resource{parent.Key(): parent, child.Key(): child, other.Key(): other}
	rec := newRecorder(New(nil, db, nil, DefaultConfig(), slog.New(slog.DiscardHandler)), prior, p)
	rec.add(&executor.ResourceResult{Key: pp.Key(), Resource: pp, Outcome: executor.Deleted})
	rec.stop()
	if err := db.Update(rec.write); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		want bool
	}{{parent.Key(), false}, {child.Key(), false}, {other.Key(), true}} {
		if _, ok, err := db.Resource(c.key); err != nil || ok != c.want {
			t.Errorf("%s in state: %v (%v), want %v", c.key, ok, err, c.want)
		}
	}
	if _, ok, err := db.Exports("ns", "id-settings"); err != nil || ok {
		t.Errorf("the deleted identity's exports are still in state (%v)", err)
	}
	// The child's own result, when it comes, finds nothing to forget.
	rec = newRecorder(New(nil, db, nil, DefaultConfig(), slog.New(slog.DiscardHandler)), prior, p)
	rec.add(&executor.ResourceResult{Key: pc.Key(), Resource: pc, Outcome: executor.Deleted})
	rec.stop()
	if err := db.Update(rec.write); err != nil {
		t.Fatal(err)
	}
}
