package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// env is one end-to-end setup: the emulator, a Git server with one repo, a
// state file and a reconciler following the repo's main branch.
type env struct {
	t     *testing.T
	emu   *emulator.Emulator
	repo  *gittest.Repo
	db    *state.DB
	rec   *reconcile.Reconciler
	cli   *azure.Client // the platform's own client, for changes behind gitaso's back
	sub   string
	files map[string]string
	// dbPath is the state file's; reopen opens it again (after e.db was
	// closed) with a new reconciler, as a restarted gitaso does.
	dbPath string
	reopen func()
}

func newEnv(t *testing.T) *env { return newEnvWith(t, envOptions{}) }

// commit writes files (path → content, "" deletes) under clusters/snd and
// commits them.
func (e *env) commit(msg string, files map[string]string) string {
	e.t.Helper()
	var deleted []string
	add := map[string]string{}
	for p, c := range files {
		full := "clusters/snd/" + p
		if c == "" {
			deleted = append(deleted, full)
			delete(e.files, p)
			continue
		}
		add[full] = strings.ReplaceAll(c, "__SUB__", e.sub)
		e.files[p] = c
	}
	return e.repo.Commit(add, deleted, msg)
}

func (e *env) run(refresh bool) *reconcile.Report {
	e.t.Helper()
	rep, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "test", Refresh: refresh})
	if err != nil {
		e.t.Fatalf("run: %v", err)
	}
	return rep
}

// runApproved runs once with the revision's deletions approved, as
// `gitaso apply --approve-deletions` does (a commit emptying the repository
// is always held otherwise).
func (e *env) runApproved(refresh bool) *reconcile.Report {
	e.t.Helper()
	rep, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "test", Refresh: refresh, ApproveDeletions: true})
	if err != nil {
		e.t.Fatalf("run: %v", err)
	}
	return rep
}

func (e *env) resource(ns, group, kind, name string) record.Resource {
	e.t.Helper()
	r, ok, err := e.db.Resource(record.ResourceKey(ns, group, kind, name))
	if err != nil || !ok {
		e.t.Fatalf("state has no %s/%s/%s (err %v)", ns, kind, name, err)
	}
	return r
}

// writes returns the PUT and DELETE requests the emulator saw since the
// last reset, as "METHOD path".
func (e *env) writes() []string {
	var out []string
	for _, l := range e.emu.RequestLog() {
		if (l.Method == "PUT" || l.Method == "DELETE") && !strings.Contains(l.Path, "/operations/") {
			out = append(out, l.Method+" "+strings.ToLower(l.Path))
		}
	}
	return out
}

const platformRG = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: platform-rg
  namespace: platform
spec:
  location: westeurope
  tags:
    owner: platform
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: team-a-rg
  namespace: platform
spec:
  location: westeurope
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: team-b-rg
  namespace: platform
spec:
  location: westeurope
`

const identity = `
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: team-a-identity
  namespace: platform
spec:
  location: westeurope
  owner:
    name: platform-rg
  operatorSpec:
    configMaps:
      principalId:
        name: team-a-identity-settings
        key: principalId
      clientId:
        name: team-a-identity-settings
        key: clientId
---
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: team-a-contributor
  namespace: platform
spec:
  owner:
    name: team-a-rg
    group: resources.azure.com
    kind: ResourceGroup
  principalIdFromConfig:
    name: team-a-identity-settings
    key: principalId
  roleDefinitionReference:
    wellKnownName: Contributor
`

const storage = `
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: platformlogs
  namespace: platform
spec:
  location: westeurope
  kind: StorageV2
  sku:
    name: Standard_LRS
  owner:
    name: platform-rg
  accessTier: Hot
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccountsBlobService
metadata:
  name: platformlogs-blob
  namespace: platform
spec:
  owner:
    name: platformlogs
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccountsBlobServicesContainer
metadata:
  name: audit
  namespace: platform
spec:
  owner:
    name: platformlogs-blob
`

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	e := newEnv(t)

	// 1. First commit creates everything, in dependency order, in one run:
	// the role assignment's principalId is known only after the identity.
	rev1 := e.commit("platform", map[string]string{"rgs.yaml": platformRG, "identity.yaml": identity, "storage.yaml": storage})
	rep := e.run(false)
	if rep.Run.Revision != rev1 || rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("run 1: revision %s outcome %s error %s", rep.Run.Revision, rep.Run.Outcome, rep.Run.Error)
	}
	if got := rep.Plan.Summary()[planner.Create]; got != 8 {
		t.Errorf("run 1 planned %d creates, want 8", got)
	}
	ra := e.resource("platform", "authorization.azure.com", "RoleAssignment", "team-a-contributor")
	uai := e.resource("platform", "managedidentity.azure.com", "UserAssignedIdentity", "team-a-identity")
	if ra.Ready.Status != "True" || uai.Outputs["team-a-identity-settings/principalId"] == "" {
		t.Fatalf("role assignment %+v; identity outputs %v", ra.Ready, uai.Outputs)
	}
	body, err := e.cli.Get(context.Background(), ra.ARMID, "2022-04-01")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Properties struct{ PrincipalID, RoleDefinitionID string }
	}
	_ = json.Unmarshal(body, &got)
	if got.Properties.PrincipalID != uai.Outputs["team-a-identity-settings/principalId"] ||
		!strings.HasSuffix(got.Properties.RoleDefinitionID, "/b24988ac-6180-42a0-ab88-20f7382dd24c") {
		t.Errorf("role assignment in ARM: %s", body)
	}

	// 2. A second commit changes one field: only that resource is PUT.
	e.emu.ResetStats()
	e.commit("retier", map[string]string{"storage.yaml": strings.Replace(storage, "accessTier: Hot", "accessTier: Cool", 1)})
	rep = e.run(false)
	sa := e.resource("platform", "storage.azure.com", "StorageAccount", "platformlogs")
	if w := e.writes(); len(w) != 1 || w[0] != "PUT "+strings.ToLower(sa.ARMID) {
		t.Errorf("run 2 writes %v, want one PUT of the storage account", w)
	}
	if r := rep.Plan.Get(sa.Key()); r.Action != planner.Update || len(r.Changes) != 1 || r.Changes[0].Path != "/properties/accessTier" {
		t.Errorf("run 2 plan for the storage account: %s %+v", r.Action, r.Changes)
	}

	// 3. A third commit removes a resource: it is deleted.
	e.emu.ResetStats()
	withoutContainer := storage[:strings.LastIndex(storage, "---")]
	e.commit("drop container", map[string]string{"storage.yaml": strings.Replace(withoutContainer, "accessTier: Hot", "accessTier: Cool", 1)})
	e.run(false)
	containerID := sa.ARMID + "/blobServices/default/containers/audit"
	if w := e.writes(); len(w) != 1 || w[0] != "DELETE "+strings.ToLower(containerID) {
		t.Errorf("run 3 writes %v, want one DELETE of the container", w)
	}
	if _, err := e.cli.Get(context.Background(), containerID, "2023-01-01"); !errors.Is(err, azure.ErrNotFound) {
		t.Errorf("container still in ARM: %v", err)
	}
	if _, ok, _ := e.db.Resource(record.ResourceKey("platform", "storage.azure.com", "StorageAccountsBlobServicesContainer", "audit")); ok {
		t.Error("container still in state")
	}

	// 4. Drift: a change behind gitaso's back is reported and corrected.
	rg := e.resource("platform", "resources.azure.com", "ResourceGroup", "platform-rg")
	if _, err := e.cli.Put(context.Background(), rg.ARMID, "2020-06-01", []byte(`{"location":"westeurope","tags":{"owner":"someone-else"}}`)); err != nil {
		t.Fatal(err)
	}
	rep = e.run(true)
	r := rep.Plan.Get(rg.Key())
	if r.Action != planner.Drift || len(r.Changes) != 1 || r.Changes[0].Path != "/tags/owner" {
		t.Fatalf("drift plan: %s %+v", r.Action, r.Changes)
	}
	body, _ = e.cli.Get(context.Background(), rg.ARMID, "2020-06-01")
	if !strings.Contains(string(body), `"owner":"platform"`) {
		t.Errorf("drift not corrected: %s", body)
	}
	for _, r := range rep.Plan.Resources {
		if r.Key() != rg.Key() && r.Action != planner.NoOp {
			t.Errorf("refresh planned %s for %s", r.Action, r.ID())
		}
	}

	// 5. A malformed commit is refused whole; the previous revision stays.
	good, _ := e.db.LastGoodRevision()
	e.emu.ResetStats()
	bad := e.commit("broken", map[string]string{
		"rgs.yaml":    strings.Replace(platformRG, "owner: platform", "owner: platform-2", 1),
		"broken.yaml": "apiVersion: storage.azure.com/v1api20230101\nkind: StorageAccount\nmetadata:\n  name: x\n  namespace: platform\nspec:\n  owner: {name: nowhere}\n  location: [oops\n",
	})
	_, err = e.rec.Once(context.Background(), reconcile.Options{Trigger: "test"})
	if !errors.Is(err, reconcile.ErrRefused) || !strings.Contains(err.Error(), "broken.yaml") {
		t.Fatalf("malformed commit: err %v", err)
	}
	if w := e.writes(); len(w) != 0 {
		t.Errorf("refused commit wrote %v", w)
	}
	if now, _ := e.db.LastGoodRevision(); now != good {
		t.Errorf("last good revision %s, want %s", now, good)
	}
	runs, _ := e.db.Runs(1)
	if len(runs) != 1 || runs[0].Revision != bad || runs[0].Outcome != record.OutcomeRefused {
		t.Errorf("latest run %+v", runs)
	}
	e.commit("fix", map[string]string{"rgs.yaml": platformRG, "broken.yaml": ""})
	if rep := e.run(false); rep.Run.Outcome != record.OutcomeSucceeded || rep.Plan.HasChanges() {
		t.Errorf("after the fix: %s, changes %v", rep.Run.Outcome, rep.Plan.Summary())
	}
}

func TestTeamCredentialIsScoped(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	e := newEnv(t)
	team, err := e.emu.AddServicePrincipal("team-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.emu.AssignRole(team.ObjectID, "Contributor", "/subscriptions/"+e.sub+"/resourceGroups/team-a-rg"); err != nil {
		t.Fatal(err)
	}
	cred := `
apiVersion: v1
kind: Secret
metadata:
  name: aso-credential
  namespace: team-a
stringData:
  AZURE_SUBSCRIPTION_ID: __SUB__
  AZURE_TENANT_ID: ` + e.emu.TenantID() + `
  AZURE_CLIENT_ID: ` + team.ClientID + `
  AZURE_CLIENT_SECRET: ` + team.Secret + `
`
	accounts := `
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: teamadata
  namespace: team-a
spec:
  location: westeurope
  kind: StorageV2
  sku: {name: Standard_LRS}
  owner: {armId: /subscriptions/__SUB__/resourceGroups/team-a-rg}
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: teambdata
  namespace: team-a
spec:
  location: westeurope
  kind: StorageV2
  sku: {name: Standard_LRS}
  owner: {armId: /subscriptions/__SUB__/resourceGroups/team-b-rg}
`
	e.commit("teams", map[string]string{"rgs.yaml": platformRG, "team-a/cred.yaml": cred, "team-a/storage.yaml": accounts})
	rep := e.run(false)
	if rep.Run.Outcome != record.OutcomePartial {
		t.Errorf("outcome %s, want partial", rep.Run.Outcome)
	}
	ok := e.resource("team-a", "storage.azure.com", "StorageAccount", "teamadata")
	denied := e.resource("team-a", "storage.azure.com", "StorageAccount", "teambdata")
	if ok.Ready.Status != "True" || ok.Credential != "team-a/aso-credential" {
		t.Errorf("team-a's own account: %+v via %s", ok.Ready, ok.Credential)
	}
	if denied.Ready.Status != "False" || denied.Ready.Reason != "AuthorizationFailed" || !strings.Contains(denied.Ready.Message, team.ObjectID) {
		t.Errorf("team-b account: %+v", denied.Ready)
	}
	for _, rg := range []string{"platform-rg", "team-a-rg", "team-b-rg"} {
		if r := e.resource("platform", "resources.azure.com", "ResourceGroup", rg); r.Ready.Status != "True" {
			t.Errorf("%s: %+v", rg, r.Ready)
		}
	}
	// The secret never reaches state or the plan.
	raw, _ := os.ReadFile(e.db.Path())
	if strings.Contains(string(raw), team.Secret) {
		t.Error("client secret stored in state")
	}
	planJSON, _ := e.db.Plan()
	if strings.Contains(string(planJSON), team.Secret) {
		t.Error("client secret in the plan")
	}
}

// TestWellKnownRoleInPlan: a RoleAssignment's wellKnownName is shown in the
// plan as the role's ID (from aso's table of built-in roles, as ARM
// receives it) and a misspelt name refuses the commit before anything is
// sent, with the role's own spelling suggested.
func TestWellKnownRoleInPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	e := newEnv(t)
	e.commit("platform", map[string]string{"rgs.yaml": platformRG, "identity.yaml": identity})
	rep, err := e.rec.PlanOnly(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	ra := rep.Plan.Get("platform/authorization.azure.com/RoleAssignment/team-a-contributor")
	want := `"roleDefinitionId":"/subscriptions/` + e.sub + `/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"`
	if !strings.Contains(string(ra.Request.Body), want) {
		t.Errorf("plan body %s lacks %s", ra.Request.Body, want)
	}
	e.emu.ResetStats()
	e.commit("typo", map[string]string{"identity.yaml": strings.Replace(identity, "wellKnownName: Contributor", "wellKnownName: Contributer", 1)})
	_, err = e.rec.Once(context.Background(), reconcile.Options{Trigger: "test"})
	if !errors.Is(err, reconcile.ErrRefused) || !strings.Contains(err.Error(), `spec.roleDefinitionReference.wellKnownName: unknown built-in role "Contributer": did you mean "Contributor"?`) {
		t.Fatalf("typo: %v", err)
	}
	if w := e.writes(); len(w) != 0 {
		t.Errorf("a refused commit wrote %v", w)
	}
}
