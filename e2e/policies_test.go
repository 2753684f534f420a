package e2e_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
)

const (
	rgGroup  = "resources.azure.com"
	uaiGroup = "managedidentity.azure.com"
	raGroup  = "authorization.azure.com"
	rgAPI    = "2020-06-01"
	uaiAPI   = "2023-01-31"
)

func principalIDOf(t *testing.T, body []byte) string {
	t.Helper()
	var v struct {
		Properties struct {
			PrincipalID string `json:"principalId"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Properties.PrincipalID == "" {
		t.Fatalf("no principalId in %s (%v)", body, err)
	}
	return v.Properties.PrincipalID
}

// A resource that exists in Azure but not in gitaso's state is adopted: the
// plan shows adopt with the fields the manifest changes, the run PUTs it
// (never a DELETE, never a new resource) and it is then in state and Ready.
func TestAdoption(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnv(t)
	rgID := e.rgID("legacy-rg")
	e.mustPut(rgID, rgAPI, `{"location":"westeurope","tags":{"owner":"ops"}}`)
	uaiID := rgID + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/legacy-identity"
	before := principalIDOf(t, e.mustPut(uaiID, uaiAPI, `{"location":"westeurope"}`))

	e.commit("adopt", map[string]string{"legacy.yaml": `
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
	// A plan (dry run) with a refresh shows the adoption before anything is
	// sent.
	e.emu.ResetStats()
	dry, err := e.rec.PlanOnly(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	rg := planned(t, dry.Plan, "platform", rgGroup, "ResourceGroup", "legacy-rg")
	if rg.Action != planner.Adopt || len(rg.Changes) != 1 || rg.Changes[0].Path != "/tags/owner" || rg.Changes[0].Before != "ops" {
		t.Errorf("resource group planned %s %+v, want adopt changing /tags/owner from ops", rg.Action, rg.Changes)
	}
	if uai := planned(t, dry.Plan, "platform", uaiGroup, "UserAssignedIdentity", "legacy-identity"); uai.Action != planner.Adopt || len(uai.Changes) != 0 {
		t.Errorf("identity planned %s %+v, want adopt without changes", uai.Action, uai.Changes)
	}
	if w := e.writes(); len(w) != 0 {
		t.Errorf("a dry run wrote %v", w)
	}

	e.emu.ResetStats()
	// All: the dry run above counts as this sync period's read of these
	// resources (reconcile's lastRead), so a plain refresh would not read
	// them again and would plan create.
	rep, err := e.rec.Once(t.Context(), reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("outcome %s: %s", rep.Run.Outcome, rep.Run.Error)
	}
	if got := rep.Plan.Summary()[planner.Adopt]; got != 2 {
		t.Errorf("%d adoptions planned, want 2 (%v)", got, rep.Plan.Summary())
	}
	want := []string{"PUT " + strings.ToLower(rgID), "PUT " + strings.ToLower(uaiID)}
	if w := e.writes(); !slices.Equal(w, want) {
		t.Errorf("writes %v, want %v (PUTs only, never a DELETE)", w, want)
	}
	// The identity is the same one: a re-created identity gets a new
	// principal.
	if after := principalIDOf(t, mustGet(t, e, uaiID, uaiAPI)); after != before {
		t.Errorf("identity re-created: principalId %s, was %s", after, before)
	}
	if body := mustGet(t, e, rgID, rgAPI); !strings.Contains(string(body), `"owner":"platform"`) {
		t.Errorf("manifest not applied to the adopted group: %s", body)
	}
	for _, kind := range [][2]string{{rgGroup, "ResourceGroup"}, {uaiGroup, "UserAssignedIdentity"}} {
		name := map[string]string{"ResourceGroup": "legacy-rg", "UserAssignedIdentity": "legacy-identity"}[kind[1]]
		r := e.resource("platform", kind[0], kind[1], name)
		if r.Ready.Status != record.StatusTrue || r.AppliedHash == "" || r.Policy != string(aso.ReconcilePolicyManage) {
			t.Errorf("%s after adoption: ready %+v, hash %q, policy %q", name, r.Ready, r.AppliedHash, r.Policy)
		}
	}
	uai := e.resource("platform", uaiGroup, "UserAssignedIdentity", "legacy-identity")
	if !strings.EqualFold(uai.ARMID, uaiID) || uai.Outputs["legacy-identity-settings/principalId"] != before {
		t.Errorf("identity in state: %s, outputs %v", uai.ARMID, uai.Outputs)
	}

	// Adopted once: the next refresh finds nothing to do.
	e.emu.ResetStats()
	rep, err = e.rec.Once(t.Context(), reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plan.HasChanges() {
		t.Errorf("second refresh planned %v", rep.Plan.Summary())
	}
	if w := e.writes(); len(w) != 0 {
		t.Errorf("second refresh wrote %v", w)
	}
}

func mustGet(t *testing.T, e *env, id, api string) []byte {
	t.Helper()
	b, err := e.cli.Get(t.Context(), id, api)
	if err != nil {
		t.Fatalf("GET %s: %v", id, err)
	}
	return b
}

// reconcile-policy skip: gitaso only reads (GET, never PUT or DELETE),
// reports Ready when the resource exists and AzureResourceNotFound when not,
// exports its values for others, and forgets it without a DELETE once it
// leaves Git.
func TestReconcilePolicySkip(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnv(t)
	rgID := e.rgID("shared-rg")
	e.mustPut(rgID, rgAPI, `{"location":"westeurope","tags":{"owner":"network-team"}}`)
	uaiID := rgID + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/shared-identity"
	principal := principalIDOf(t, e.mustPut(uaiID, uaiAPI, `{"location":"westeurope","tags":{"team":"network"}}`))

	skipped := `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: shared-rg
  namespace: platform
  annotations:
    serviceoperator.azure.com/reconcile-policy: skip
spec:
  location: westeurope
  tags:
    owner: platform
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: missing-rg
  namespace: platform
  annotations:
    serviceoperator.azure.com/reconcile-policy: skip
spec:
  location: westeurope
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: shared-identity
  namespace: platform
  annotations:
    serviceoperator.azure.com/reconcile-policy: skip
spec:
  location: westeurope
  owner:
    name: shared-rg
  operatorSpec:
    configMaps:
      principalId: {name: shared-identity-settings, key: principalId}
`
	reader := `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: shared-reader
  namespace: platform
spec:
  owner:
    name: shared-rg
    group: resources.azure.com
    kind: ResourceGroup
  principalIdFromConfig:
    name: shared-identity-settings
    key: principalId
  roleDefinitionReference:
    wellKnownName: Reader
`
	e.commit("skip", map[string]string{"skipped.yaml": skipped, "reader.yaml": reader, "keep.yaml": placeholder})
	e.emu.ResetStats()
	rep := e.run(true)
	for _, name := range []string{"shared-rg", "missing-rg"} {
		if r := planned(t, rep.Plan, "platform", rgGroup, "ResourceGroup", name); r.Action != planner.Observe || r.Request != nil {
			t.Errorf("%s planned %s with request %+v, want observe", name, r.Action, r.Request)
		}
	}
	ra := planned(t, rep.Plan, "platform", raGroup, "RoleAssignment", "shared-reader")
	if ra.Action != planner.Create {
		t.Errorf("role assignment planned %s", ra.Action)
	}
	// The only write is the managed role assignment; the skipped resources
	// were read, not written, although the manifest differs from Azure.
	if w := e.writes(); len(w) != 1 || !strings.HasPrefix(w[0], "PUT "+strings.ToLower(rgID)+"/providers/microsoft.authorization/roleassignments/") {
		t.Errorf("writes %v, want only the role assignment's PUT", w)
	}
	if body := mustGet(t, e, rgID, rgAPI); !strings.Contains(string(body), `"owner":"network-team"`) {
		t.Errorf("skipped group changed: %s", body)
	}
	for _, get := range []string{rgID, uaiID, e.rgID("missing-rg")} {
		if !slices.Contains(e.armRequests("GET"), "GET "+strings.ToLower(get)) {
			t.Errorf("%s was not read", get)
		}
	}
	shared := e.resource("platform", rgGroup, "ResourceGroup", "shared-rg")
	if shared.Ready.Status != record.StatusTrue || shared.Policy != string(aso.ReconcilePolicySkip) || shared.AppliedHash != "" {
		t.Errorf("shared-rg: %+v policy %q hash %q", shared.Ready, shared.Policy, shared.AppliedHash)
	}
	missing := e.resource("platform", rgGroup, "ResourceGroup", "missing-rg")
	if c := missing.Ready; c.Status != record.StatusFalse || c.Severity != record.SeverityWarning || c.Reason != "AzureResourceNotFound" ||
		!strings.Contains(c.Message, "missing-rg") {
		t.Errorf("missing-rg: %+v, want Warning AzureResourceNotFound", c)
	}
	if rep.Run.Outcome != record.OutcomePartial {
		t.Errorf("outcome %s, want partial (missing-rg not found)", rep.Run.Outcome)
	}
	// The skipped identity's export feeds the managed role assignment.
	uai := e.resource("platform", uaiGroup, "UserAssignedIdentity", "shared-identity")
	if uai.Ready.Status != record.StatusTrue || uai.Outputs["shared-identity-settings/principalId"] != principal {
		t.Errorf("skipped identity: %+v outputs %v, want principalId %s", uai.Ready, uai.Outputs, principal)
	}
	raState := e.resource("platform", raGroup, "RoleAssignment", "shared-reader")
	if raState.Ready.Status != record.StatusTrue {
		t.Fatalf("role assignment: %+v", raState.Ready)
	}
	if body := mustGet(t, e, raState.ARMID, "2022-04-01"); !strings.Contains(string(body), principal) {
		t.Errorf("role assignment's principal: %s", body)
	}

	// The missing group appears: the next run reports it Ready, still
	// without writing it.
	e.mustPut(e.rgID("missing-rg"), rgAPI, `{"location":"westeurope"}`)
	e.emu.ResetStats()
	e.run(false)
	if c := e.resource("platform", rgGroup, "ResourceGroup", "missing-rg").Ready; c.Status != record.StatusTrue {
		t.Errorf("missing-rg once created: %+v", c)
	}
	if w := e.writes(); len(w) != 0 {
		t.Errorf("writes %v, want none", w)
	}

	// Leaving Git: the managed role assignment is deleted, the skipped
	// resources are only forgotten.
	e.emu.ResetStats()
	e.commit("drop", map[string]string{"skipped.yaml": "", "reader.yaml": ""})
	rep = e.runApproved(false) // the repository is empty: held unless approved
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Errorf("outcome %s: %s", rep.Run.Outcome, rep.Run.Error)
	}
	if w := e.writes(); len(w) != 1 || w[0] != "DELETE "+strings.ToLower(raState.ARMID) {
		t.Errorf("writes %v, want only the role assignment's DELETE", w)
	}
	for _, id := range []string{rgID, uaiID, e.rgID("missing-rg")} {
		if !e.exists(id, rgAPI) {
			t.Errorf("%s deleted", id)
		}
	}
	for _, k := range [][3]string{{rgGroup, "ResourceGroup", "shared-rg"}, {rgGroup, "ResourceGroup", "missing-rg"}, {uaiGroup, "UserAssignedIdentity", "shared-identity"}} {
		if _, ok := e.lookup("platform", k[0], k[1], k[2]); ok {
			t.Errorf("%s still in state", k[2])
		}
	}
}

// reconcile-policy detach-on-delete: PUT as usual; once out of Git the
// resource is forgotten, not deleted. A managed child of a detached parent is
// still deleted.
func TestReconcilePolicyDetachOnDelete(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnv(t)
	manifests := `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: keep-rg
  namespace: platform
  annotations:
    serviceoperator.azure.com/reconcile-policy: detach-on-delete
spec:
  location: westeurope
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: keep-identity
  namespace: platform
  annotations:
    serviceoperator.azure.com/reconcile-policy: detach-on-delete
spec:
  location: westeurope
  owner:
    name: keep-rg
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: managed-identity
  namespace: platform
spec:
  location: westeurope
  owner:
    name: keep-rg
`
	e.commit("detach", map[string]string{"detach.yaml": manifests, "keep.yaml": placeholder})
	rep := e.run(false)
	if rep.Run.Outcome != record.OutcomeSucceeded || rep.Plan.Summary()[planner.Create] != 3 {
		t.Fatalf("outcome %s (%s), plan %v", rep.Run.Outcome, rep.Run.Error, rep.Plan.Summary())
	}
	rgID := e.rgID("keep-rg")
	keepID := rgID + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/keep-identity"
	managedID := rgID + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/managed-identity"
	if r := e.resource("platform", rgGroup, "ResourceGroup", "keep-rg"); r.Policy != string(aso.ReconcilePolicyDetachOnDelete) || r.Ready.Status != record.StatusTrue {
		t.Errorf("keep-rg: policy %q ready %+v", r.Policy, r.Ready)
	}

	// Changes are still applied.
	e.emu.ResetStats()
	e.commit("tag", map[string]string{"detach.yaml": strings.Replace(manifests, "spec:\n  location: westeurope\n---", "spec:\n  location: westeurope\n  tags: {team: a}\n---", 1)})
	e.run(false)
	if w := e.writes(); len(w) != 1 || w[0] != "PUT "+strings.ToLower(rgID) {
		t.Errorf("writes %v, want the group's PUT", w)
	}

	e.emu.ResetStats()
	e.commit("remove", map[string]string{"detach.yaml": ""})
	rep = e.runApproved(false) // the repository is empty: held unless approved
	for _, name := range []string{"keep-rg", "keep-identity"} {
		kind, group := "ResourceGroup", rgGroup
		if name == "keep-identity" {
			kind, group = "UserAssignedIdentity", uaiGroup
		}
		if r := planned(t, rep.Plan, "platform", group, kind, name); r.Action != planner.Detach || r.Request != nil {
			t.Errorf("%s planned %s %+v, want detach", name, r.Action, r.Request)
		}
		if _, ok := e.lookup("platform", group, kind, name); ok {
			t.Errorf("%s still in state", name)
		}
	}
	if w := e.writes(); len(w) != 1 || w[0] != "DELETE "+strings.ToLower(managedID) {
		t.Errorf("writes %v, want only the managed identity's DELETE", w)
	}
	if !e.exists(rgID, rgAPI) || !e.exists(keepID, uaiAPI) {
		t.Error("a detached resource was deleted from Azure")
	}
	if e.exists(managedID, uaiAPI) {
		t.Error("the managed identity was not deleted")
	}
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Errorf("outcome %s: %s", rep.Run.Outcome, rep.Run.Error)
	}
}

// ASO's DEFAULT_RECONCILE_POLICY (Config.DefaultPolicy), a per-namespace
// default (Config.NamespacePolicy) and the annotation, which wins over both.
func TestDefaultReconcilePolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(c *reconcile.Config) {
		c.DefaultPolicy = string(aso.ReconcilePolicySkip)
		c.NamespacePolicy = map[string]string{"platform": string(aso.ReconcilePolicyManage), "archive": string(aso.ReconcilePolicyDetachOnDelete)}
	}})
	for _, rg := range []string{"legacy-rg", "platform-ro-rg"} {
		e.mustPut(e.rgID(rg), rgAPI, `{"location":"westeurope"}`)
	}
	rg := func(ns, name, policy string) string {
		ann := ""
		if policy != "" {
			ann = "\n  annotations:\n    serviceoperator.azure.com/reconcile-policy: " + policy
		}
		return "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: " + name +
			"\n  namespace: " + ns + ann + "\nspec:\n  location: westeurope\n  tags: {from: git}\n---\n"
	}
	e.commit("policies", map[string]string{"rgs.yaml": rg("legacy", "legacy-rg", "") + // default: skip
		rg("legacy", "legacy-new-rg", "manage") + // annotation over the default
		rg("platform", "platform-new-rg", "") + // namespace default: manage
		rg("platform", "platform-ro-rg", "skip") + // annotation over the namespace default
		rg("archive", "archive-rg", ""), // namespace default: detach-on-delete
		"keep.yaml": placeholder})
	e.emu.ResetStats()
	rep := e.run(true)
	want := map[string]struct {
		ns, policy string
		action     planner.Action
	}{
		"legacy-rg":       {"legacy", string(aso.ReconcilePolicySkip), planner.Observe},
		"legacy-new-rg":   {"legacy", string(aso.ReconcilePolicyManage), planner.Create},
		"platform-new-rg": {"platform", string(aso.ReconcilePolicyManage), planner.Create},
		"platform-ro-rg":  {"platform", string(aso.ReconcilePolicySkip), planner.Observe},
		"archive-rg":      {"archive", string(aso.ReconcilePolicyDetachOnDelete), planner.Create},
	}
	var puts []string
	for name, w := range want {
		r := planned(t, rep.Plan, w.ns, rgGroup, "ResourceGroup", name)
		if string(r.Policy) != w.policy || r.Action != w.action {
			t.Errorf("%s: policy %q action %s, want %q %s", name, r.Policy, r.Action, w.policy, w.action)
		}
		s := e.resource(w.ns, rgGroup, "ResourceGroup", name)
		if s.Policy != w.policy || s.Ready.Status != record.StatusTrue {
			t.Errorf("%s in state: policy %q ready %+v", name, s.Policy, s.Ready)
		}
		if w.action == planner.Create {
			puts = append(puts, "PUT "+strings.ToLower(e.rgID(name)))
		}
	}
	got := e.writes()
	slices.Sort(got)
	slices.Sort(puts)
	if !slices.Equal(got, puts) {
		t.Errorf("writes %v, want %v", got, puts)
	}
	for _, name := range []string{"legacy-rg", "platform-ro-rg"} {
		if body := mustGet(t, e, e.rgID(name), rgAPI); strings.Contains(string(body), `"from"`) {
			t.Errorf("skipped %s was written: %s", name, body)
		}
	}

	// Out of Git: only the managed groups are deleted.
	e.emu.ResetStats()
	e.commit("remove", map[string]string{"rgs.yaml": ""})
	e.runApproved(false) // the repository is empty: held unless approved
	got = e.writes()
	slices.Sort(got)
	wantDel := []string{"DELETE " + strings.ToLower(e.rgID("legacy-new-rg")), "DELETE " + strings.ToLower(e.rgID("platform-new-rg"))}
	if !slices.Equal(got, wantDel) {
		t.Errorf("writes %v, want %v", got, wantDel)
	}
	for _, name := range []string{"legacy-rg", "platform-ro-rg", "archive-rg"} {
		if !e.exists(e.rgID(name), rgAPI) {
			t.Errorf("%s deleted", name)
		}
	}
	if rs, _ := e.db.Resources(record.Filter{}); len(rs) != 0 {
		t.Errorf("state still holds %d resources", len(rs))
	}
}
