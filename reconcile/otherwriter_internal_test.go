package reconcile

import (
	"testing"
	"time"

	"github.com/gitaso/gitaso/azure"
)

// TestByOtherWriter: which Activity Log events count as another writer
// using gitaso's principal.
func TestByOtherWriter(t *testing.T) {
	const id = "/subscriptions/s/resourceGroups/rg"
	start := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	var a activityState
	a.init()
	a.noteWrite(id, start.Add(10*time.Minute), start.Add(10*time.Minute+2*time.Second), true)  // applied
	a.noteWrite(id, start.Add(20*time.Minute), start.Add(20*time.Minute+2*time.Second), false) // failed attempt
	mine := []string{"046c0e63-1242-4f75-85c7-12aa60ca7882"}
	ev := func(at time.Duration, status, caller string) azure.ActivityEvent {
		return azure.ActivityEvent{ResourceID: id, Operation: "Microsoft.Resources/subscriptions/resourceGroups/write",
			Time: start.Add(at), Status: status, Caller: caller}
	}
	for _, tc := range []struct {
		name string
		ev   azure.ActivityEvent
		skew time.Duration
		want bool
	}{
		{"a write with gitaso's principal it did not make", ev(5*time.Minute, "Succeeded", mine[0]), 0, true},
		{"the caller in another case", ev(5*time.Minute, "Succeeded", "046C0E63-1242-4F75-85C7-12AA60CA7882"), 0, true},
		{"within an applied write", ev(10*time.Minute+time.Second, "Succeeded", mine[0]), 0, false},
		{"within a failed attempt", ev(20*time.Minute+time.Second, "Succeeded", mine[0]), 0, false},
		{"just after a write, without margin", ev(10*time.Minute+30*time.Second, "Succeeded", mine[0]), 0, true},
		{"just after a write, within the margin", ev(10*time.Minute+30*time.Second, "Succeeded", mine[0]), time.Minute, false},
		{"another principal (plain drift)", ev(5*time.Minute, "Succeeded", "someone@example.com"), 0, false},
		{"started, not succeeded", ev(5*time.Minute, "Started", mine[0]), 0, false},
		{"failed", ev(5*time.Minute, "Failed", mine[0]), 0, false},
		{"before this process started", ev(-time.Minute, "Succeeded", mine[0]), 0, false},
		{"within the margin after the start", ev(30*time.Second, "Succeeded", mine[0]), time.Minute, false},
	} {
		if got := a.byOtherWriter(ownKey(id), tc.ev, mine, start, tc.skew); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if a.byOtherWriter(ownKey(id), ev(5*time.Minute, "Succeeded", mine[0]), nil, start, 0) {
		t.Error("an unknown principal (no caller names) found another writer")
	}
}
