package record

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)

func TestMergeCondition(t *testing.T) {
	t1 := t0.Add(time.Hour)
	cond := func(status, severity, reason string, gen int64, ltt time.Time) Condition {
		return Condition{Type: ConditionReady, Status: status, Severity: severity, Reason: reason, Message: reason + " msg", ObservedGeneration: gen, LastTransitionTime: ltt}
	}
	var zero time.Time
	tests := []struct {
		name        string
		old, next   Condition
		want        Condition
		wantChanged bool
	}{
		{"first condition stamped now", Condition{}, cond("False", "Info", "Reconciling", 1, zero),
			cond("False", "Info", "Reconciling", 1, t1), true},
		{"newer generation wins even at lower priority", cond("True", "", "Succeeded", 1, t0), cond("Unknown", "", "Pending", 2, zero),
			cond("Unknown", "", "Pending", 2, t1), true},
		{"older generation never wins", cond("Unknown", "", "Pending", 2, t0), cond("True", "", "Succeeded", 1, zero),
			cond("Unknown", "", "Pending", 2, t0), false},
		{"same gen: Info does not replace True", cond("True", "", "Succeeded", 1, t0), cond("False", "Info", "Reconciling", 1, zero),
			cond("True", "", "Succeeded", 1, t0), false},
		{"same gen: Info does not replace Error", cond("False", "Error", "InvalidRequestContent", 1, t0), cond("False", "Info", "Deleting", 1, zero),
			cond("False", "Error", "InvalidRequestContent", 1, t0), false},
		{"same gen: Warning replaces Info, status unchanged keeps time", cond("False", "Info", "Reconciling", 1, t0), cond("False", "Warning", "Conflict", 1, t1),
			cond("False", "Warning", "Conflict", 1, t0), true},
		{"same gen: Info replaces Unknown and stamps transition", cond("Unknown", "", "", 1, t0), cond("False", "Info", "Reconciling", 1, zero),
			cond("False", "Info", "Reconciling", 1, t1), true},
		{"same gen: Unknown does not replace Info", cond("False", "Info", "Reconciling", 1, t0), cond("Unknown", "", "", 1, zero),
			cond("False", "Info", "Reconciling", 1, t0), false},
		{"same gen: True replaces Warning", cond("False", "Warning", "Conflict", 1, t0), cond("True", "", "Succeeded", 1, zero),
			cond("True", "", "Succeeded", 1, t1), true},
		{"same gen: Error replaces True", cond("True", "", "Succeeded", 1, t0), cond("False", "Error", "BadRequest", 1, zero),
			cond("False", "Error", "BadRequest", 1, t1), true},
		{"equivalent keeps first time", cond("False", "Warning", "Conflict", 1, t0), cond("False", "Warning", "Conflict", 1, t1),
			cond("False", "Warning", "Conflict", 1, t0), false},
		{"Reconciling replaces a fixed WaitingForOwner warning", cond("False", "Warning", "WaitingForOwner", 1, t0), cond("False", "Info", "Reconciling", 1, t1),
			cond("False", "Info", "Reconciling", 1, t0), true},
		{"Reconciling replaces SecretNotFound", cond("False", "Warning", "SecretNotFound", 1, t0), cond("False", "Info", "Reconciling", 1, t1),
			cond("False", "Info", "Reconciling", 1, t0), true},
		{"Reconciling does not replace an ARM error warning", cond("False", "Warning", "AuthorizationFailed", 1, t0), cond("False", "Info", "Reconciling", 1, t1),
			cond("False", "Warning", "AuthorizationFailed", 1, t0), false},
		{"another Info reason replaces a fixed ReferenceNotFound", cond("False", "Warning", "ReferenceNotFound", 1, t0), cond("False", "Info", "Deleting", 1, t1),
			cond("False", "Info", "Deleting", 1, t0), true},
		{"different type never replaces", cond("True", "", "Succeeded", 1, t0), Condition{Type: "Other", Status: "False", ObservedGeneration: 5},
			cond("True", "", "Succeeded", 1, t0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := MergeCondition(tt.old, tt.next, t1)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
