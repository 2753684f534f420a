package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
)

// Nothing lost, whatever the commit: moves, the deletion guard and the
// unmanaged-children hold, end to end through Git, the reconciler and the
// emulator.

const (
	rgAPIVersion  = "2020-06-01"
	uaiAPIVersion = "2023-01-31"
)

// movable is a resource group, an identity exporting its IDs, and a role
// assignment with a fixed name reading the identity's principal ID, all in
// namespace __NS__; __RG__ is the resource group's object name, which keeps
// its ARM name through spec.azureName.
const movable = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: __RG__
  namespace: __NS__
spec:
  azureName: data-rg
  location: westeurope
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: app-identity
  namespace: __NS__
spec:
  location: westeurope
  owner:
    name: __RG__
  operatorSpec:
    configMaps:
      principalId:
        name: app-identity-settings
        key: principalId
---
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: app-reader
  namespace: __NS__
spec:
  azureName: 6f1a3c52-2b1e-4c3a-9a57-0d7e4f9b1c11
  owner:
    name: __RG__
    group: resources.azure.com
    kind: ResourceGroup
  principalIdFromConfig:
    name: app-identity-settings
    key: principalId
  roleDefinitionReference:
    wellKnownName: Reader
`

func movableIn(ns, rg string) string {
	return strings.NewReplacer("__NS__", ns, "__RG__", rg).Replace(movable)
}

func TestMoveKeepsAzureResources(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	for _, tc := range []struct {
		name   string
		ns, rg string // after the move
	}{
		{"namespace", "team-b", "data-rg"},
		{"rename", "team-a", "data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.commit("create", map[string]string{"app.yaml": movableIn("team-a", "data-rg")})
			rep := e.runSucceeds(t, "create")
			if c := planned(t, rep.Plan, "team-a", "resources.azure.com", "ResourceGroup", "data-rg"); c.Action != planner.Create {
				t.Errorf("resource group planned %s at creation, want create", c.Action)
			}
			rgID := e.rgID("data-rg")
			uaiID := rgID + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/app-identity"
			before := string(mustGet(t, e, uaiID, uaiAPIVersion))

			e.emu.ResetStats()
			e.commit("move", map[string]string{"app.yaml": movableIn(tc.ns, tc.rg)})
			rep = e.runSucceeds(t, "move")
			for _, w := range e.writes() {
				if strings.HasPrefix(w, "DELETE") {
					t.Errorf("the move sent %s", w)
				}
			}
			moved := planned(t, rep.Plan, tc.ns, "resources.azure.com", "ResourceGroup", tc.rg)
			if moved.Action != planner.Move || moved.MovedFrom != record.ResourceKey("team-a", "resources.azure.com", "ResourceGroup", "data-rg") {
				t.Errorf("resource group planned %s from %q, want move from team-a's", moved.Action, moved.MovedFrom)
			}
			for _, r := range rep.Plan.Resources {
				if r.Action == planner.Delete || r.Action == planner.Create {
					t.Errorf("%s planned %s (%s)", r.ID(), r.Action, r.Reason)
				}
			}
			// The Azure resources are the same ones: the identity keeps its
			// principal (a re-created identity would get a new one).
			if after := string(mustGet(t, e, uaiID, uaiAPIVersion)); !samePrincipal(before, after) {
				t.Errorf("identity changed:\nbefore %s\nafter  %s", before, after)
			}
			if !e.exists(rgID, rgAPIVersion) {
				t.Fatal("resource group gone")
			}
			// State follows the manifests: new keys Ready, old keys gone.
			rs, err := e.db.Resources(record.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 3 {
				t.Errorf("state holds %d resources, want 3", len(rs))
			}
			for _, r := range rs {
				if r.Namespace != tc.ns || r.Ready.Status != record.StatusTrue {
					t.Errorf("state %s: namespace %s ready %s %s", r.Key(), r.Namespace, r.Ready.Status, r.Ready.Message)
				}
			}
			// The next run, and the one after a resync, change nothing.
			e.emu.ResetStats()
			rep = e.run(true)
			if rep.Plan.HasChanges() {
				t.Errorf("plan after the move has changes:\n%s", planText(t, rep.Plan))
			}
			if w := e.writes(); len(w) != 0 {
				t.Errorf("writes after the move: %v", w)
			}
		})
	}
}

func samePrincipal(a, b string) bool {
	pa := between(a, `"principalId":"`, `"`)
	return pa != "" && pa == between(b, `"principalId":"`, `"`)
}

func between(s, start, end string) string {
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, end)
	return v
}

func groups(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: %s-%02d\n  namespace: platform\nspec:\n  location: westeurope\n", prefix, i)
	}
	return b.String()
}

func TestDeletionGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	e := newEnv(t)
	e.commit("create", map[string]string{"keep.yaml": groups("keep", 2), "old.yaml": groups("old", 6)})
	e.runSucceeds(t, "create")

	// 6 of 8 (75 %) go, and one group is added in the same commit: held
	// whole, nothing written.
	e.emu.ResetStats()
	rev := e.commit("drop most", map[string]string{"old.yaml": "", "new.yaml": groups("new", 1)})
	rep := e.run(true)
	if rep.Run.Outcome != record.OutcomeHeld || rep.Run.Held == nil || rep.Run.Held.Reason != record.HoldMassDeletion {
		t.Fatalf("outcome %s (%+v), want held for a mass deletion", rep.Run.Outcome, rep.Run.Held)
	}
	if h := rep.Run.Held; h.Deletions != 6 || h.Managed != 8 || len(h.Keys) != 6 {
		t.Errorf("hold %+v, want 6 of 8 with their keys", h)
	}
	if rep.Plan.Held == nil {
		t.Error("the plan does not say it is held")
	}
	if w := e.writes(); len(w) != 0 {
		t.Errorf("a held revision wrote %v", w)
	}
	if n := len(e.stateResources(t)); n != 8 {
		t.Errorf("state holds %d resources, want 8", n)
	}
	runs, err := e.db.Runs(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Outcome != record.OutcomeHeld || runs[0].Revision != rev || runs[0].Held == nil {
		t.Errorf("recorded run %+v, want the held one", runs)
	}
	if text := planText(t, rep.Plan); !strings.Contains(text, "HELD (MassDeletion)") || !strings.Contains(text, "approve") {
		t.Errorf("text plan does not show the hold:\n%s", text)
	}
	// Held again on the next poll: holding is not a one-off.
	if rep := e.run(false); rep.Run.Outcome != record.OutcomeHeld {
		t.Errorf("second run %s, want held", rep.Run.Outcome)
	}

	// Approving a revision that holds nothing is refused.
	if err := e.rec.ApproveDeletions(context.Background(), "0000000000"); !errors.Is(err, reconcile.ErrNotHeld) {
		t.Errorf("approving an unknown revision: %v", err)
	}
	// An approval naming another plan digest is refused: the held plan is
	// not the one approved.
	digest := runs[0].Held.PlanDigest(rev)
	if err := e.rec.ApprovePlan(context.Background(), rev[:8], "0000000000000000"); !errors.Is(err, reconcile.ErrPlanChanged) || !strings.Contains(err.Error(), digest) {
		t.Errorf("approving another plan: %v, want ErrPlanChanged naming %s", err, digest)
	}
	// Approval releases exactly that revision: 6 DELETEs and the new group.
	// It is recorded as made by the caller, with the plan's digest.
	alice := access.Identity{Kind: access.User, Subject: "a1", Name: "alice@gitaso.local"}
	if err := e.rec.ApprovePlan(access.WithIdentity(context.Background(), alice), rev[:8], digest); err != nil {
		t.Fatal(err)
	}
	if a, ok, err := e.db.Approval(rev); err != nil || !ok || a.By != "user alice@gitaso.local" || a.Plan != digest {
		t.Errorf("stored approval %+v (%v, %v), want by user alice@gitaso.local of plan %s", a, ok, err, digest)
	}
	e.emu.ResetStats()
	rep = e.runSucceeds(t, "approved run")
	if got := keysPlanned(rep.Plan, planner.Delete); len(got) != 6 {
		t.Errorf("approved run planned deletions %v, want the 6 old groups", got)
	}
	var dels []string
	for _, w := range e.writes() {
		if strings.HasPrefix(w, "DELETE") {
			dels = append(dels, w)
		}
	}
	if len(dels) != 6 {
		t.Errorf("approved run deleted %v, want the 6 old groups", dels)
	}
	if !e.exists(e.rgID("new-00"), rgAPIVersion) {
		t.Error("the new group was not created with the approved revision")
	}

	// A later revision is judged on its own: the approval does not carry.
	// Every manifest gone (a README left): always held, however few.
	e.emu.ResetStats()
	e.commit("drop all", map[string]string{"keep.yaml": "", "new.yaml": "", "README.md": "moved elsewhere\n"})
	rep = e.run(true)
	if rep.Run.Outcome != record.OutcomeHeld || rep.Run.Held.Reason != record.HoldEmpty {
		t.Fatalf("emptied repository: %s %+v, want held (empty revision)", rep.Run.Outcome, rep.Run.Held)
	}
	// The path itself gone: held, saying so.
	e.commit("drop path", map[string]string{"README.md": ""})
	rep = e.run(true)
	if rep.Run.Outcome != record.OutcomeHeld || rep.Run.Held.Reason != record.HoldPathMissing || !strings.Contains(rep.Run.Held.Message, "clusters/snd") {
		t.Fatalf("path removed: %s %+v, want held (path missing)", rep.Run.Outcome, rep.Run.Held)
	}
	if w := e.writes(); len(w) != 0 {
		t.Errorf("the emptied repository wrote %v", w)
	}
	if n := len(e.stateResources(t)); n != 3 {
		t.Errorf("state holds %d resources, want 3", n)
	}
}

func TestUnmanagedChildrenHoldDeletion(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	e := newEnv(t)
	const rgs = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: shared-rg
  namespace: platform
spec:
  location: westeurope
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: scratch-rg
  namespace: platform
  annotations:
    gitaso.io/delete-unmanaged-children: "true"
spec:
  location: westeurope
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: keep-rg
  namespace: platform
spec:
  location: westeurope
`
	e.commit("create", map[string]string{"rgs.yaml": rgs})
	e.runSucceeds(t, "create")
	// Someone creates identities in two groups outside Git.
	ctx := context.Background()
	body := []byte(`{"location":"westeurope"}`)
	foreign := e.rgID("shared-rg") + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/someone-elses"
	scratch := e.rgID("scratch-rg") + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/temp"
	for _, id := range []string{foreign, scratch} {
		if _, err := e.cli.Put(ctx, id, uaiAPIVersion, body); err != nil {
			t.Fatal(err)
		}
	}

	// Removing shared-rg would take the foreign identity with it: held,
	// naming it. scratch-rg opted in and keep-rg stays.
	e.emu.ResetStats()
	rev := e.commit("drop", map[string]string{"rgs.yaml": strings.Split(rgs, "---")[2]})
	rep := e.run(true)
	if rep.Run.Outcome != record.OutcomeHeld || rep.Run.Held.Reason != record.HoldUnmanagedChildren {
		t.Fatalf("outcome %s %+v, want held for unmanaged children", rep.Run.Outcome, rep.Run.Held)
	}
	if !slices.ContainsFunc(rep.Run.Held.Unmanaged, func(s string) bool { return strings.EqualFold(s, foreign) }) {
		t.Errorf("hold names %v, want %s", rep.Run.Held.Unmanaged, foreign)
	}
	if slices.ContainsFunc(rep.Run.Held.Unmanaged, func(s string) bool { return strings.EqualFold(s, scratch) }) {
		t.Errorf("hold names %s although its group opted in", scratch)
	}
	for _, w := range e.writes() {
		if strings.HasPrefix(w, "DELETE") {
			t.Errorf("held run sent %s", w)
		}
	}
	if !e.exists(foreign, uaiAPIVersion) {
		t.Fatal("the foreign identity is gone")
	}

	// Approved: both groups go, with what they held.
	if err := e.rec.ApproveDeletions(ctx, rev); err != nil {
		t.Fatal(err)
	}
	rep = e.runSucceeds(t, "approved")
	for _, name := range []string{"shared-rg", "scratch-rg"} {
		if r := planned(t, rep.Plan, "platform", "resources.azure.com", "ResourceGroup", name); r.Action != planner.Delete {
			t.Errorf("approved run planned %s for %s, want delete", r.Action, name)
		}
	}
	if e.exists(e.rgID("shared-rg"), rgAPIVersion) || e.exists(e.rgID("scratch-rg"), rgAPIVersion) {
		t.Error("approved deletions did not happen")
	}
	if !e.exists(e.rgID("keep-rg"), rgAPIVersion) {
		t.Error("keep-rg was deleted")
	}
}

// A child resource's parent (a Service Bus namespace) holding a queue Git
// does not declare: deleting the namespace is held too.
func TestUnmanagedChildOfResourceHoldsDeletion(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	e := newEnv(t)
	const sb = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: bus-rg
  namespace: platform
spec:
  location: westeurope
---
apiVersion: servicebus.azure.com/v1api20240101
kind: Namespace
metadata:
  name: bus-ns
  namespace: platform
spec:
  location: westeurope
  owner:
    name: bus-rg
  sku:
    name: Standard
---
apiVersion: servicebus.azure.com/v1api20240101
kind: NamespacesQueue
metadata:
  name: orders
  namespace: platform
spec:
  owner:
    name: bus-ns
`
	e.commit("create", map[string]string{"sb.yaml": sb})
	e.runSucceeds(t, "create")
	nsID := e.rgID("bus-rg") + "/providers/Microsoft.ServiceBus/namespaces/bus-ns"
	foreign := nsID + "/queues/someone-elses"
	if _, err := e.cli.Put(context.Background(), foreign, "2024-01-01", []byte(`{"properties":{}}`)); err != nil {
		t.Fatal(err)
	}
	// Only the namespace and its queue leave Git.
	e.emu.ResetStats()
	e.commit("drop namespace", map[string]string{"sb.yaml": strings.Split(sb, "---")[0]})
	rep := e.run(true)
	if rep.Run.Outcome != record.OutcomeHeld {
		t.Fatalf("outcome %s %s, want held", rep.Run.Outcome, rep.Run.Error)
	}
	if got := rep.Run.Held.Unmanaged; len(got) != 1 || !strings.EqualFold(got[0], foreign) {
		t.Errorf("hold names %v, want only %s (the default authorization rule is ARM's own)", got, foreign)
	}
	if w := e.writes(); len(w) != 0 {
		t.Errorf("held run wrote %v", w)
	}
	// Once the foreign queue is gone, the deletion goes ahead by itself.
	if err := e.cli.Delete(context.Background(), foreign, "2024-01-01"); err != nil {
		t.Fatal(err)
	}
	rep = e.runSucceeds(t, "after removing the foreign queue")
	if r := planned(t, rep.Plan, "platform", "servicebus.azure.com", "Namespace", "bus-ns"); r.Action != planner.Delete {
		t.Errorf("namespace planned %s once the foreign queue is gone, want delete", r.Action)
	}
	if e.exists(nsID, "2024-01-01") {
		t.Error("namespace not deleted")
	}
}

// The daemon notices a commit that removes the source path: a held run is
// recorded once (not a warning on every poll), and nothing is deleted.
func TestDaemonHoldsRemovedPath(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	e := newEnvWith(t, envOptions{config: func(c *reconcile.Config) { c.Interval = 50 * time.Millisecond }})
	e.commit("create", map[string]string{"rg.yaml": groups("only", 1)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.rec.Loop(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool {
		r, ok := e.lookup("platform", "resources.azure.com", "ResourceGroup", "only-00")
		return ok && r.Ready.Status == record.StatusTrue
	})
	rev := e.commit("remove path", map[string]string{"rg.yaml": ""})
	waitFor(t, func() bool {
		runs, err := e.db.Runs(1)
		if err != nil {
			t.Fatal(err)
		}
		return len(runs) == 1 && runs[0].Revision == rev && runs[0].Outcome == record.OutcomeHeld
	})
	time.Sleep(300 * time.Millisecond) // several polls
	runs, err := e.db.Runs(0)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, r := range runs {
		if r.Outcome == record.OutcomeHeld {
			held++
		}
	}
	if held != 1 {
		t.Errorf("%d held runs recorded, want 1", held)
	}
	if !e.exists(e.rgID("only-00"), rgAPIVersion) {
		t.Error("the resource group was deleted")
	}
}

// stateResources is every resource the state holds.
func (e *env) stateResources(t *testing.T) []record.Resource {
	t.Helper()
	rs, err := e.db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// planText is the plan as `gitaso plan` prints it.
func planText(t *testing.T, p *planner.Plan) string {
	t.Helper()
	var b strings.Builder
	if err := planner.RenderText(&b, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// keysPlanned are the keys of the plan's resources planned a.
func keysPlanned(p *planner.Plan, a planner.Action) []string {
	var out []string
	for _, r := range p.Resources {
		if r.Action == a {
			out = append(out, r.Key())
		}
	}
	return out
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runSucceeds runs once with a refresh and fails the test unless every
// action succeeded.
func (e *env) runSucceeds(t *testing.T, what string) *reconcile.Report {
	t.Helper()
	rep := e.run(true)
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("%s: %s %s", what, rep.Run.Outcome, rep.Run.Error)
	}
	return rep
}
