package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
	"github.com/gitaso/gitaso/web"
)

// twoPhaseFixture is the state after a first run that applied in two phases,
// written as the reconciler writes it: phase 1 (run 1) created the platform
// namespace's resources; phase 2 (run 2, phaseOf 1) the database's, whose
// values were known after apply, and found the platform's up to date. Each
// phase recorded its plan; the second kept the first's (KeepPhasePlan).
func twoPhaseFixture(t *testing.T) (srv *httptest.Server, p1, p2 *planner.Plan) {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	g1 := parse(t, map[string]string{"platform/team-a.yaml": onboarding})
	if p1, err = g1.Plan(planner.Input{}); err != nil {
		t.Fatal(err)
	}
	outs := planner.Outputs{planner.OutputKey("platform", false, "team-a-identity-settings", "principalId"): principalID}
	now := time.Now().UTC().Truncate(time.Second)
	prior := map[string]record.Resource{}
	for _, r := range p1.Resources {
		body, err := planner.Resolve(r, planner.Values{Outputs: outs, Secrets: g1})
		if err != nil {
			t.Fatal(err)
		}
		prior[r.Key()] = record.Resource{Namespace: r.Namespace, Group: r.Group, Version: r.Version, Kind: r.Kind, Name: r.Name,
			ARMID: r.ARMID, APIVersion: r.APIVersion, AppliedHash: planner.HashRequest(r.ARMID+"?api-version="+r.APIVersion, body.JSON),
			Generation: 1, Revision: p1.Revision, UpdatedAt: now, DependsOn: r.DependsOn,
			Ready: record.Condition{Type: "Ready", Status: "True", Reason: "Succeeded"}}
	}
	g2 := parse(t, map[string]string{"platform/team-a.yaml": onboarding, "db/pg.yaml": database})
	if p2, err = g2.Plan(planner.Input{Prior: prior, Outputs: outs}); err != nil {
		t.Fatal(err)
	}
	if p1.Revision != p2.Revision {
		t.Fatalf("fixture: phases of one run plan one revision: %s, %s", p1.Revision, p2.Revision)
	}
	enc := func(p *planner.Plan) []byte {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	counts := func(p *planner.Plan) map[string]int {
		c := map[string]int{}
		for a, n := range p.Summary() {
			c[a.String()] = n
		}
		return c
	}
	run1 := &record.Run{Revision: p1.Revision, Trigger: "startup", StartedAt: now.Add(-time.Minute), FinishedAt: now.Add(-50 * time.Second),
		Outcome: record.OutcomeSucceeded, Counts: counts(p1)}
	err = db.Update(func(w *state.Writer) error {
		if err := w.ClearPhasePlans(); err != nil {
			return err
		}
		if err := w.SetPlan(enc(p1)); err != nil {
			return err
		}
		for _, r := range prior {
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		return w.PutRun(run1)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(w *state.Writer) error {
		if err := w.KeepPhasePlan(run1.ID); err != nil {
			return err
		}
		if err := w.SetPlan(enc(p2)); err != nil {
			return err
		}
		return w.PutRun(&record.Run{Revision: p2.Revision, Trigger: "startup", StartedAt: now.Add(-50 * time.Second), FinishedAt: now.Add(-40 * time.Second),
			Outcome: record.OutcomeSucceeded, Counts: counts(p2), Phase: 2, PhaseOf: run1.ID})
	})
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(api.New(db, api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), UI: web.Handler()}))
	t.Cleanup(srv.Close)
	return srv, p1, p2
}

func renderPlan(t *testing.T, p *planner.Plan) string {
	t.Helper()
	var buf bytes.Buffer
	if err := planner.RenderText(&buf, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestBrowserPlanOfTwoPhaseRun: after a first run that applied in two
// phases, the Plan tab shows the run's whole plan (every resource the run
// created, phase by phase, each as `gitaso plan` prints it), not only the
// last phase's; the run page of the first phase shows its plan.
func TestBrowserPlanOfTwoPhaseRun(t *testing.T) {
	wd := newWebDriver(t)
	srv, p1, p2 := twoPhaseFixture(t)
	wd.open(srv.URL + "/#plan")
	wd.waitFor("the plan", `return document.getElementById('plan-text').textContent.includes('Plan:')`)
	// The phases are drawn with the last phase's plan (renderPlan), in one go.
	if dir := os.Getenv("GITASO_WEB_SCREENSHOTS"); dir != "" {
		wd.screenshot(filepath.Join(dir, "two-phase-plan.png"))
	}
	all := wd.str(`return document.getElementById('view-plan').innerText`)
	created := map[string]bool{}
	for _, p := range []*planner.Plan{p1, p2} {
		for _, r := range p.Resources {
			if r.Action == planner.Create {
				created[r.Namespace+"/"+r.Kind+"/"+r.Name] = true
			}
		}
	}
	if len(created) < 8 {
		t.Fatalf("fixture: %d resources created, want 8 or more", len(created))
	}
	for k := range created {
		if !strings.Contains(all, "# "+k+" will be created") {
			t.Errorf("the Plan tab does not list %s, which the run created:\n%s", k, all)
		}
	}
	if n := len(regexp.MustCompile(`will be created`).FindAllStringIndex(all, -1)); n != len(created) {
		t.Errorf("the Plan tab lists %d creations, want %d", n, len(created))
	}
	if got, want := wd.str(`const p = document.querySelector('#plan-phases pre'); return p ? p.textContent : ''`), renderPlan(t, p1); got != want {
		t.Errorf("phase 1's plan differs from the CLI's\n--- page\n%s\n--- cli\n%s", got, want)
	}
	if got, want := wd.str(`return document.getElementById('plan-text').textContent`), renderPlan(t, p2); got != want {
		t.Errorf("phase 2's plan differs from the CLI's\n--- page\n%s\n--- cli\n%s", got, want)
	}
	if h := wd.str(`return document.getElementById('h-plan').textContent`); h != "Plan of run #1, in 2 phases" {
		t.Errorf("plan heading %q", h)
	}

	wd.open(srv.URL + "/#run/1")
	wd.waitFor("the run's plan", `const p = document.getElementById('run-plan'); return !!p && p.textContent.includes('Plan:')`)
	if got, want := wd.str(`return document.getElementById('run-plan').textContent`), renderPlan(t, p1); got != want {
		t.Errorf("run 1's page shows another plan\n--- page\n%s\n--- cli\n%s", got, want)
	}
	wd.open(srv.URL + "/#runs")
	wd.waitFor("the runs", `return document.querySelectorAll('#runs-body tr').length === 2`)
	if row := wd.str(`return document.querySelector('#runs-body tr').innerText`); !strings.Contains(row, "phase 2 of #1") {
		t.Errorf("the second phase's row does not say so: %q", row)
	}
}
