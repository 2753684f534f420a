package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

type pagesFixture struct {
	db  *state.DB
	srv *httptest.Server
}

func newPages(t *testing.T) *pagesFixture {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv := httptest.NewServer(api.New(db, api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(srv.Close)
	return &pagesFixture{db: db, srv: srv}
}

func (f *pagesFixture) put(t *testing.T, rs ...record.Resource) {
	t.Helper()
	if err := f.db.Update(func(w *state.Writer) error {
		for _, r := range rs {
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		if err := w.PutSecretExports("ns", "keys", map[string]string{"key1": secretValue}); err != nil {
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// get fetches path and returns the status and the body, checking that no
// secret is in it.
func (f *pagesFixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secretValue) || strings.Contains(string(b), "hunter2") {
		t.Errorf("GET %s serves a secret:\n%s", path, b)
	}
	return resp.StatusCode, string(b)
}

func (f *pagesFixture) getJSON(t *testing.T, path string, out any) {
	t.Helper()
	code, body := f.get(t, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), out); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

type resourcePage struct {
	Items    []api.Resource `json:"items"`
	Continue string         `json:"continue"`
}

func acct(name, status string) record.Resource {
	return resource("ns", "storage.azure.com", "StorageAccount", name, status, "", "Succeeded")
}

// Across pages every resource stored throughout is listed exactly once,
// while others are added, removed and rewritten between pages; the last
// page has no continue token.
func TestResourcesPaginateWhileWriting(t *testing.T) {
	f := newPages(t)
	var stable []record.Resource
	for i := range 300 {
		stable = append(stable, acct(fmt.Sprintf("m%04d", i), []string{"True", "False", "Unknown"}[i%3]))
	}
	f.put(t, stable...)
	seen := map[string]int{}
	path := "/api/v1/resources?limit=37"
	for page := 0; ; page++ {
		var p resourcePage
		f.getJSON(t, path, &p)
		if len(p.Items) > 37 {
			t.Fatalf("page of %d items for limit 37", len(p.Items))
		}
		for _, r := range p.Items {
			seen[r.Name]++
		}
		if p.Continue == "" {
			break
		}
		f.put(t, acct(fmt.Sprintf("a%04d", page), "True"), acct(fmt.Sprintf("z%04d", page), "True"), stable[(page*41)%len(stable)])
		if err := f.db.Update(func(w *state.Writer) error {
			return w.DeleteResource(acct(fmt.Sprintf("z%04d", page), "").Key())
		}); err != nil {
			t.Fatal(err)
		}
		path = "/api/v1/resources?limit=37&continue=" + p.Continue
	}
	for _, r := range stable {
		if seen[r.Name] != 1 {
			t.Errorf("%s listed %d times", r.Name, seen[r.Name])
		}
	}
	for n, c := range seen {
		if c != 1 {
			t.Errorf("%s listed %d times", n, c)
		}
	}
}

// Filtered pages hold only matching resources, and the unpaged answer (the
// shape before pagination) streams the same items.
func TestResourcesPagesFilterAndMatchUnpaged(t *testing.T) {
	f := newPages(t)
	var rs []record.Resource
	for i := range 2500 {
		r := acct(fmt.Sprintf("m%04d", i), []string{"True", "False", "Unknown"}[i%3])
		if i%5 == 0 {
			r.Namespace = "other"
		}
		rs = append(rs, r)
	}
	f.put(t, rs...)
	var all struct {
		Items    []api.Resource `json:"items"`
		Continue *string        `json:"continue"`
	}
	f.getJSON(t, "/api/v1/resources", &all)
	if len(all.Items) != 2500 || all.Continue != nil {
		t.Fatalf("unpaged answer: %d items, continue %v", len(all.Items), all.Continue)
	}
	for _, q := range []string{"ready=false", "namespace=other", "kind=storageaccount&ready=unknown&name=M00", "kind=Other"} {
		var want resourcePage
		f.getJSON(t, "/api/v1/resources?"+q, &want)
		var got []api.Resource
		path := "/api/v1/resources?limit=100&" + q
		for {
			var p resourcePage
			f.getJSON(t, path, &p)
			got = append(got, p.Items...)
			if p.Continue == "" {
				break
			}
			path = "/api/v1/resources?limit=100&" + q + "&continue=" + p.Continue
		}
		if d := cmp.Diff(want.Items, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: pages differ from the unpaged answer (-unpaged +pages):\n%s", q, d)
		}
		for _, r := range got {
			if strings.Contains(q, "ready=false") && r.Ready.Status != "False" ||
				strings.Contains(q, "namespace=other") && r.Namespace != "other" ||
				strings.Contains(q, "name=M00") && !strings.HasPrefix(r.Name, "m00") {
				t.Errorf("%s: %s/%s (%s) does not match", q, r.Namespace, r.Name, r.Ready.Status)
			}
		}
	}
}

func TestResourcesPageErrors(t *testing.T) {
	f := newPages(t)
	f.put(t, acct("a", "True"), acct("b", "True"), acct("c", "True"))
	var p resourcePage
	f.getJSON(t, "/api/v1/resources?limit=1&ready=true", &p)
	if p.Continue == "" {
		t.Fatal("no continue token on the first of three pages")
	}
	for path, want := range map[string]string{
		"/api/v1/resources?limit=0":                                    "invalid limit",
		"/api/v1/resources?limit=10001":                                "invalid limit",
		"/api/v1/resources?limit=x":                                    "invalid limit",
		"/api/v1/resources?continue=not-a-token":                       "invalid continue token",
		"/api/v1/resources?limit=1&continue=" + p.Continue[:10]:        "invalid continue token",
		"/api/v1/resources?limit=1&continue=" + p.Continue:             "other filters",
		"/api/v1/resources?limit=1&ready=false&continue=" + p.Continue: "other filters",
		"/api/v1/runs?continue=" + p.Continue:                          "invalid continue token",
	} {
		code, body := f.get(t, path)
		var e api.ErrorBody
		_ = json.Unmarshal([]byte(body), &e)
		if code != http.StatusBadRequest || e.Error.Code != api.CodeBadRequest || !strings.Contains(e.Error.Message, want) {
			t.Errorf("GET %s: %d %s, want 400 naming %q", path, code, body, want)
		}
	}
}

func TestRunsPaginateAndRunDetail(t *testing.T) {
	f := newPages(t)
	f.put(t, acct("a", "True"), acct("b", "False"))
	var ids []uint64
	for i := range 12 {
		run := &record.Run{Revision: fmt.Sprintf("rev%02d", i), Trigger: "interval", StartedAt: t0, Outcome: record.OutcomeSucceeded}
		if err := f.db.Update(func(w *state.Writer) error {
			if err := w.PutRun(run); err != nil {
				return err
			}
			return w.PutTouched(run, []record.Touched{{Key: acct("a", "").Key(), Action: "update", Outcome: "applied"},
				{Key: acct("b", "").Key(), Action: "create", Outcome: "failed", Error: "quota exceeded"}})
		}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	var got []uint64
	path := "/api/v1/runs?limit=5"
	for {
		var p struct {
			Items    []record.Run `json:"items"`
			Continue string       `json:"continue"`
		}
		f.getJSON(t, path, &p)
		for _, r := range p.Items {
			got = append(got, r.ID)
		}
		if p.Continue == "" {
			break
		}
		path = "/api/v1/runs?limit=5&continue=" + p.Continue
	}
	if len(got) != 12 || got[0] != ids[11] || got[11] != ids[0] {
		t.Errorf("runs over pages: %v", got)
	}
	var d api.RunDetail
	f.getJSON(t, fmt.Sprintf("/api/v1/runs/%d", ids[3]), &d)
	if d.Run.Revision != "rev03" || len(d.Resources) != 2 || d.Resources[1].Error != "quota exceeded" || d.Resources[0].Action != "update" {
		t.Errorf("run detail: %+v", d)
	}
	if code, _ := f.get(t, "/api/v1/runs/999"); code != http.StatusNotFound {
		t.Errorf("unknown run: %d", code)
	}
	if code, _ := f.get(t, "/api/v1/runs/x"); code != http.StatusBadRequest {
		t.Errorf("bad run id: %d", code)
	}
	var res api.Resource
	f.getJSON(t, "/api/v1/resources/ns/storage.azure.com/StorageAccount/b", &res)
	if len(res.Runs) != 12 || res.Runs[0].Run != ids[11] || res.Runs[0].Error != "quota exceeded" {
		t.Errorf("resource runs: %+v", res.Runs)
	}
}

func TestGraph(t *testing.T) {
	f := newPages(t)
	rg := resource("ns", "resources.azure.com", "ResourceGroup", "rg", "True", "", "")
	rg.ARMID = "/subscriptions/s/resourceGroups/rg"
	sa := acct("sa", "False")
	sa.ARMID = rg.ARMID + "/providers/Microsoft.Storage/storageAccounts/sa"
	sa.DependsOn = []string{rg.Key()}
	id := resource("ns", "managedidentity.azure.com", "UserAssignedIdentity", "id", "Unknown", "", "")
	id.ARMID = rg.ARMID + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id"
	id.DependsOn = []string{rg.Key()}
	role := resource("ns", "authorization.azure.com", "RoleAssignment", "role", "True", "", "")
	role.ARMID = sa.ARMID + "/providers/Microsoft.Authorization/roleAssignments/r"
	role.DependsOn = []string{sa.Key(), id.Key(), "ns/gone/Missing/x"}
	f.put(t, rg, sa, id, role)
	var g api.Graph
	f.getJSON(t, "/api/v1/graph", &g)
	at := map[string]int{}
	for i, k := range g.Keys {
		at[k] = i
	}
	if len(g.Keys) != 4 || len(g.Ready) != 4 {
		t.Fatalf("graph: %+v", g)
	}
	if g.Ready[at[sa.Key()]] != 'F' || g.Ready[at[rg.Key()]] != 'T' || g.Ready[at[id.Key()]] != 'U' {
		t.Errorf("ready %q for %v", g.Ready, g.Keys)
	}
	wantOwners := [][2]int{{at[id.Key()], at[rg.Key()]}, {at[role.Key()], at[sa.Key()]}, {at[sa.Key()], at[rg.Key()]}}
	wantRefs := [][2]int{{at[role.Key()], at[id.Key()]}}
	sortPairs := cmp.Transformer("sort", func(in [][2]int) [][2]int {
		out := append([][2]int(nil), in...)
		for i := range out {
			for j := i + 1; j < len(out); j++ {
				if out[j][0] < out[i][0] || out[j][0] == out[i][0] && out[j][1] < out[i][1] {
					out[i], out[j] = out[j], out[i]
				}
			}
		}
		return out
	})
	if d := cmp.Diff(wantOwners, g.Owners, sortPairs); d != "" {
		t.Errorf("owners (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantRefs, g.References, sortPairs); d != "" {
		t.Errorf("references (-want +got):\n%s", d)
	}
	// The answers are cached until the state changes.
	var before api.Summary
	f.getJSON(t, "/api/v1/summary", &before)
	if before.Ready["True"] != 2 || before.Ready["False"] != 1 || before.Ready["Unknown"] != 1 {
		t.Errorf("summary before: %+v", before)
	}
	sa.Ready.Status = "True"
	f.put(t, sa)
	f.getJSON(t, "/api/v1/graph", &g)
	if g.Ready[at[sa.Key()]] != 'T' {
		t.Errorf("graph after %s became ready: %q", sa.Key(), g.Ready)
	}
	var s api.Summary
	f.getJSON(t, "/api/v1/summary", &s)
	if s.Total != 4 || s.Ready["True"] != 3 || len(s.Kinds) != 4 || len(s.Namespaces) != 1 {
		t.Errorf("summary: %+v", s)
	}
}

// The last change is served as a diff of redacted bodies; a change of
// secret values only says so without showing them.
func TestResourceLastChange(t *testing.T) {
	f := newPages(t)
	a := acct("a", "True")
	a.AppliedBody = json.RawMessage(`{"location":"westeurope","properties":{"password":"(sensitive value)","sku":"Standard_GRS","tags":["x"]}}`)
	b := acct("b", "True")
	b.AppliedBody = json.RawMessage(`{"properties":{"password":"(sensitive value)"}}`)
	f.put(t, a, b)
	if err := f.db.Update(func(w *state.Writer) error {
		if err := w.PutChange(a.Key(), record.Change{Revision: "rev2", At: t0, Action: "update",
			Previous: json.RawMessage(`{"location":"westeurope","properties":{"password":"(sensitive value)","sku":"Standard_LRS","minTls":"TLS1_2"}}`)}); err != nil {
			return err
		}
		return w.PutChange(b.Key(), record.Change{Revision: "rev2", At: t0, Action: "update", Previous: b.AppliedBody})
	}); err != nil {
		t.Fatal(err)
	}
	var res api.Resource
	f.getJSON(t, "/api/v1/resources/ns/storage.azure.com/StorageAccount/a", &res)
	if res.LastChange == nil {
		t.Fatal("no lastChange")
	}
	want := []api.FieldChange{
		{Path: "/properties/minTls", Op: "remove", Old: json.RawMessage(`"TLS1_2"`)},
		{Path: "/properties/sku", Op: "replace", Old: json.RawMessage(`"Standard_LRS"`), New: json.RawMessage(`"Standard_GRS"`)},
		{Path: "/properties/tags/0", Op: "add", New: json.RawMessage(`"x"`)},
	}
	if d := cmp.Diff(want, res.LastChange.Diff); d != "" {
		t.Errorf("diff (-want +got):\n%s", d)
	}
	f.getJSON(t, "/api/v1/resources/ns/StorageAccount/b", &res)
	if res.LastChange == nil || !res.LastChange.HiddenOnly || len(res.LastChange.Diff) != 0 {
		t.Errorf("secret-only change: %+v", res.LastChange)
	}
}
