package web_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
	"github.com/gitaso/gitaso/web"
)

// newcomerFixture is the demo's shape as a newcomer saw it (issue 26): 18
// resources in three namespaces, each a ResourceGroup with an identity, a
// storage account, its blob service and container, and a RoleAssignment
// that depends on the group and the identity. The API lists them by key, so
// authorization.azure.com/RoleAssignment comes before
// resources.azure.com/ResourceGroup.
func newcomerFixture(t *testing.T) (*httptest.Server, *state.DB, []record.Resource) {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Now().UTC().Truncate(time.Second)
	rev := "0123456789abcdef0123456789abcdef01234567"
	var rs []record.Resource
	add := func(ns, group, kind, name, armID string, deps ...string) string {
		r := record.Resource{Namespace: ns, Group: group, Version: "v1api20230101", Kind: kind, Name: name, ARMID: armID,
			Revision: rev, UpdatedAt: now.Add(-time.Minute), DependsOn: deps,
			Ready: record.Condition{Type: "Ready", Status: "True", Reason: "Succeeded", LastTransitionTime: now.Add(-time.Minute)}}
		rs = append(rs, r)
		return r.Key()
	}
	for i, team := range []string{"team-a", "team-b", "team-c"} {
		rgID := "/subscriptions/" + subscription + "/resourceGroups/" + team + "-rg"
		rg := add(team, "resources.azure.com", "ResourceGroup", team+"-rg", rgID)
		sa := strings.ReplaceAll(team, "-", "") + "storage"
		saID := rgID + "/providers/Microsoft.Storage/storageAccounts/" + sa
		id := add(team, "managedidentity.azure.com", "UserAssignedIdentity", team+"-identity",
			rgID+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"+team+"-identity", rg)
		st := add(team, "storage.azure.com", "StorageAccount", sa, saID, rg)
		bs := add(team, "storage.azure.com", "StorageAccountsBlobService", sa+"-blob", saID+"/blobServices/default", st)
		add(team, "storage.azure.com", "StorageAccountsBlobServicesContainer", "data", saID+"/blobServices/default/containers/data", bs)
		add(team, "authorization.azure.com", "RoleAssignment", team+"-contributor",
			rgID+fmt.Sprintf("/providers/Microsoft.Authorization/roleAssignments/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f%d", i), rg, id)
	}
	// One failing resource with a long message: its row stays one line too.
	rs[2].Ready = record.Condition{Type: "Ready", Status: "False", Severity: "Error", Reason: "AuthorizationFailed",
		Message: authzMessage, LastTransitionTime: now}
	err = db.Update(func(w *state.Writer) error {
		for _, r := range rs {
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		run := &record.Run{Revision: rev, Trigger: "startup", StartedAt: now.Add(-2 * time.Minute), FinishedAt: now.Add(-time.Minute),
			Outcome: record.OutcomeSucceeded, Counts: map[string]int{"create": len(rs)}, Summary: fmt.Sprintf("%d create", len(rs))}
		return w.PutRun(run)
	})
	if err != nil {
		t.Fatal(err)
	}
	h := api.New(db, api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), UI: web.Handler()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, db, rs
}

// TestBrowserResourceRowsOneLine: in a 1400×1000 window the 18 resources of
// the demo are each one line (the ARM ID shortened to its tail, the full ID
// in the cell's title and a copy button), the table needs no horizontal
// scrolling, and every row is visible without scrolling the page.
func TestBrowserResourceRowsOneLine(t *testing.T) {
	wd := newWebDriver(t)
	srv, _, rs := newcomerFixture(t)
	wd.open(srv.URL + "/#resources")
	wd.waitFor("18 resource rows", `return document.querySelectorAll('#resources-body tr').length === 18`)
	if dir := os.Getenv("GITASO_WEB_SCREENSHOTS"); dir != "" {
		wd.screenshot(filepath.Join(dir, "newcomer-resources.png"))
	}
	var m struct {
		Heights  []float64 `json:"heights"`
		Line     float64   `json:"line"`
		Visible  int       `json:"visible"`
		Overflow float64   `json:"overflow"`
	}
	wd.exec(&m, `
		const rows = [...document.querySelectorAll('#resources-body tr')];
		const td = rows[0].cells[0], cs = getComputedStyle(td);
		const line = parseFloat(cs.lineHeight) + parseFloat(cs.paddingTop) + parseFloat(cs.paddingBottom) + 1;
		const wrap = document.querySelector('#view-resources .tablewrap');
		return {
			heights: rows.map((r) => r.getBoundingClientRect().height),
			line: line,
			visible: rows.filter((r) => { const b = r.getBoundingClientRect(); return b.top >= 0 && b.bottom <= window.innerHeight; }).length,
			overflow: wrap.scrollWidth - wrap.clientWidth,
		};`)
	for i, h := range m.Heights {
		if h > m.Line*1.5 {
			t.Errorf("row %d is %.0f px high: more than one line (%.0f px)", i, h, m.Line)
		}
	}
	if m.Visible != len(rs) {
		t.Errorf("%d of %d rows visible in a 1400×1000 window", m.Visible, len(rs))
	}
	if m.Overflow > 0 {
		t.Errorf("the table is %.0f px wider than its box at 1400 px", m.Overflow)
	}
	for _, r := range rs {
		var cell struct {
			Title string `json:"title"`
			Text  string `json:"text"`
			Copy  bool   `json:"copy"`
		}
		wd.exec(&cell, `const td = document.querySelector('#resources-body tr[data-key="' + arguments[0] + '"] td.armid');
			return {title: td.querySelector('code').title, text: td.querySelector('code').textContent, copy: !!td.querySelector('button.copy')};`, r.Key())
		if cell.Title != r.ARMID {
			t.Errorf("%s: ARM ID title %q, want the full ID %q", r.Key(), cell.Title, r.ARMID)
		}
		if !strings.HasSuffix(r.ARMID, strings.TrimPrefix(cell.Text, "…/")) || len(cell.Text) >= len(r.ARMID) {
			t.Errorf("%s: ARM ID cell %q is not the shortened tail of %q", r.Key(), cell.Text, r.ARMID)
		}
		if !cell.Copy {
			t.Errorf("%s: no copy button for the ARM ID", r.Key())
		}
	}
}

// TestBrowserResourcesInDependencyOrder: each namespace's ResourceGroup row
// comes before the RoleAssignment (and everything else) that depends on it,
// and the table says how it is ordered.
func TestBrowserResourcesInDependencyOrder(t *testing.T) {
	wd := newWebDriver(t)
	srv, _, rs := newcomerFixture(t)
	wd.open(srv.URL + "/#resources")
	wd.waitFor("18 resource rows", `return document.querySelectorAll('#resources-body tr').length === 18`)
	var keys []string
	wd.exec(&keys, `return [...document.querySelectorAll('#resources-body tr')].map((r) => r.dataset.key)`)
	at := map[string]int{}
	for i, k := range keys {
		at[k] = i
	}
	for _, r := range rs {
		for _, d := range r.DependsOn {
			if at[d] > at[r.Key()] {
				t.Errorf("%s (row %d) is listed before %s (row %d), which it depends on", r.Key(), at[r.Key()], d, at[d])
			}
		}
	}
	if i, j := at[planner.Key("team-a", "resources.azure.com", "ResourceGroup", "team-a-rg")],
		at[planner.Key("team-a", "authorization.azure.com", "RoleAssignment", "team-a-contributor")]; i > j {
		t.Errorf("ResourceGroup row %d after RoleAssignment row %d", i, j)
	}
	if c := wd.str(`return document.getElementById('resources-caption').textContent`); !strings.Contains(c, "dependencies first") {
		t.Errorf("caption %q does not say the rows are in dependency order", c)
	}
}

// TestBrowserRunsCountsOnce: the runs table gives a run's counts once (the
// run's summary says the same and is not repeated).
func TestBrowserRunsCountsOnce(t *testing.T) {
	wd := newWebDriver(t)
	srv, _, _ := newcomerFixture(t)
	wd.open(srv.URL + "/#runs")
	wd.waitFor("the run row", `return document.querySelectorAll('#runs-body tr').length === 1`)
	row := wd.str(`return document.querySelector('#runs-body tr').innerText`)
	if n := strings.Count(row, "18 create"); n != 1 {
		t.Errorf("the run's counts appear %d times in its row: %q", n, row)
	}
	if dir := os.Getenv("GITASO_WEB_SCREENSHOTS"); dir != "" {
		wd.screenshot(filepath.Join(dir, "newcomer-runs.png"))
	}
}
