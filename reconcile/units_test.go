package reconcile_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/render"
	"github.com/gitaso/gitaso/state"
)

// unitsRepo is a Flux repository of teams: flux-system (the entry) holds a
// Kustomization per team, each a directory with a resource group and an
// identity in it.
type unitsRepo struct {
	t    *testing.T
	root string
}

func fluxKs(name, path string, extra string) string {
	return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: " + name +
		"\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: " + path +
		"\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n" + extra
}

func teamObjects(team, tag string) string {
	return "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg-" + team +
		"\n  namespace: " + team + "\nspec:\n  location: westeurope\n  tags:\n    v: \"" + tag + "\"\n---\n" +
		"apiVersion: managedidentity.azure.com/v1api20230131\nkind: UserAssignedIdentity\nmetadata:\n  name: id-" + team +
		"\n  namespace: " + team + "\nspec:\n  location: westeurope\n  owner:\n    name: rg-" + team + "\n"
}

func (u *unitsRepo) write(path, data string) {
	u.t.Helper()
	f := filepath.Join(u.root, path)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		u.t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
		u.t.Fatal(err)
	}
}

func (u *unitsRepo) remove(path string) {
	u.t.Helper()
	if err := os.RemoveAll(filepath.Join(u.root, path)); err != nil {
		u.t.Fatal(err)
	}
}

func unitOf(t *testing.T, units []record.Unit, id string) record.Unit {
	t.Helper()
	for _, u := range units {
		if u.ID() == id {
			return u
		}
	}
	t.Fatalf("no unit %s among %d", id, len(units))
	return record.Unit{}
}

// One team's broken Kustomization stops only that team: the others are
// applied, its objects are kept exactly as last applied (nothing deleted,
// nothing changed), the run is partial, and its unit says why with the file
// and the revision it last applied. A team whose dependsOn names it waits.
// A team whose objects the graph refuses (an owner not declared) is held
// alone. Once fixed, the team applies again.
func TestFailedUnitKeepsItsObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	env := emutest.New(t)
	repo := &unitsRepo{t: t, root: t.TempDir()}
	ks := func(extraB, extraC string) {
		repo.write("clusters/c/teams.yaml", fluxKs("team-a", "./teams/a", "")+"---\n"+
			fluxKs("team-b", "./teams/b", extraB)+"---\n"+fluxKs("team-c", "./teams/c", extraC))
	}
	ks("", "  dependsOn:\n    - name: team-b\n")
	for _, team := range []string{"a", "b", "c"} {
		repo.write("teams/"+team+"/objects.yaml", teamObjects("team-"+team, "1"))
	}
	rec, db := repo.reconciler(env, render.Options{Kustomize: true, Flux: true, FluxPath: "clusters/c", Substitute: true, Strict: true})
	ctx := context.Background()

	rep, err := rec.Once(ctx, reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil {
		t.Fatalf("healthy revision: %v", err)
	}
	good := rep.Run.Revision
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("healthy revision: outcome %s: %s", rep.Run.Outcome, rep.Run.Error)
	}
	units, err := db.Units()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"Kustomization/flux-system/team-a", "Kustomization/flux-system/team-b", "Kustomization/flux-system/team-c"} {
		u := unitOf(t, units, id)
		if u.Ready.Status != record.StatusTrue || u.Ready.Reason != manifest.ReasonSucceeded || u.LastAppliedRevision != good || len(u.Objects) != 2 {
			t.Errorf("%s after the healthy run: %+v", id, u)
		}
	}
	rgB, ok, err := db.Resource("team-b/resources.azure.com/ResourceGroup/rg-team-b")
	if err != nil || !ok || rgB.Unit != "Kustomization/flux-system/team-b" {
		t.Fatalf("team-b's resource group in state: %+v %v %v", rgB, ok, err)
	}
	bodyB := armGet(t, env, rgB.ARMID)

	// team-b's spec.path is not created yet, team-a and team-c change.
	ks("", "  dependsOn:\n    - name: team-b\n")
	repo.remove("teams/b")
	repo.write("clusters/c/teams.yaml", fluxKs("team-a", "./teams/a", "")+"---\n"+
		fluxKs("team-b", "./teams/b-renamed", "")+"---\n"+fluxKs("team-c", "./teams/c", "  dependsOn:\n    - name: team-b\n"))
	repo.write("teams/a/objects.yaml", teamObjects("team-a", "2"))
	repo.write("teams/c/objects.yaml", teamObjects("team-c", "2"))
	rep, err = rec.Once(ctx, reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil {
		t.Fatalf("broken team-b: the others must apply: %v", err)
	}
	broken := rep.Run.Revision
	if rep.Run.Outcome != record.OutcomePartial || !strings.Contains(rep.Run.Error, "team-b (BuildFailed)") {
		t.Errorf("run with team-b broken: outcome %s, error %q; want partial naming team-b", rep.Run.Outcome, rep.Run.Error)
	}
	if !rep.Plan.Partial() {
		t.Error("the plan does not say it is partial")
	}
	for _, r := range rep.Plan.Resources {
		if r.Action == planner.Delete || r.Action == planner.Detach {
			t.Errorf("planned %s %s: nothing of a failed unit may be deleted", r.Action, r.ID())
		}
		if r.Namespace == "team-b" && r.Action != planner.NoOp {
			t.Errorf("team-b's %s planned %s: a failed unit's objects stay as last applied", r.ID(), r.Action)
		}
	}
	if got := armGet(t, env, rgB.ARMID); string(got) != string(bodyB) {
		t.Errorf("team-b's resource group changed in Azure:\n%s\nwas\n%s", got, bodyB)
	}
	units, _ = db.Units()
	a, b, c := unitOf(t, units, "Kustomization/flux-system/team-a"), unitOf(t, units, "Kustomization/flux-system/team-b"), unitOf(t, units, "Kustomization/flux-system/team-c")
	if a.Ready.Status != record.StatusTrue || a.LastAppliedRevision != broken {
		t.Errorf("team-a: %+v, want Ready at %s", a.Ready, broken)
	}
	if b.Ready.Status != record.StatusFalse || b.Ready.Reason != manifest.ReasonBuildFailed || b.LastAppliedRevision != good ||
		len(b.Errors) == 0 || !strings.Contains(b.Errors[0], "clusters/c/teams.yaml") {
		t.Errorf("team-b: ready %+v, last applied %s, errors %q; want BuildFailed, %s, the Kustomization's file", b.Ready, b.LastAppliedRevision, b.Errors, good)
	}
	if c.Ready.Status != record.StatusFalse || c.Ready.Reason != manifest.ReasonDependencyNotReady || c.LastAppliedRevision != good {
		t.Errorf("team-c: %+v at %s, want DependencyNotReady, still at %s", c.Ready, c.LastAppliedRevision, good)
	}
	if tags := tagOf(t, env, "team-a"); tags != "2" {
		t.Errorf("team-a's tag %q, want the new commit's 2", tags)
	}
	if tags := tagOf(t, env, "team-c"); tags != "1" {
		t.Errorf("team-c's tag %q, want 1: it waits for team-b", tags)
	}
	if n, err := db.Resources(record.Filter{Namespace: "team-b"}); err != nil || len(n) != 2 {
		t.Errorf("team-b's resources in state: %d (%v), want both kept", len(n), err)
	}

	// A second run at the same revision changes nothing (kept objects are
	// planned as they were).
	rep, err = rec.Once(ctx, reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Plan.Resources {
		if r.Namespace == "team-b" && r.Action != planner.NoOp {
			t.Errorf("second run: team-b's %s planned %s", r.ID(), r.Action)
		}
	}

	// team-b again, but an object whose owner is not declared: the graph
	// refuses it, so team-b is held (ReconciliationFailed), not the revision.
	repo.write("clusters/c/teams.yaml", fluxKs("team-a", "./teams/a", "")+"---\n"+
		fluxKs("team-b", "./teams/b", "")+"---\n"+fluxKs("team-c", "./teams/c", ""))
	repo.write("teams/b/objects.yaml", strings.ReplaceAll(teamObjects("team-b", "3"), "name: rg-team-b\n\n", "")+
		"---\napiVersion: managedidentity.azure.com/v1api20230131\nkind: UserAssignedIdentity\nmetadata:\n  name: orphan\n  namespace: team-b\nspec:\n  location: westeurope\n  owner:\n    name: rg-nowhere\n")
	rep, err = rec.Once(ctx, reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil {
		t.Fatalf("team-b's graph error must hold team-b only: %v", err)
	}
	if rep.Run.Outcome != record.OutcomePartial {
		t.Errorf("team-b held by the graph: outcome %s, want partial", rep.Run.Outcome)
	}
	units, _ = db.Units()
	b = unitOf(t, units, "Kustomization/flux-system/team-b")
	if b.Ready.Reason != manifest.ReasonFailed || len(b.Errors) == 0 || !strings.Contains(strings.Join(b.Errors, "\n"), "rg-nowhere") {
		t.Errorf("team-b: %+v errors %q; want ReconciliationFailed naming the missing owner", b.Ready, b.Errors)
	}
	if c = unitOf(t, units, "Kustomization/flux-system/team-c"); c.Ready.Status != record.StatusTrue {
		t.Errorf("team-c no longer depends on team-b and must apply: %+v", c.Ready)
	}
	if tags := tagOf(t, env, "team-b"); tags != "1" {
		t.Errorf("team-b's tag %q, want 1 (kept)", tags)
	}

	// Fixed: team-b applies, its unit Ready at the new revision.
	repo.write("teams/b/objects.yaml", teamObjects("team-b", "4"))
	rep, err = rec.Once(ctx, reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil || rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("fixed: %v %s %s", err, rep.Run.Outcome, rep.Run.Error)
	}
	units, _ = db.Units()
	if b = unitOf(t, units, "Kustomization/flux-system/team-b"); b.Ready.Status != record.StatusTrue || b.LastAppliedRevision != rep.Run.Revision {
		t.Errorf("team-b fixed: %+v", b)
	}
	if tags := tagOf(t, env, "team-b"); tags != "4" {
		t.Errorf("team-b's tag %q, want 4", tags)
	}

	// A team removed from Git is pruned, its unit forgotten.
	repo.write("clusters/c/teams.yaml", fluxKs("team-a", "./teams/a", "")+"---\n"+fluxKs("team-b", "./teams/b", ""))
	if _, err := rec.Once(ctx, reconcile.Options{Trigger: "test", Refresh: true, All: true, ApproveDeletions: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Unit("Kustomization/flux-system/team-c"); ok {
		t.Error("team-c left Git but its unit is still recorded")
	}
	if n, _ := db.Resources(record.Filter{Namespace: "team-c"}); len(n) != 0 {
		t.Errorf("team-c left Git: %d resources still recorded", len(n))
	}
}

func armGet(t *testing.T, env *emutest.Env, id string) []byte {
	t.Helper()
	b, err := env.Client.Get(context.Background(), id, "2020-06-01")
	if err != nil {
		t.Fatalf("GET %s: %v", id, err)
	}
	return b
}

func tagOf(t *testing.T, env *emutest.Env, team string) string {
	t.Helper()
	body := armGet(t, env, "/subscriptions/"+env.Sub+"/resourceGroups/rg-"+team)
	var v struct {
		Tags map[string]string `json:"tags"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	return v.Tags["v"]
}

// wait and healthChecks make a unit Ready only when those ASO objects are
// Ready (Progressing until then, HealthCheckFailed after spec.timeout); the
// units a failed Kustomization declares keep their objects too
// (ParentNotReady), though the revision no longer lists them.
func TestUnitHealthAndParent(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	env := emutest.New(t)
	repo := &unitsRepo{t: t, root: t.TempDir()}
	repo.write("clusters/c/apps.yaml", fluxKs("apps", "./apps", ""))
	repo.write("apps/teams.yaml", fluxKs("team-w", "./teams/w", "  wait: true\n")+"---\n"+
		fluxKs("team-x", "./teams/x", "  timeout: 1s\n  healthChecks:\n"+
			"    - apiVersion: resources.azure.com/v1api20200601\n      kind: ResourceGroup\n      name: rg-team-x\n      namespace: team-x\n"+
			"    - apiVersion: managedidentity.azure.com/v1api20230131\n      kind: UserAssignedIdentity\n      name: id-elsewhere\n      namespace: team-x\n"))
	repo.write("teams/w/objects.yaml", teamObjects("team-w", "1"))
	repo.write("teams/x/objects.yaml", teamObjects("team-x", "1"))
	rec, db := repo.reconciler(env, render.Options{Kustomize: true, Flux: true, FluxPath: "clusters/c"})
	ctx := context.Background()
	once := func() *reconcile.Report {
		t.Helper()
		rep, err := rec.Once(ctx, reconcile.Options{Trigger: "test", Refresh: true, All: true})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	good := once().Run.Revision
	units, _ := db.Units()
	w, x := unitOf(t, units, "Kustomization/flux-system/team-w"), unitOf(t, units, "Kustomization/flux-system/team-x")
	if w.Ready.Status != record.StatusTrue || !strings.Contains(w.Ready.Message, "health checks passed") {
		t.Errorf("team-w (wait: true, its objects Ready): %+v", w.Ready)
	}
	if x.Ready.Status != record.StatusUnknown || x.Ready.Reason != manifest.ReasonProgressing || !strings.Contains(x.Ready.Message, "id-elsewhere") ||
		x.LastAppliedRevision != good || x.Parent != "Kustomization/flux-system/apps" {
		t.Errorf("team-x (a health check on an object nobody declares): %+v", x)
	}
	time.Sleep(1100 * time.Millisecond) // past team-x's spec.timeout
	once()
	units, _ = db.Units()
	if x = unitOf(t, units, "Kustomization/flux-system/team-x"); x.Ready.Status != record.StatusFalse || x.Ready.Reason != manifest.ReasonHealthCheckFailed {
		t.Errorf("team-x after its timeout: %+v, want HealthCheckFailed", x.Ready)
	}

	// apps breaks: the teams it declares are unknown at this revision.
	repo.write("clusters/c/apps.yaml", fluxKs("apps", "./apps-not-yet", ""))
	repo.write("teams/w/objects.yaml", teamObjects("team-w", "2"))
	rep := once()
	if rep.Run.Outcome != record.OutcomePartial {
		t.Errorf("outcome %s, want partial", rep.Run.Outcome)
	}
	for _, r := range rep.Plan.Resources {
		if r.Action != planner.NoOp {
			t.Errorf("%s planned %s: the units of a failed Kustomization keep their objects as last applied", r.ID(), r.Action)
		}
	}
	units, _ = db.Units()
	for _, id := range []string{"Kustomization/flux-system/team-w", "Kustomization/flux-system/team-x"} {
		if u := unitOf(t, units, id); u.Ready.Reason != manifest.ReasonParentNotReady || u.LastAppliedRevision != good {
			t.Errorf("%s: %+v, want ParentNotReady, last applied %s", id, u.Ready, good)
		}
	}
	if a := unitOf(t, units, "Kustomization/flux-system/apps"); a.Ready.Reason != manifest.ReasonBuildFailed {
		t.Errorf("apps: %+v", a.Ready)
	}
	if tag := tagOf(t, env, "team-w"); tag != "1" {
		t.Errorf("team-w's tag %q, want 1: its Kustomization is not known at this revision", tag)
	}
}

// reconciler is a reconciler over the repository with Flux rendering
// (opts), a state file of its own, against the emulator.
func (u *unitsRepo) reconciler(env *emutest.Env, opts render.Options) (*reconcile.Reconciler, *state.DB) {
	u.t.Helper()
	rnd, err := render.New(opts)
	if err != nil {
		u.t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(u.t.TempDir(), "state.db"))
	if err != nil {
		u.t.Fatal(err)
	}
	u.t.Cleanup(func() { db.Close() })
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	return reconcile.New(source.NewDir(u.root, "", source.WithRenderer(rnd)), db, env.Clients, cfg, nil), db
}
