package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// The policy of these tests: admin may do everything; team-a's members read,
// sync and approve in team-a; team-b's in team-b; viewers read team-a only;
// anonymous callers have nothing (no default role for them).
const testPolicy = `
p, role:team-a, namespaces, sync, team-a
p, role:team-a, namespaces, approve, team-a
p, role:team-b, namespaces, approve, team-b
p, role:team-b, namespaces, sync, team-b
g, group:team-a, role:team-a
g, group:team-b, role:team-b
g, group:platform-admins, role:admin
p, group:viewers, namespaces, read, team-a
p, token:scraper, namespaces, read, *
`

// bearerSecret and cookieSecret are sent with every request of the authz
// tests: neither may appear in an answer, the log or the audit trail.
const (
	bearerSecret = "gitaso-token-5up3r-s3cr3t"
	cookieSecret = "gitaso-session-c00kie-s3cr3t"
)

var testIdentities = map[string]access.Identity{
	"admin":   {Kind: access.User, Subject: "s-admin", Name: "admin@gitaso.local", Groups: []string{"platform-admins"}, Issuer: "https://login.example"},
	"alice":   {Kind: access.User, Subject: "s-alice", Name: "alice@gitaso.local", Groups: []string{"team-a"}, Issuer: "https://login.example"},
	"bob":     {Kind: access.User, Subject: "s-bob", Name: "bob@gitaso.local", Groups: []string{"team-b"}},
	"viewer":  {Kind: access.User, Subject: "s-v", Name: "viewer@gitaso.local", Groups: []string{"viewers"}},
	"scraper": {Kind: access.Token, Subject: "scraper", Name: "scraper"},
}

type authzFixture struct {
	srv     *httptest.Server
	db      *state.DB
	logs    *syncBuffer
	mu      sync.Mutex
	approve []string // revision/plan of each approval that reached the reconciler
	syncs   int
}

const heldRev = "abcdef0123456789abcdef0123456789abcdef01"

// newAuthzFixture serves the API over a state with resources, units, runs
// and a plan in team-a, team-b and platform, and a held run whose deletions
// are in team-a and team-b. The caller is the identity named by the
// X-Test-Identity header (none: anonymous), set the way the authentication
// sets it: in the request's context.
func newAuthzFixture(t *testing.T) *authzFixture {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &authzFixture{db: db, logs: &syncBuffer{}}
	seedNamespaces(t, db)
	pol, err := access.ParsePolicy("policy.csv", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := api.New(db, api.Options{
		Logger: log,
		Policy: func() *access.Policy { return pol },
		Audit:  api.NewAuditor(db, log, 0),
		Sync:   func(context.Context) error { f.mu.Lock(); f.syncs++; f.mu.Unlock(); return nil },
		ApprovePlan: func(_ context.Context, rev, plan string) error {
			f.mu.Lock()
			f.approve = append(f.approve, rev+"/"+plan)
			f.mu.Unlock()
			return nil
		},
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := testIdentities[r.Header.Get("X-Test-Identity")]; ok {
			r = r.WithContext(access.WithIdentity(r.Context(), id))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func seedNamespaces(t *testing.T, db *state.DB) {
	t.Helper()
	resA := resource("team-a", "storage.azure.com", "StorageAccount", "a-store", "True", "", "Succeeded")
	resA.Unit = "Kustomization/team-a/apps"
	resB := resource("team-b", "storage.azure.com", "StorageAccount", "b-store", "False", "Warning", "Failed")
	resB.Unit = "Kustomization/team-b/apps"
	resB.DependsOn = []string{"platform/resources.azure.com/ResourceGroup/rg"}
	rg := resource("platform", "resources.azure.com", "ResourceGroup", "rg", "True", "", "Succeeded")
	err := db.Update(func(w *state.Writer) error {
		for _, r := range []record.Resource{resA, resB, rg} {
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		for _, ns := range []string{"team-a", "team-b"} {
			u := record.Unit{Kind: "Kustomization", Namespace: ns, Name: "apps", Ready: record.Condition{Type: "Ready", Status: "True"}}
			if err := w.PutUnit(u); err != nil {
				return err
			}
		}
		applied := &record.Run{Revision: "1111111111111111111111111111111111111111", Trigger: "interval", StartedAt: t0, FinishedAt: t0.Add(time.Second), Outcome: record.OutcomeSucceeded}
		if err := w.PutRun(applied); err != nil {
			return err
		}
		if err := w.PutTouched(applied, []record.Touched{{Key: resA.Key(), Action: "create", Outcome: "succeeded"}, {Key: resB.Key(), Action: "create", Outcome: "succeeded"}}); err != nil {
			return err
		}
		held := &record.Run{Revision: heldRev, Trigger: "interval", StartedAt: t0.Add(time.Minute), FinishedAt: t0.Add(time.Minute), Outcome: record.OutcomeHeld,
			Held: &record.Hold{Reason: record.HoldMassDeletion, Message: "deletes team-a/a-store and team-b/b-store", Deletions: 2, Managed: 3,
				Keys: []string{resA.Key(), resB.Key()}}}
		held.Error = held.Held.Message
		if err := w.PutRun(held); err != nil {
			return err
		}
		return w.SetPlan([]byte(`{"revision":"` + heldRev + `","resources":[` +
			`{"namespace":"team-a","kind":"StorageAccount","name":"a-store","action":"delete"},` +
			`{"namespace":"team-b","kind":"StorageAccount","name":"b-store","action":"delete"}]}`))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *authzFixture) call(t *testing.T, who, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if who != "" {
		req.Header.Set("X-Test-Identity", who)
	}
	req.Header.Set("Authorization", "Bearer "+bearerSecret)
	req.AddCookie(&http.Cookie{Name: "gitaso_session", Value: cookieSecret})
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{bearerSecret, cookieSecret, secretValue} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s %s: the answer holds a secret", method, path)
		}
	}
	return resp.StatusCode, b
}

func namespacesOf(keys []string) []string {
	seen := []string{}
	for _, k := range keys {
		ns, _, _ := strings.Cut(k, "/")
		if !slices.Contains(seen, ns) {
			seen = append(seen, ns)
		}
	}
	slices.Sort(seen)
	return seen
}

// TestReadsShowOnlyPermittedNamespaces: two identities of different teams
// see different resources, units, plan entries, graph nodes, held keys and
// touched resources; admin sees all. Before rights per namespace every
// caller saw every namespace.
func TestReadsShowOnlyPermittedNamespaces(t *testing.T) {
	f := newAuthzFixture(t)
	type seen struct {
		Resources, Units, Plan, Graph, Summary, Held, Touched []string
	}
	look := func(who string) seen {
		var s seen
		_, b := f.call(t, who, "GET", "/api/v1/resources", "")
		s.Resources = namespacesOf(ids(decode[list](t, b)))
		_, b = f.call(t, who, "GET", "/api/v1/units", "")
		for _, u := range decode[api.UnitList](t, b).Items {
			s.Units = append(s.Units, u.Namespace)
		}
		_, b = f.call(t, who, "GET", "/api/v1/plan", "")
		plan := decode[struct {
			Resources []struct{ Namespace string } `json:"resources"`
		}](t, b)
		for _, r := range plan.Resources {
			s.Plan = append(s.Plan, r.Namespace)
		}
		_, b = f.call(t, who, "GET", "/api/v1/graph", "")
		s.Graph = namespacesOf(decode[api.Graph](t, b).Keys)
		_, b = f.call(t, who, "GET", "/api/v1/summary", "")
		s.Summary = decode[api.Summary](t, b).Namespaces
		_, b = f.call(t, who, "GET", "/api/v1/runs", "")
		for _, run := range decode[struct{ Items []record.Run }](t, b).Items {
			if run.Held != nil {
				s.Held = namespacesOf(run.Held.Keys)
				if who == "alice" && strings.Contains(run.Held.Message, "b-store") {
					t.Errorf("alice's view of the held run names team-b's resource: %q", run.Held.Message)
				}
			}
		}
		_, b = f.call(t, who, "GET", "/api/v1/runs/1", "")
		for _, tr := range decode[api.RunDetail](t, b).Resources {
			s.Touched = append(s.Touched, strings.SplitN(tr.Key, "/", 2)[0])
		}
		return s
	}
	all := []string{"platform", "team-a", "team-b"}
	tests := map[string]seen{
		"admin": {Resources: all, Units: []string{"team-a", "team-b"}, Plan: []string{"team-a", "team-b"}, Graph: all, Summary: all,
			Held: []string{"team-a", "team-b"}, Touched: []string{"team-a", "team-b"}},
		"alice": {Resources: []string{"team-a"}, Units: []string{"team-a"}, Plan: []string{"team-a"}, Graph: []string{"team-a"}, Summary: []string{"team-a"},
			Held: []string{"team-a"}, Touched: []string{"team-a"}},
		"bob": {Resources: []string{"team-b"}, Units: []string{"team-b"}, Plan: []string{"team-b"}, Graph: []string{"team-b"}, Summary: []string{"team-b"},
			Held: []string{"team-b"}, Touched: []string{"team-b"}},
	}
	for who, want := range tests {
		if diff := cmp.Diff(want, look(who)); diff != "" {
			t.Errorf("%s sees (-want +got):\n%s", who, diff)
		}
	}
	// A paged list and its continue token stay in the caller's namespaces.
	_, b := f.call(t, "bob", "GET", "/api/v1/resources?limit=1", "")
	if got := namespacesOf(ids(decode[list](t, b))); !cmp.Equal(got, []string{"team-b"}) {
		t.Errorf("bob's first page: %v", got)
	}
}

type errBody struct {
	Error api.ErrorDetail `json:"error"`
}

// TestRefusalsNameTheMissingRight: a read of a namespace, an anonymous read,
// /metrics without read everywhere, a sync without the right, an approval
// of a hold that touches a namespace the caller cannot approve in: 403
// missing_right naming the right and the namespaces.
func TestRefusalsNameTheMissingRight(t *testing.T) {
	f := newAuthzFixture(t)
	tests := []struct {
		who, method, path, body string
		right                   string
		namespaces              []string
	}{
		{"alice", "GET", "/api/v1/resources/team-b/StorageAccount/b-store", "", "read", []string{"team-b"}},
		{"alice", "GET", "/api/v1/resources?namespace=team-b", "", "read", []string{"team-b"}},
		{"alice", "GET", "/api/v1/units/Kustomization/team-b/apps", "", "read", []string{"team-b"}},
		{"", "GET", "/api/v1/resources", "", "read", nil},
		{"", "GET", "/api/v1/runs", "", "read", nil},
		{"", "GET", "/api/v1/plan", "", "read", nil},
		{"", "GET", "/api/v1/status", "", "read", nil},
		{"alice", "GET", "/metrics", "", "read", []string{"*"}},
		{"alice", "GET", "/api/v1/audit", "", "admin", []string{"*"}},
		{"viewer", "POST", "/api/v1/sync", "{}", "sync", nil},
		{"alice", "POST", "/api/v1/approve", `{"revision":"` + heldRev + `"}`, "approve", []string{"team-b"}},
		{"bob", "POST", "/api/v1/approve", `{"revision":"` + heldRev[:8] + `"}`, "approve", []string{"team-a"}},
		{"viewer", "POST", "/api/v1/approve", `{"revision":"` + heldRev + `"}`, "approve", []string{"team-a", "team-b"}},
	}
	for _, tt := range tests {
		code, b := f.call(t, tt.who, tt.method, tt.path, tt.body)
		e := decode[errBody](t, b).Error
		if code != http.StatusForbidden || e.Code != api.CodeMissingRight || e.Right != tt.right || !cmp.Equal(e.Namespaces, tt.namespaces) {
			t.Errorf("%s %s %s: %d %s; want 403 missing_right %s in %v", tt.who, tt.method, tt.path, code, b, tt.right, tt.namespaces)
		}
		if !strings.Contains(e.Message, "lacks the right "+tt.right) {
			t.Errorf("%s %s: message %q does not name the right", tt.method, tt.path, e.Message)
		}
	}
	f.mu.Lock()
	if len(f.approve) != 0 || f.syncs != 0 {
		t.Errorf("refused actions reached the reconciler: approvals %v, syncs %d", f.approve, f.syncs)
	}
	f.mu.Unlock()
	// Allowed: a team member reads and syncs, the scrape token reads
	// /metrics, admin approves the hold of both namespaces with its digest.
	for _, c := range []struct{ who, method, path, body string }{
		{"alice", "GET", "/api/v1/resources/team-a/StorageAccount/a-store", ""},
		{"alice", "POST", "/api/v1/sync", "{}"},
		{"scraper", "GET", "/metrics", ""},
		{"admin", "GET", "/api/v1/audit", ""},
	} {
		if code, b := f.call(t, c.who, c.method, c.path, c.body); code/100 != 2 {
			t.Errorf("%s %s %s: %d %s, want 2xx", c.who, c.method, c.path, code, b)
		}
	}
	digest := (&record.Hold{Reason: record.HoldMassDeletion, Keys: []string{"team-a/storage.azure.com/StorageAccount/a-store", "team-b/storage.azure.com/StorageAccount/b-store"}}).PlanDigest(heldRev)
	code, b := f.call(t, "admin", "POST", "/api/v1/approve", `{"revision":"`+heldRev+`","plan":"0000000000000000"}`)
	if e := decode[errBody](t, b).Error; code != http.StatusConflict || e.Code != api.CodePlanChanged || !strings.Contains(e.Message, digest) {
		t.Errorf("approve of another plan digest: %d %s, want 409 plan_changed naming %s", code, b, digest)
	}
	if code, b := f.call(t, "admin", "POST", "/api/v1/approve", `{"revision":"`+heldRev+`","plan":"`+digest+`"}`); code != http.StatusAccepted {
		t.Fatalf("admin's approval: %d %s", code, b)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := []string{heldRev + "/" + digest}; !cmp.Equal(f.approve, want) {
		t.Errorf("approvals reaching the reconciler: %v, want %v", f.approve, want)
	}
}

// TestAuditTrail: syncs, approvals, refusals and token use are recorded with
// who, what, where from and which plan; GET /api/v1/audit pages them newest
// first; the log has the same structured events; no secret is in either.
func TestAuditTrail(t *testing.T) {
	f := newAuthzFixture(t)
	f.call(t, "alice", "POST", "/api/v1/sync", "{}")
	f.call(t, "viewer", "POST", "/api/v1/sync", "{}")
	f.call(t, "alice", "POST", "/api/v1/approve", `{"revision":"`+heldRev+`"}`)
	f.call(t, "admin", "POST", "/api/v1/approve", `{"revision":"`+heldRev+`"}`)
	f.call(t, "alice", "GET", "/metrics", "")
	f.call(t, "alice", "GET", "/metrics", "") // the same refused read within a minute: recorded once
	f.call(t, "scraper", "GET", "/metrics", "")
	f.call(t, "scraper", "GET", "/api/v1/resources", "") // the same token within a minute: not recorded again

	var events []record.AuditEvent
	next := ""
	for pages := 0; ; pages++ {
		path := "/api/v1/audit?limit=2"
		if next != "" {
			path += "&continue=" + next
		}
		code, b := f.call(t, "admin", "GET", path, "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, b)
		}
		page := decode[api.AuditPage](t, b)
		if len(page.Items) > 2 {
			t.Fatalf("page of %d events, limit 2", len(page.Items))
		}
		events = append(events, page.Items...)
		if next = page.Continue; next == "" {
			break
		}
		if pages > 10 {
			t.Fatal("the audit pages do not end")
		}
	}
	type brief struct{ Action, Outcome, Who, Right, Plan string }
	var got []brief
	for i, e := range events {
		if i > 0 && e.ID >= events[i-1].ID {
			t.Errorf("events not newest first: %d after %d", e.ID, events[i-1].ID)
		}
		if e.From == "" || e.At.IsZero() {
			t.Errorf("event %d lacks where from or when: %+v", e.ID, e)
		}
		got = append(got, brief{e.Action, e.Outcome, e.Who, e.Right, e.Plan})
	}
	slices.Reverse(got)
	digest := (&record.Hold{Reason: record.HoldMassDeletion, Keys: []string{"team-a/storage.azure.com/StorageAccount/a-store", "team-b/storage.azure.com/StorageAccount/b-store"}}).PlanDigest(heldRev)
	want := []brief{
		{"sync", "allowed", "user alice@gitaso.local", "", ""},
		{"sync", "refused", "user viewer@gitaso.local", "sync", ""},
		{"approve", "refused", "user alice@gitaso.local", "approve", digest},
		{"approve", "allowed", "user admin@gitaso.local", "", digest},
		{"read", "refused", "user alice@gitaso.local", "read", ""},
		{"token", "allowed", "token scraper", "", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit trail (-want +got):\n%s", diff)
	}
	logs := f.logs.String()
	if n := strings.Count(logs, `"msg":"audit"`); n != len(want) {
		t.Errorf("%d audit events in the log, want %d", n, len(want))
	}
	// No secret in the state file's audit events nor in the log.
	raw, _, err := f.db.AuditPage(0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := json.Marshal(raw)
	for _, secret := range []string{bearerSecret, cookieSecret, secretValue} {
		if strings.Contains(string(stored), secret) || strings.Contains(logs, secret) {
			t.Errorf("a secret is in the audit trail or the log")
		}
	}
}

// TestAuditRetention: the auditor keeps events for its retention; older
// ones are pruned, newer ones kept and still paged.
func TestAuditRetention(t *testing.T) {
	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := api.NewAuditor(db, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour)
	ctx := access.WithIdentity(context.Background(), testIdentities["alice"])
	now := time.Now().UTC()
	for _, age := range []time.Duration{3 * time.Hour, 2 * time.Hour, 30 * time.Minute, 0} {
		a.Record(ctx, record.AuditEvent{At: now.Add(-age), Action: record.AuditSync, Outcome: record.AuditAllowed})
	}
	n, err := a.Prune(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want the 2 events older than an hour", n, err)
	}
	kept, more, err := db.AuditPage(0, 10)
	if err != nil || more || len(kept) != 2 {
		t.Fatalf("kept %d events (more %v, %v), want 2", len(kept), more, err)
	}
	for _, e := range kept {
		if now.Sub(e.At) > time.Hour || e.Who != "user alice@gitaso.local" || !slices.Equal(e.Groups, []string{"team-a"}) {
			t.Errorf("kept event %+v", e)
		}
	}
}
