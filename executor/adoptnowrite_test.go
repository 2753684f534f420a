package executor_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
)

const taggedRG = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: tagged
  namespace: team
spec:
  location: westeurope
  tags:
    owner: team`

// An adoption without a write (the state rebuilt) sends no PUT: the apply
// reads the object, records the hash of the body it would PUT and computes
// the exports (ConfigMaps, Secrets, CEL) from the read. An object that
// changed in Azure between the plan and the apply is PUT as any adoption.
func TestAdoptWithoutWrite(t *testing.T) {
	m := newEmu(t)
	applied := m.apply(t, rg, taggedRG, identity)
	for _, rr := range applied {
		mustOK(t, rr)
	}
	objs, err := source.ParseFile("test.yaml", []byte(strings.Join([]string{rg, taggedRG, identity}, "\n---\n")))
	if err != nil {
		t.Fatal(err)
	}
	g, err := planner.Build(&manifest.Snapshot{Revision: "test", Objects: objs}, planner.Options{SubscriptionID: m.sub})
	if err != nil {
		t.Fatal(err)
	}
	observed := planner.Observed{}
	for _, n := range g.Nodes {
		b, err := m.cli.Get(context.Background(), n.ARMID, n.Kind.APIVersion)
		if err != nil {
			t.Fatal(err)
		}
		observed[strings.ToLower(n.ARMID)] = b
	}
	p, err := g.Plan(planner.Input{Observed: observed, AdoptWithoutWrite: "state rebuilt"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Resources {
		if r.Action != planner.Adopt || !r.NoWrite || r.Request != nil {
			t.Fatalf("%s planned %s noWrite %v (%s)", r.ID(), r.Action, r.NoWrite, r.Reason)
		}
	}
	// Changed in Azure after the plan.
	taggedID := p.Get(planner.Key("team", "resources.azure.com", "ResourceGroup", "tagged")).ARMID
	if _, err := m.cli.Put(context.Background(), taggedID, "2020-06-01", []byte(`{"location":"westeurope","tags":{"owner":"ops"}}`)); err != nil {
		t.Fatal(err)
	}
	m.e.ResetStats()
	ex := executor.New(oneClient{m.cli}, executor.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	res, err := ex.Apply(context.Background(), p, planner.Values{Secrets: g})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*executor.ResourceResult{}
	for _, rr := range res.Resources {
		got[rr.Resource.Name] = rr
	}
	var puts []string
	for _, l := range m.e.RequestLog() {
		if l.Method != "GET" && !strings.Contains(l.Path, "/operations/") {
			puts = append(puts, l.Method+" "+l.Path)
		}
	}
	if len(puts) != 1 || !strings.HasSuffix(strings.ToLower(strings.Split(puts[0], "?")[0]), "/resourcegroups/tagged") {
		t.Errorf("writes %v, want only the PUT of the group changed since the plan", puts)
	}
	if rr := got["tagged"]; rr.Outcome != executor.Applied || rr.Hash != applied["tagged"].Hash {
		t.Errorf("changed group: outcome %s (%v), hash %s, want applied with %s", rr.Outcome, rr.Err, rr.Hash, applied["tagged"].Hash)
	}
	for _, name := range []string{"rg", "team-identity"} {
		rr := got[name]
		if rr.Outcome != executor.Adopted || rr.Err != nil || rr.Ready.Status != "True" || rr.Hash != applied[name].Hash ||
			string(rr.Body) != string(applied[name].Body) {
			t.Errorf("%s: outcome %s (%v), ready %+v, hash %s (applied %s)", name, rr.Outcome, rr.Err, rr.Ready, rr.Hash, applied[name].Hash)
		}
	}
	uai := got["team-identity"]
	var body struct {
		Properties struct{ ClientID string }
	}
	if err := json.Unmarshal(uai.Response, &body); err != nil || body.Properties.ClientID == "" {
		t.Fatalf("identity read: %s, %v", uai.Response, err)
	}
	want := applied["team-identity"]
	if uai.Outputs["identity-settings"]["clientId"] != body.Properties.ClientID ||
		uai.Secrets["identity-secret"]["AZURE_CLIENT_ID"] != body.Properties.ClientID ||
		uai.Outputs["identity-expr"]["summary"] != want.Outputs["identity-expr"]["summary"] ||
		uai.Secrets["identity-secret-expr"]["env"] != want.Secrets["identity-secret-expr"]["env"] {
		t.Errorf("exports without a write: %v / secrets %d, want those of the apply: %v", uai.Outputs, len(uai.Secrets), want.Outputs)
	}
}
