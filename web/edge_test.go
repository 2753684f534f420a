package web_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
	"github.com/gitaso/gitaso/web"
)

// edgePlan exercises every branch of planner.RenderText and values whose
// JSON or Go quoting differs from JavaScript's defaults: HTML characters
// (Go escapes them), integer-like map keys (JavaScript orders them first),
// control characters, non-ASCII, exponents, empty collections.
const edgePlan = `{"revision":"dir-/work/repo","resources":[
 {"namespace":"ns","group":"resources.azure.com","version":"v1api20200601","kind":"ResourceGroup","name":"rg","action":"no-op",
  "armId":"/subscriptions/s/resourceGroups/rg","apiVersion":"2020-06-01","policy":"manage","warnings":["an unchanged <resource> warns & says so"]},
 {"namespace":"ns","group":"storage.azure.com","version":"v1api20230101","kind":"StorageAccount","name":"sa\"q","action":"create",
  "armId":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/sa","apiVersion":"2023-01-01","policy":"manage",
  "file":"ns/sa.yaml","line":7,"credential":"team-cred",
  "request":{"method":"PUT","path":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/sa?api-version=2023-01-01",
   "body":{"tags":{"a<b":"x&y>z","10":"ten","2":"two","b":"tab\there\nnl"},"n":1.5,"big":1e21,"small":1e-7,"neg":-3,"empty":{},"list":[],
           "arr":[{"k":true},null,"é\u2028ü"],"pw":"(sensitive value)","principal":"(known after apply)","ctl":"\u0001\u007f",
           "tok":"(sensitive value from Secret ns/tokens)"}},
  "knownAfterApply":["/principal"],"sensitive":{"/tok":"Secret ns/tokens"},"secretSources":["Secret ns/tokens"],
  "warnings":["storage.azure.com/v1beta20210401 StorageAccount was removed in ASO v2.4.0 (last in v2.3.0)","a second warning"]},
 {"namespace":"ns","group":"storage.azure.com","version":"v1api20230101","kind":"StorageAccount","name":"adopted","action":"adopt",
  "armId":"/x/adopted","apiVersion":"2023-01-01","policy":"manage",
  "request":{"method":"PUT","path":"/x/adopted?api-version=2023-01-01","body":{}}},
 {"namespace":"ns","group":"storage.azure.com","version":"v1api20230101","kind":"StorageAccount","name":"drifted","action":"drift","reason":"changed in Azure",
  "armId":"/x/drifted","apiVersion":"2023-01-01","policy":"manage",
  "request":{"method":"PUT","path":"/x/drifted?api-version=2023-01-01"},
  "changes":[{"path":"/tags","op":"replace","before":{"z":1,"3":"x"},"after":{"a":[1,2]}},
             {"path":"/properties/x~1y","op":"add","after":"<new>"},
             {"path":"/properties/old","op":"remove","before":12345678901},
             {"path":"/properties/pw","op":"replace","sensitive":true},
             {"path":"/tags/token","op":"replace","sensitive":true},
             {"path":"/properties/id","op":"replace","before":"a","after":"(known after apply)","knownAfterApply":true}],
  "knownAfterApply":["/properties/id"],"sensitive":{"/tags/token":"Secret ns/tokens"}},
 {"namespace":"ns","group":"authorization.azure.com","version":"v1api20220401","kind":"RoleAssignment","name":"ra","action":"update",
  "armId":"/x/ra","apiVersion":"2022-04-01","policy":"manage",
  "request":{"method":"PUT","path":"/x/ra?api-version=2022-04-01"},"knownAfterApply":["/properties/principalId"]},
 {"namespace":"ns","group":"storage.azure.com","version":"v1api20230101","kind":"StorageAccountsBlobService","name":"gone","action":"delete",
  "armId":"/x/gone/blobServices/default","apiVersion":"2023-01-01","policy":"manage","deletedWith":"ns/storage.azure.com/StorageAccount/old"},
 {"namespace":"ns","group":"storage.azure.com","version":"v1api20230101","kind":"StorageAccount","name":"old","action":"delete",
  "armId":"/x/old","apiVersion":"2023-01-01","policy":"manage","request":{"method":"DELETE","path":"/x/old?api-version=2023-01-01"}},
 {"namespace":"ns","group":"storage.azure.com","version":"v1api20230101","kind":"StorageAccount","name":"kept","action":"detach",
  "armId":"/x/kept","apiVersion":"2023-01-01","policy":"detach-on-delete"},
 {"namespace":"ns","group":"storage.azure.com","version":"v1api20230101","kind":"StorageAccount","name":"watched","action":"observe",
  "armId":"/x/watched","apiVersion":"2023-01-01","policy":"skip","credential":"global"}
]}`

// serveState serves api.New over db with the page as its UI.
func serveState(t testing.TB, db *state.DB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(api.New(db, api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), UI: web.Handler()}))
	t.Cleanup(srv.Close)
	return srv
}

func openState(t testing.TB) *state.DB {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestBrowserPlanEdgeCasesMatchCLI(t *testing.T) {
	chromiumPath(t)
	p, err := planner.ReadJSON(strings.NewReader(edgePlan))
	if err != nil {
		t.Fatal(err)
	}
	db := openState(t)
	if err := db.Update(func(w *state.Writer) error { return w.SetPlan([]byte(edgePlan)) }); err != nil {
		t.Fatal(err)
	}
	srv := serveState(t, db)
	var want bytes.Buffer
	if err := planner.RenderText(&want, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	got := text(element(t, dumpDOM(t, srv.URL+"/#plan"), "pre", `id="plan-text"`))
	if got != want.String() {
		t.Errorf("page plan differs from the CLI's text plan\n--- page\n%s\n--- cli\n%s", got, want.String())
	}
}

// A fresh gitaso (no resources, runs or plan yet) says so instead of showing
// empty tables.
func TestBrowserEmptyState(t *testing.T) {
	chromiumPath(t)
	srv := serveState(t, openState(t))
	dom := dumpDOM(t, srv.URL+"/")
	for _, want := range []string{"gitaso manages no resources yet.", "no run yet"} {
		if !strings.Contains(text(dom), want) {
			t.Errorf("empty resources view lacks %q", want)
		}
	}
	if !strings.Contains(text(element(t, dumpDOM(t, srv.URL+"/#plan"), "p", `id="plan-empty"`)), "No plan yet") {
		t.Error("empty plan view does not say there is no plan yet")
	}
	if strings.Contains(dumpDOM(t, srv.URL+"/#runs"), `id="runs-empty" class="empty" hidden`) {
		t.Error("empty runs view hides its 'No runs yet'")
	}
}

// Without the API behind it the page reports the failure in an alert.
func TestBrowserAPIUnavailable(t *testing.T) {
	chromiumPath(t)
	srv := httptest.NewServer(web.Handler())
	t.Cleanup(srv.Close)
	alert := element(t, dumpDOM(t, srv.URL+"/"), "div", `id="alert"`)
	if strings.Contains(alert, " hidden") || !strings.Contains(text(alert), "404") {
		t.Errorf("alert %q does not report the failing API", alert)
	}
}

// With thousands of resources the table shows the first page (500) and says
// how many there are; "Load more" is offered (see TestBrowserLoadMore).
func TestBrowserManyResources(t *testing.T) {
	chromiumPath(t)
	db := openState(t)
	const n = 3000
	err := db.Update(func(w *state.Writer) error {
		for i := range n {
			name := fmt.Sprintf("acct%05d", i)
			if err := w.PutResource(record.Resource{Namespace: "bulk", Group: "storage.azure.com", Version: "v1api20230101", Kind: "StorageAccount",
				Name: name, ARMID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/" + name,
				Ready: record.Condition{Type: "Ready", Status: "True"}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, serveState(t, db).URL+"/")
	if got := strings.Count(element(t, dom, "tbody", `id="resources-body"`), "<tr "); got != 500 {
		t.Errorf("%d rows rendered, want the first 500", got)
	}
	if cap := text(element(t, dom, "caption", `id="resources-caption"`)); !strings.Contains(cap, "showing 500 of 3000") {
		t.Errorf("caption %q", cap)
	}
}
