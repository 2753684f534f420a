package e2e_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/reconcile"
)

func rgWithTag(name, tag string) string {
	return "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: " + name +
		"\n  namespace: ops\nspec:\n  location: westeurope\n  tags:\n    v: \"" + tag + "\"\n"
}

// save plans the branch (reading Azure) and returns the saved plan as it
// comes back from its file.
func (e *env) save() *reconcile.SavedPlan {
	e.t.Helper()
	rep, err := e.rec.PlanOnly(e.t.Context(), true)
	if err != nil {
		e.t.Fatal(err)
	}
	sp, err := e.rec.SavePlan(rep, true, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := sp.WriteTo(&b); err != nil {
		e.t.Fatal(err)
	}
	back, err := reconcile.ReadSavedPlan(&b)
	if err != nil {
		e.t.Fatal(err)
	}
	return back
}

// TestSavedPlan: `gitaso apply FILE` applies exactly the reviewed plan, and
// refuses a stale one (Terraform's saved-plan rule), applying nothing: the
// branch moved, another apply changed the state, Azure changed behind
// gitaso's back.
func TestSavedPlan(t *testing.T) {
	e := newEnv(t)
	e.commit("one group", map[string]string{"rg.yaml": rgWithTag("saved-rg", "1")})

	// Reviewed, then applied exactly.
	sp := e.save()
	if r := sp.Plan.Resources; len(r) != 1 || r[0].Action.String() != "create" {
		t.Fatalf("saved plan: %+v", r)
	}
	e.emu.ResetStats()
	if _, err := e.rec.ApplySaved(t.Context(), sp, false); err != nil {
		t.Fatalf("apply the saved plan: %v", err)
	}
	if puts := e.armRequests("PUT"); len(puts) != 1 || !strings.Contains(puts[0], "/saved-rg") {
		t.Errorf("PUTs %v, want the one of the plan", puts)
	}
	// Applying it twice: the state changed since (it was applied).
	if _, err := e.rec.ApplySaved(t.Context(), sp, false); !errors.Is(err, reconcile.ErrStalePlan) || !strings.Contains(err.Error(), "was applied since") {
		t.Errorf("the same plan applied again: %v, want stale (applied since)", err)
	}

	// The branch moved after the review.
	e.commit("tag 2", map[string]string{"rg.yaml": rgWithTag("saved-rg", "2")})
	sp = e.save()
	e.commit("tag 3", map[string]string{"rg.yaml": rgWithTag("saved-rg", "3")})
	e.emu.ResetStats()
	if _, err := e.rec.ApplySaved(t.Context(), sp, false); !errors.Is(err, reconcile.ErrStalePlan) || !strings.Contains(err.Error(), "the branch is at") {
		t.Errorf("branch moved: %v, want stale", err)
	}
	if w := e.armRequests("PUT", "DELETE"); len(w) != 0 {
		t.Errorf("a stale plan wrote to Azure: %v", w)
	}

	// Azure changed behind gitaso's back after the review: what the plan
	// read no longer holds.
	e.run(true) // tag 3 applied
	e.commit("tag 4", map[string]string{"rg.yaml": rgWithTag("saved-rg", "4")})
	sp = e.save()
	e.mustPut(e.rgID("saved-rg"), "2020-06-01", `{"location":"westeurope","tags":{"v":"by hand","extra":"x"}}`)
	e.emu.ResetStats()
	_, err := e.rec.ApplySaved(t.Context(), sp, false)
	if !errors.Is(err, reconcile.ErrStalePlan) || !strings.Contains(err.Error(), "Azure no longer matches what the plan read") {
		t.Errorf("Azure changed: %v, want stale", err)
	}
	if w := e.armRequests("PUT", "DELETE"); len(w) != 0 {
		t.Errorf("a stale plan wrote to Azure: %v", w)
	}
	// Planned again, it applies.
	if _, err := e.rec.ApplySaved(t.Context(), e.save(), false); err != nil {
		t.Errorf("a fresh plan: %v", err)
	}
}
