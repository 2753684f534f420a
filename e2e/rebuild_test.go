package e2e_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// TestRebuiltStateAdoptsWithoutWrite: after `gitaso state rebuild` of a
// damaged state file, the first run records every resource Azure holds as
// declared without a write (issue 26), Ready with its exports; a resource
// changed in Azure meanwhile is adopted with a PUT of its manifest; the
// rebuilt marker ends with the run, and the next plan is no changes.
func TestRebuiltStateAdoptsWithoutWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnv(t)
	e.commit("platform", map[string]string{"rg.yaml": platformRG, "identity.yaml": identity})
	if rep := e.run(true); rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("first apply: %s: %s", rep.Run.Outcome, rep.Run.Error)
	}
	before, err := e.db.Resources(record.Filter{})
	if err != nil || len(before) != 5 {
		t.Fatalf("state after the first apply: %d resources, %v", len(before), err)
	}
	uaiID := e.rgID("platform-rg") + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-a-identity"
	var uai struct {
		Properties struct{ ClientID, PrincipalID string }
	}
	if err := json.Unmarshal(mustGet(t, e, uaiID, uaiAPI), &uai); err != nil || uai.Properties.ClientID == "" {
		t.Fatalf("identity in Azure: %+v, %v", uai, err)
	}

	// The state file is damaged (truncated), and platform-rg's tag is
	// changed in Azure meanwhile.
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(e.dbPath, 100<<10/8); err != nil {
		t.Fatal(err)
	}
	if _, err := state.Open(e.dbPath); err == nil {
		t.Fatal("a truncated state file opened")
	}
	res, err := state.Rebuild(e.dbPath, false, time.Now())
	if err != nil || res.Salvaged {
		t.Fatalf("rebuild: %+v, %v", res, err)
	}
	e.mustPut(e.rgID("platform-rg"), rgAPI, `{"location":"westeurope","tags":{"owner":"ops"}}`)
	e.reopen()
	if m, err := e.db.Rebuilt(); err != nil || m == nil || m.Aside != res.Aside {
		t.Fatalf("rebuilt marker of the new state: %+v, %v; want one naming %s", m, err, res.Aside)
	}

	// The plan says which resource is adopted without a write and which
	// with a PUT.
	dry, err := e.rec.PlanOnly(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	checkRebuiltPlan(t, dry.Plan)

	e.emu.ResetStats()
	rep, err := e.rec.Once(t.Context(), reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("run over the rebuilt state: %s: %s", rep.Run.Outcome, rep.Run.Error)
	}
	checkRebuiltPlan(t, rep.Plan)
	want := []string{"PUT " + strings.ToLower(e.rgID("platform-rg"))}
	if w := e.armRequests("PUT", "PATCH", "DELETE", "POST"); !slices.Equal(w, want) {
		t.Errorf("writes to Azure %v, want only %v (the resource changed in Azure)", w, want)
	}
	if !strings.Contains(rep.Run.Rebuilt, "4 resource(s) adopted without a write, 1 adopted with a PUT") ||
		!strings.Contains(rep.Run.Rebuilt, "adoption without a write ends") {
		t.Errorf("run record says %q", rep.Run.Rebuilt)
	}
	runs, err := e.db.Runs(10)
	if err != nil || len(runs) == 0 || runs[0].Rebuilt != rep.Run.Rebuilt {
		t.Errorf("stored run: %+v, %v", runs, err)
	}
	if m, err := e.db.Rebuilt(); err != nil || m != nil {
		t.Errorf("rebuilt marker after a run recorded every resource: %+v, %v", m, err)
	}

	// Every resource is Ready in state, with the hash gitaso would PUT and
	// its exports (computed from Azure).
	after, err := e.db.Resources(record.Filter{})
	if err != nil || len(after) != len(before) {
		t.Fatalf("state after the rebuilt run: %d resources, %v", len(after), err)
	}
	for _, b := range before {
		a := e.resource(b.Namespace, b.Group, b.Kind, b.Name)
		if a.Ready.Status != record.StatusTrue || a.AppliedHash != b.AppliedHash || !strings.EqualFold(a.ARMID, b.ARMID) {
			t.Errorf("%s: ready %+v, hash %s (was %s), ARM ID %s", b.Key(), a.Ready, a.AppliedHash, b.AppliedHash, a.ARMID)
		}
	}
	cm, ok, err := e.db.Exports("platform", "team-a-identity-settings")
	if err != nil || !ok || cm["clientId"] != uai.Properties.ClientID || cm["principalId"] != uai.Properties.PrincipalID {
		t.Errorf("ConfigMap team-a-identity-settings: %v (found %v, %v), want clientId %s", cm, ok, err, uai.Properties.ClientID)
	}
	if body := mustGet(t, e, e.rgID("platform-rg"), rgAPI); !strings.Contains(string(body), `"owner":"platform"`) {
		t.Errorf("the changed group was not adopted with its manifest: %s", body)
	}

	// The next plan is no changes, and nothing is written.
	e.emu.ResetStats()
	rep, err = e.rec.Once(t.Context(), reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plan.HasChanges() {
		t.Errorf("the run after the rebuilt one planned %v", rep.Plan.Summary())
	}
	if w := e.armRequests("PUT", "PATCH", "DELETE", "POST"); len(w) != 0 {
		t.Errorf("the run after the rebuilt one wrote %v", w)
	}
	if rep.Run.Rebuilt != "" {
		t.Errorf("a run after the marker ended says %q", rep.Run.Rebuilt)
	}
}

// checkRebuiltPlan checks the plan of the first run over the rebuilt state:
// platform-rg (changed in Azure) adopted with a PUT and its change listed,
// the four others adopted without a write.
func checkRebuiltPlan(t *testing.T, p *planner.Plan) {
	t.Helper()
	if s := p.Summary(); s[planner.Adopt] != 5 || len(s) != 1 {
		t.Errorf("plan %v, want 5 adoptions", s)
	}
	for _, r := range p.Resources {
		if r.Name == "platform-rg" {
			if r.NoWrite || r.Request == nil || len(r.Changes) != 1 || r.Changes[0].Path != "/tags/owner" ||
				!strings.Contains(r.Reason, "state rebuilt, but Azure differs from the manifest in 1 field") {
				t.Errorf("platform-rg planned noWrite %v, %+v (%s), want a PUT changing /tags/owner", r.NoWrite, r.Changes, r.Reason)
			}
			continue
		}
		if !r.NoWrite || r.Request != nil || len(r.Changes) != 0 || r.Reason != planner.ReasonAdoptNoWrite("state rebuilt") {
			t.Errorf("%s planned noWrite %v, request %v, changes %+v (%s), want an adoption without a write", r.ID(), r.NoWrite, r.Request, r.Changes, r.Reason)
		}
	}
	var b strings.Builder
	if err := planner.RenderText(&b, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "without a write (state rebuilt)"); n != 4 {
		t.Errorf("the plan's text names %d adoptions without a write, want 4:\n%s", n, b.String())
	}
}

// TestImportAdoptsWithoutWrite: `gitaso state import` marks a state so that
// an estate that exists in Azure as declared is taken over without a write;
// the mark ends with the run.
func TestImportAdoptsWithoutWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnv(t)
	rgID := e.rgID("legacy-rg")
	e.mustPut(rgID, rgAPI, `{"location":"westeurope","tags":{"owner":"platform","cost":"ops"}}`)
	uaiID := rgID + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/legacy-identity"
	principal := principalIDOf(t, e.mustPut(uaiID, uaiAPI, `{"location":"westeurope"}`))
	e.commit("import", map[string]string{"legacy.yaml": `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: legacy-rg
  namespace: platform
spec:
  location: westeurope
  tags:
    owner: platform
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: legacy-identity
  namespace: platform
spec:
  location: westeurope
  owner:
    name: legacy-rg
  operatorSpec:
    configMaps:
      principalId: {name: legacy-identity-settings, key: principalId}
`})
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	if m, err := state.MarkImport(e.dbPath, time.Now()); err != nil || !m.Import {
		t.Fatalf("mark import: %+v, %v", m, err)
	}
	e.reopen()
	e.emu.ResetStats()
	rep, err := e.rec.Once(t.Context(), reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil || rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("run: %v, %s: %s", err, rep.Run.Outcome, rep.Run.Error)
	}
	for _, r := range rep.Plan.Resources {
		if r.Action != planner.Adopt || !r.NoWrite || r.Reason != planner.ReasonAdoptNoWrite("import") {
			t.Errorf("%s planned %s noWrite %v (%s), want an adoption without a write (import)", r.ID(), r.Action, r.NoWrite, r.Reason)
		}
	}
	if w := e.armRequests("PUT", "PATCH", "DELETE", "POST"); len(w) != 0 {
		t.Errorf("an import of what Azure holds as declared wrote %v", w)
	}
	if !strings.HasPrefix(rep.Run.Rebuilt, "import ") || !strings.Contains(rep.Run.Rebuilt, "2 resource(s) adopted without a write, 0 adopted with a PUT") {
		t.Errorf("run record says %q", rep.Run.Rebuilt)
	}
	if cm, ok, err := e.db.Exports("platform", "legacy-identity-settings"); err != nil || !ok || cm["principalId"] != principal {
		t.Errorf("ConfigMap legacy-identity-settings: %v (found %v, %v), want principalId %s", cm, ok, err, principal)
	}
	if m, err := e.db.Rebuilt(); err != nil || m != nil {
		t.Errorf("import marker after the run: %+v, %v", m, err)
	}
	// The tag the manifest does not set stays Azure's.
	if body := mustGet(t, e, rgID, rgAPI); !strings.Contains(string(body), `"cost":"ops"`) {
		t.Errorf("the group lost a tag the manifest does not set: %s", body)
	}
	e.emu.ResetStats()
	rep, err = e.rec.Once(t.Context(), reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil || rep.Plan.HasChanges() {
		t.Errorf("the run after the import: %v, planned %v", err, rep.Plan.Summary())
	}
	if w := e.armRequests("PUT", "PATCH", "DELETE", "POST"); len(w) != 0 {
		t.Errorf("the run after the import wrote %v", w)
	}
}
