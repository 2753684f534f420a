package executor_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
)

// A plan that writes nothing (gitaso import, handover) never PUTs: an
// adoption without a write whose object changed in Azure since the plan
// fails with ErrChangedSincePlan (fails before: it was PUT, as any
// adoption).
func TestWriteNothingNeverPuts(t *testing.T) {
	m := newEmu(t)
	for _, rr := range m.apply(t, rg, taggedRG) {
		mustOK(t, rr)
	}
	objs, err := source.ParseFile("test.yaml", []byte(rg+"\n---\n"+taggedRG))
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
	p, err := g.Plan(planner.Input{Observed: observed, AdoptWithoutWrite: "import from ASO"})
	if err != nil {
		t.Fatal(err)
	}
	p.WriteNothing = true
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
	for _, l := range m.e.RequestLog() {
		if l.Method != "GET" {
			t.Errorf("a plan that writes nothing sent %s %s", l.Method, l.Path)
		}
	}
	for _, rr := range res.Resources {
		switch rr.Resource.Name {
		case "tagged":
			if rr.Outcome != executor.Failed || !errors.Is(rr.Err, executor.ErrChangedSincePlan) {
				t.Errorf("changed group: %s (%v), want failed with ErrChangedSincePlan", rr.Outcome, rr.Err)
			}
		default:
			if rr.Outcome != executor.Adopted {
				t.Errorf("%s: %s (%v), want adopted", rr.Resource.Name, rr.Outcome, rr.Err)
			}
		}
	}
}
