package planner_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

func rgManifest(name, policy string, tags string) string {
	ann := ""
	if policy != "" {
		ann = "  annotations:\n    serviceoperator.azure.com/reconcile-policy: " + policy + "\n"
	}
	return "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: " + name + "\n  namespace: ops\n" + ann +
		"spec:\n  location: westeurope\n  tags:\n    team: " + tags + "\n"
}

func rgID(name string) string { return "/subscriptions/" + sub + "/resourceGroups/" + name }

func rgObject(name string, policy aso.ReconcilePolicy, id string) planner.ASOObject {
	o := planner.ASOObject{Namespace: "ops", Group: "resources.azure.com", Version: "v1api20200601", Kind: "ResourceGroup", Name: name,
		ARMID: id, APIVersion: "2020-06-01", Policy: aso.ReconcilePolicyManage,
		Ready: record.Condition{Type: "Ready", Status: "True", Reason: "Succeeded", ObservedGeneration: 1}, Generation: 1}
	if policy != "" {
		o.Policy, o.PolicySet = policy, true
	}
	return o
}

func observedRG(name, team string) json.RawMessage {
	return json.RawMessage(`{"id":"` + rgID(name) + `","name":"` + name + `","location":"westeurope","tags":{"team":"` + team + `"},"properties":{"provisioningState":"Succeeded"}}`)
}

// TestBesideASO: a plan with no state against Azure becomes what ASO would do given the cluster's objects.
func TestBesideASO(t *testing.T) {
	g := build(t, map[string]string{
		"same.yaml":     rgManifest("same", "", "a"),
		"changed.yaml":  rgManifest("changed", "", "b"),
		"lost.yaml":     rgManifest("lost", "", "a"),
		"adopted.yaml":  rgManifest("adopted", "", "a"),
		"new.yaml":      rgManifest("new", "", "a"),
		"skipped.yaml":  rgManifest("skipped", "", "b"),
		"explicit.yaml": rgManifest("explicit", "manage", "b"),
	})
	observed := planner.Observed{}
	for _, n := range []string{"same", "changed", "adopted", "skipped", "explicit", "gone"} {
		observed[strings.ToLower(rgID(n))] = observedRG(n, "a")
	}
	observed[strings.ToLower(rgID("lost"))] = nil
	observed[strings.ToLower(rgID("new"))] = nil
	uai := planner.ASOObject{Namespace: "ops", Group: "managedidentity.azure.com", Kind: "UserAssignedIdentity", Name: "in-gone",
		ARMID: rgID("gone") + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/in-gone", APIVersion: "2023-01-31", Policy: aso.ReconcilePolicyManage}
	objs := []planner.ASOObject{
		rgObject("same", "", rgID("same")), rgObject("changed", "", rgID("changed")), rgObject("lost", "", rgID("lost")),
		rgObject("skipped", aso.ReconcilePolicySkip, rgID("skipped")), rgObject("explicit", aso.ReconcilePolicySkip, rgID("explicit")),
		rgObject("gone", "", rgID("gone")), uai,
		rgObject("kept", aso.ReconcilePolicyDetachOnDelete, rgID("kept")), rgObject("read", aso.ReconcilePolicySkip, rgID("read")),
		rgObject("never", "", ""),
	}
	p, err := g.Plan(planner.Input{Observed: observed})
	if err != nil {
		t.Fatal(err)
	}
	planner.BesideASO(p, objs, nil)
	want := map[string]planner.Action{
		"ops/ResourceGroup/same": planner.NoOp, "ops/ResourceGroup/changed": planner.Update, "ops/ResourceGroup/lost": planner.Create,
		"ops/ResourceGroup/adopted": planner.Adopt, "ops/ResourceGroup/new": planner.Create, "ops/ResourceGroup/skipped": planner.Observe,
		"ops/ResourceGroup/explicit": planner.Update, // the manifest's own policy wins: Flux applies it over the object's
		"ops/ResourceGroup/gone":     planner.Delete, "ops/UserAssignedIdentity/in-gone": planner.Delete,
		"ops/ResourceGroup/kept": planner.Detach, "ops/ResourceGroup/read": planner.Detach, "ops/ResourceGroup/never": planner.Detach,
	}
	if len(p.Resources) != len(want) {
		t.Errorf("%d resources, want %d", len(p.Resources), len(want))
	}
	for _, r := range p.Resources {
		if want[r.ID()] != r.Action {
			t.Errorf("%s: %s (%s), want %s", r.ID(), r.Action, r.Reason, want[r.ID()])
		}
	}
	if r := p.Get(planner.Key("ops", "resources.azure.com", "ResourceGroup", "gone")); r.Request == nil || r.Request.Method != "DELETE" || r.Request.Path != rgID("gone")+"?api-version=2020-06-01" {
		t.Errorf("gone: request %+v, want ASO's DELETE", r.Request)
	}
	if r := p.Get(planner.Key("ops", "managedidentity.azure.com", "UserAssignedIdentity", "in-gone")); r.DeletedWith == "" || r.Request != nil {
		t.Errorf("in-gone: deleted with %q request %+v, want ARM's cascade with its resource group", r.DeletedWith, r.Request)
	}
	if r := p.Get(planner.Key("ops", "resources.azure.com", "ResourceGroup", "lost")); !strings.Contains(r.Reason, "re-create") {
		t.Errorf("lost: %q", r.Reason)
	}
	if p.Beside == nil || !p.Beside.Cluster || p.Beside.Objects != len(objs) {
		t.Errorf("beside %+v", p.Beside)
	}
	var text bytes.Buffer
	if err := planner.RenderText(&text, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"Beside ASO: gitaso writes nothing",
		`aso        = "ops/ResourceGroup/changed, policy manage, Ready True (Succeeded)"`,
		"ASO would do: 2 to create, 1 to adopt, 2 to update, 0 drifted to correct, 2 to delete, 3 to detach; 1 unchanged, 1 observed.",
	} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}

	// No cluster: Azure alone, said so.
	p2, _ := g.Plan(planner.Input{Observed: observed})
	planner.BesideASO(p2, nil, nil)
	if p2.Beside.Cluster || len(p2.Resources) != 7 {
		t.Errorf("without a cluster: %+v, %d resources", p2.Beside, len(p2.Resources))
	}
	if r := p2.Get(planner.Key("ops", "resources.azure.com", "ResourceGroup", "same")); r.Action != planner.Adopt || r.Reason != "exists in Azure: ASO would PUT over it" {
		t.Errorf("without a cluster, same: %s (%s)", r.Action, r.Reason)
	}
}

// TestRefuseASOManaged: managing, a resource whose ARM ID an ASO object manages (manage or
// detach-on-delete; by key while the object has no status.id) is refused, naming the object; skip is none.
func TestRefuseASOManaged(t *testing.T) {
	g := build(t, map[string]string{
		"a.yaml": rgManifest("a", "", "x"), "b.yaml": rgManifest("b", "", "x"), "c.yaml": rgManifest("c", "", "x"),
		"d.yaml": rgManifest("d", "", "x"), "e.yaml": rgManifest("e", "skip", "x"),
	})
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	other := rgObject("elsewhere", "", rgID("a"))
	other.Namespace = "aso-team"
	objs := []planner.ASOObject{
		other, rgObject("b", aso.ReconcilePolicyDetachOnDelete, rgID("b")), rgObject("c", aso.ReconcilePolicySkip, rgID("c")),
		rgObject("d", "", ""), rgObject("e", "", rgID("e")),
	}
	if n := planner.RefuseASOManaged(p, objs); n != 3 {
		t.Errorf("%d refused, want 3 (a, b, d)", n)
	}
	for _, r := range p.Resources {
		want := r.Name == "a" || r.Name == "b" || r.Name == "d"
		if r.ManagedByASO != want {
			t.Errorf("%s: refused %v, want %v", r.ID(), r.ManagedByASO, want)
		}
	}
	a := p.Get(planner.Key("ops", "resources.azure.com", "ResourceGroup", "a"))
	if msg := a.ManagedByASOMessage(); !strings.HasPrefix(msg, "ASO object aso-team/ResourceGroup/elsewhere in the cluster manages "+rgID("a")+" (reconcile-policy manage)") {
		t.Errorf("message %q", msg)
	}
	var text, md bytes.Buffer
	if err := planner.RenderText(&text, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := planner.RenderMarkdown(&md, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "# refused: ASO object aso-team/ResourceGroup/elsewhere") || !strings.Contains(text.String(), "Refused: 3 resources") {
		t.Errorf("text:\n%s", text.String())
	}
	if !strings.Contains(md.String(), "| ⛔ refused (create) | `ops/ResourceGroup/a` |") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// TestBesideASOFailedUnit: an object a Flux unit applied is not one ASO would delete while that unit fails
// to render (Flux prunes nothing of a unit it cannot build); one of a unit that rendered is.
func TestBesideASOFailedUnit(t *testing.T) {
	g := build(t, map[string]string{"a.yaml": rgManifest("a", "", "x")})
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	p.Units = []record.Unit{
		{Kind: "Kustomization", Namespace: "flux-system", Name: "broken", Ready: record.Condition{Type: "Ready", Status: "False", Reason: "BuildFailed"}},
		{Kind: "Kustomization", Namespace: "flux-system", Name: "apps", Ready: record.Condition{Type: "Ready", Status: "True"}},
	}
	broken, apps := rgObject("of-broken", "", rgID("of-broken")), rgObject("of-apps", "", rgID("of-apps"))
	broken.Unit, apps.Unit = "Kustomization/flux-system/broken", "Kustomization/flux-system/apps"
	planner.BesideASO(p, []planner.ASOObject{broken, apps}, nil)
	if r := p.Get(planner.Key("ops", "resources.azure.com", "ResourceGroup", "of-broken")); r != nil {
		t.Errorf("an object of the failed unit is planned: %s (%s)", r.Action, r.Reason)
	}
	if r := p.Get(planner.Key("ops", "resources.azure.com", "ResourceGroup", "of-apps")); r == nil || r.Action != planner.Delete {
		t.Errorf("the object of the unit that rendered: %+v, want a delete", r)
	}
}
