package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// TestBrowserRefusedBanner: when the newest run refused its revision the
// page says which revision, its errors and the revision that stays applied;
// a later run that succeeds takes the banner away.
func TestBrowserRefusedBanner(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	if banner := element(t, dumpDOM(t, f.srv.URL+"/"), "section", `id="refused"`); !strings.Contains(banner, "hidden") || text(banner) != "" {
		t.Errorf("a refused banner without a refused run: %s", banner)
	}
	const applied, refused = "a11ed0000000000000000000000000000000000a", "bad0c0ffee000000000000000000000000000000"
	now := time.Now().UTC()
	if err := f.db.Update(func(w *state.Writer) error {
		if err := w.SetLastGoodRevision(applied); err != nil {
			return err
		}
		return w.PutRun(&record.Run{Revision: refused, Trigger: "interval", StartedAt: now.Add(-2 * time.Second), FinishedAt: now.Add(-time.Second),
			Outcome: record.OutcomeRefused,
			Error:   "revision refused: revision " + refused + " refused (2 errors):\napps/rg.yaml:7: ops/ResourceGroup/rg: ${LOCATION}: variable is not set\napps/sa.yaml:3: ops/StorageAccount/sa: spec.sku: required"})
	}); err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, f.srv.URL+"/#resources")
	banner := element(t, dom, "section", `id="refused"`)
	if strings.Contains(banner[:strings.Index(banner, ">")], "hidden") {
		t.Fatalf("refused banner hidden: %s", banner)
	}
	b := text(banner)
	for _, want := range []string{"Revision " + refused[:12] + " is refused", "nothing of it is applied",
		"Revision " + applied[:12] + " stays applied", "apps/rg.yaml:7: ops/ResourceGroup/rg: ${LOCATION}: variable is not set",
		"apps/sa.yaml:3: ops/StorageAccount/sa: spec.sku: required"} {
		if !strings.Contains(b, want) {
			t.Errorf("banner lacks %q:\n%s", want, b)
		}
	}
	if err := f.db.Update(func(w *state.Writer) error {
		return w.PutRun(&record.Run{Revision: "c1ea0000", Trigger: "interval", StartedAt: now, FinishedAt: now.Add(time.Second), Outcome: record.OutcomeSucceeded})
	}); err != nil {
		t.Fatal(err)
	}
	if banner := element(t, dumpDOM(t, f.srv.URL+"/"), "section", `id="refused"`); !strings.Contains(banner, "hidden") {
		t.Errorf("the banner stays after a run succeeded: %s", banner)
	}
}
