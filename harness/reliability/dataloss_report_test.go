package reliability

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPrintDataLossReportCountsFindings(t *testing.T) {
	cases := []DataLossCase{
		{Name: "kept", Outcome: "refused, 0 deleted", Held: true},
		{Name: "lost", Outcome: "2 deleted", Held: false},
		{Name: "broken", Err: errors.New("emulator down\nmore")},
	}
	var b strings.Builder
	if n := PrintDataLossReport(&b, cases, time.Second); n != 2 {
		t.Fatalf("findings = %d, want 2\n%s", n, b.String())
	}
	out := b.String()
	for _, want := range []string{"2 deleted !", "error: emulator down !", "refused, 0 deleted  "} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestDataLossCasesHaveUniqueNamesAndTexts(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range DataLossSpecs() {
		if s.Name == "" || s.What == "" || s.Want == "" || s.Run == nil {
			t.Errorf("case %q: name, what, want and run are required", s.Name)
		}
		if seen[s.Name] {
			t.Errorf("case %q registered twice", s.Name)
		}
		seen[s.Name] = true
	}
}
