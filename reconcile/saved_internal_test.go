package reconcile

import (
	"errors"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/planner"
)

// A later phase of a saved plan's apply may change only the objects the
// saved plan showed as known after apply.
func TestOnlyDeferred(t *testing.T) {
	rg := func(ns, name string, a planner.Action) *planner.Resource {
		return &planner.Resource{Namespace: ns, Group: "resources.azure.com", Kind: "ResourceGroup", Name: name, Action: a}
	}
	sp := &SavedPlan{Plan: &planner.Plan{Deferred: []*planner.Deferred{
		{Namespace: "team", Group: "resources.azure.com", Kind: "ResourceGroup", Name: "team-rg"}}}}
	ok := &planner.Plan{Resources: []*planner.Resource{rg("team", "team-rg", planner.Create), rg("platform", "platform-rg", planner.NoOp),
		rg("platform", "watched", planner.Observe)}}
	if err := onlyDeferred(sp, ok); err != nil {
		t.Errorf("the deferred object and no-ops: %v", err)
	}
	for _, a := range []planner.Action{planner.Update, planner.Delete, planner.Create, planner.Drift} {
		beyond := &planner.Plan{Resources: []*planner.Resource{rg("team", "team-rg", planner.Create), rg("platform", "platform-rg", a)}}
		err := onlyDeferred(sp, beyond)
		if !errors.Is(err, ErrBeyondSavedPlan) || !strings.Contains(err.Error(), "platform/ResourceGroup/platform-rg would be "+a.String()) {
			t.Errorf("%s of another resource: %v", a, err)
		}
	}
}
