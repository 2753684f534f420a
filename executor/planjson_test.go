package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/internal/fixtures"
	"github.com/gitaso/gitaso/planner"
)

// TestPlanReadBackFromJSONAppliesIdentically applies a plan, then the same
// plan written to JSON and read back, against one emulator: every resource
// gets the same outcome and exactly the same request (the hash covers the
// whole body, secrets and values known only after apply included). The
// plan has a value known after apply (the identity's principalId read by
// the role assignment), a secret (the server's password) and a reference
// chain.
func TestPlanReadBackFromJSONAppliesIdentically(t *testing.T) {
	m := newEmu(t)
	g, p := m.graphPlan(t, fixtures.Onboarding, fixtures.Database("hunter2-very-secret"))
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back planner.Plan
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Resources) != len(p.Resources) {
		t.Fatalf("read back %d resources, want %d", len(back.Resources), len(p.Resources))
	}
	ex := executor.New(oneClient{m.cli}, executor.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	first, err := ex.Apply(context.Background(), p, planner.Values{Secrets: g})
	if err != nil {
		t.Fatal(err)
	}
	second, err := ex.Apply(context.Background(), &back, planner.Values{Secrets: g})
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		Outcome executor.Outcome
		Reason  string
		Hash    string
		Body    string
	}
	summary := func(res *executor.Result) map[string]outcome {
		out := map[string]outcome{}
		for _, rr := range res.Resources {
			out[rr.Key] = outcome{rr.Outcome, rr.Ready.Reason, rr.Hash, string(rr.Body)}
		}
		return out
	}
	a, b := summary(first), summary(second)
	for k, o := range a {
		if o.Outcome != executor.Applied || o.Hash == "" {
			t.Errorf("%s: in-memory plan: %+v", k, o)
		}
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("JSON plan applied differently (-memory +json):\n%s", diff)
	}
	if bytes.Contains(raw, []byte("hunter2-very-secret")) {
		t.Errorf("the JSON plan holds the secret value")
	}
}
