package e2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
)

const (
	authzAPIVersion = "2022-04-01"
	lockAPIVersion  = "2016-09-01"
)

// Deleting a resource group takes the role assignments at its scope and
// under its resources with it, and its locks refuse the deletion: ARM's
// /resources list shows neither. An unmanaged role assignment or lock at
// the group or on a resource in it holds the deletion, named; role
// assignments gitaso manages do not; once approved (the locks removed, as
// ARM requires) the group goes.
func TestUnmanagedExtensionResourcesHoldGroupDeletion(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	e := newEnv(t)
	const keep = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: keep-rg
  namespace: platform
spec:
  location: westeurope
`
	e.commit("create", map[string]string{"data.yaml": movableIn("platform", "data-rg"), "keep.yaml": keep})
	e.runSucceeds(t, "create")
	ctx := context.Background()
	rg := e.rgID("data-rg")
	identity := rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/app-identity"
	managed := rg + "/providers/Microsoft.Authorization/roleAssignments/6f1a3c52-2b1e-4c3a-9a57-0d7e4f9b1c11"
	if !e.exists(managed, authzAPIVersion) {
		t.Fatal("the managed role assignment was not created")
	}
	// Someone grants a role at the group and one on the identity, outside Git.
	sp, err := e.emu.AddServicePrincipal("auditor")
	if err != nil {
		t.Fatal(err)
	}
	reader := `{"properties":{"roleDefinitionId":"/subscriptions/` + e.sub + `/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7","principalId":"` + sp.ObjectID + `","principalType":"ServicePrincipal"}}`
	raGroup := rg + "/providers/Microsoft.Authorization/roleAssignments/0b6c2d6e-1f3a-4c55-8e0e-7d2b9f1a4c01"
	raIdentity := identity + "/providers/Microsoft.Authorization/roleAssignments/0b6c2d6e-1f3a-4c55-8e0e-7d2b9f1a4c02"
	e.mustPut(raGroup, authzAPIVersion, reader)
	e.mustPut(raIdentity, authzAPIVersion, reader)

	e.emu.ResetStats()
	rev := e.commit("drop data-rg", map[string]string{"data.yaml": ""})
	rep := e.run(true)
	checkHeld(t, rep, raGroup, raIdentity)
	if strings.Contains(rep.Run.Held.Message, "management locks") {
		t.Errorf("hold message speaks of locks without any: %s", rep.Run.Held.Message)
	}

	// Locks at the group and on the identity: named too.
	lockGroup := rg + "/providers/Microsoft.Authorization/locks/keep-me"
	lockIdentity := identity + "/providers/Microsoft.Authorization/locks/keep-me-too"
	for _, l := range []string{lockGroup, lockIdentity} {
		e.mustPut(l, lockAPIVersion, `{"properties":{"level":"CanNotDelete"}}`)
	}
	rep = e.run(true)
	checkHeld(t, rep, raGroup, raIdentity, lockGroup, lockIdentity)
	if !strings.Contains(rep.Run.Held.Message, "2 of them are management locks") {
		t.Errorf("hold message does not speak of the locks: %s", rep.Run.Held.Message)
	}
	for _, w := range e.writes() {
		if strings.HasPrefix(w, "DELETE") {
			t.Errorf("held run sent %s", w)
		}
	}
	for _, id := range []string{raGroup, raIdentity, managed, identity} {
		if !e.exists(id, authzAPIVersion) {
			t.Errorf("%s is gone while the deletion is held", id)
		}
	}

	// The locks removed, as ARM requires, and the deletion approved: the
	// group goes, with what it held.
	for _, l := range []string{lockGroup, lockIdentity} {
		if err := e.cli.Delete(ctx, l, lockAPIVersion); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.rec.ApproveDeletions(ctx, rev); err != nil {
		t.Fatal(err)
	}
	e.runSucceeds(t, "approved")
	if e.exists(rg, rgAPIVersion) {
		t.Error("the approved deletion of data-rg did not happen")
	}
	if e.exists(raGroup, authzAPIVersion) {
		t.Error("the group's role assignment outlived it")
	}
	if !e.exists(e.rgID("keep-rg"), rgAPIVersion) {
		t.Error("keep-rg was deleted")
	}
}

// checkHeld fails unless the run was held for unmanaged children naming
// exactly want.
func checkHeld(t *testing.T, rep *reconcile.Report, want ...string) {
	t.Helper()
	if rep.Run.Outcome != record.OutcomeHeld || rep.Run.Held == nil || rep.Run.Held.Reason != record.HoldUnmanagedChildren {
		t.Fatalf("outcome %s %+v, want held for unmanaged children", rep.Run.Outcome, rep.Run.Held)
	}
	got := make([]string, 0, len(rep.Run.Held.Unmanaged))
	for _, id := range rep.Run.Held.Unmanaged {
		got = append(got, strings.ToLower(id))
	}
	lower := make([]string, 0, len(want))
	for _, id := range want {
		lower = append(lower, strings.ToLower(id))
	}
	slices.Sort(got)
	slices.Sort(lower)
	if !slices.Equal(got, lower) {
		t.Errorf("hold names %v, want %v", got, lower)
	}
}
