package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/internal/fixtures"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
	"github.com/gitaso/gitaso/web"
)

const subscription = "11111111-2222-3333-4444-555555555555"

// Values planted in the state that the page must never show: a SOPS-style
// Secret value behind a FlexibleServer password (before and after a change),
// a secret export value kept encrypted in state, and the applied-body hash.
const (
	secretPassword    = "hunter2-very-secret-pw"
	secretPasswordNew = "correct-horse-battery-staple"
	secretExportValue = "PLANTED-storage-key-0123456789=="
	apiToken          = "tok-9f8e7d6c5b4a"
)

// onboarding is the shared onboarding fixture; database adds a PostgreSQL
// server whose password comes from a Secret.
const onboarding = fixtures.Onboarding

var database = fixtures.Database(secretPassword)

const principalID = "aaaaaaaa-0000-0000-0000-000000000001"

// Keys of the resources the tests look at.
var (
	keyStorage   = planner.Key("platform", "storage.azure.com", "StorageAccount", "teamastorage")
	keyPG        = planner.Key("db", "dbforpostgresql.azure.com", "FlexibleServer", "pg")
	keyIdentity  = planner.Key("platform", "managedidentity.azure.com", "UserAssignedIdentity", "team-a-identity")
	keyRole      = planner.Key("platform", "authorization.azure.com", "RoleAssignment", "team-a-contributor")
	keyContainer = planner.Key("platform", "storage.azure.com", "StorageAccountsBlobServicesContainer", "data")
)

const authzMessage = "The client 'gitaso' with object id 'bbbb' does not have authorization to perform action " +
	"'Microsoft.Storage/storageAccounts/write' over scope '/subscriptions/" + subscription + "/resourceGroups/team-a-rg' <or it does not exist>."

type fixture struct {
	srv  *httptest.Server
	db   *state.DB
	plan *planner.Plan // the plan stored in state

	mu         sync.Mutex
	syncs      int
	approvals  []string                 // revisions Approve was called with
	approveErr error                    // what Approve answers
	requests   []string                 // method + path + query of API requests seen
	held       map[string]chan struct{} // API paths whose answers wait for holdPath's release
}

// holdPath makes the answers to requests for path wait (each request is
// recorded first) until the returned release is called.
func (f *fixture) holdPath(t testing.TB, path string) (release func()) {
	gate := make(chan struct{})
	f.mu.Lock()
	if f.held == nil {
		f.held = map[string]chan struct{}{}
	}
	f.held[path] = gate
	f.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.held, path)
			f.mu.Unlock()
			close(gate)
		})
	}
	t.Cleanup(release)
	return release
}

func (f *fixture) approved() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.approvals...)
}

func (f *fixture) syncCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs
}

func (f *fixture) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func parse(t testing.TB, files map[string]string) *planner.Graph {
	t.Helper()
	snap := &manifest.Snapshot{Revision: "0123456789abcdef0123456789abcdef01234567"}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		objs, err := source.ParseFile(n, []byte(files[n]))
		if err != nil {
			t.Fatalf("parse %s: %v", n, err)
		}
		snap.Objects = append(snap.Objects, objs...)
	}
	g, err := planner.Build(snap, planner.Options{SubscriptionID: subscription})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return g
}

// newFixture writes a realistic state through state.DB.Update (resources as
// the executor leaves them, with redacted applied bodies; a failing storage
// account; runs; secret exports; the plan of a changed revision) and serves
// api.New with web.Handler as its UI.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })

	// Revision 1, as applied.
	g1 := parse(t, map[string]string{"platform/team-a.yaml": onboarding, "db/pg.yaml": database})
	p1, err := g1.Plan(planner.Input{})
	if err != nil {
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
		red, err := planner.Redact(body.JSON, body.Secrets)
		if err != nil {
			t.Fatal(err)
		}
		prior[r.Key()] = record.Resource{
			Namespace: r.Namespace, Group: r.Group, Version: r.Version, Kind: r.Kind, Name: r.Name,
			ARMID: r.ARMID, APIVersion: r.APIVersion, File: r.File, Credential: r.Credential, Policy: string(r.Policy),
			AppliedHash: planner.HashRequest(r.ARMID+"?api-version="+r.APIVersion, body.JSON),
			AppliedBody: red, Generation: 1, Revision: p1.Revision, UpdatedAt: now.Add(-90 * time.Second), DependsOn: r.DependsOn,
			Ready: record.Condition{Type: "Ready", Status: "True", Reason: "Succeeded", ObservedGeneration: 1, LastTransitionTime: now.Add(-90 * time.Second)},
		}
	}
	if bytes.Contains(prior[keyPG].AppliedBody, []byte(secretPassword)) {
		t.Fatal("fixture: redacted applied body still holds the password")
	}
	id := prior[keyIdentity]
	id.Outputs = map[string]string{"team-a-identity-settings/principalId": principalID}
	prior[keyIdentity] = id
	sa := prior[keyStorage]
	sa.Generation = 2
	sa.Ready = record.Condition{Type: "Ready", Status: "False", Severity: "Error", Reason: "AuthorizationFailed",
		Message: authzMessage, ObservedGeneration: 2, LastTransitionTime: now.Add(-30 * time.Second)}
	sa.SecretOutputs = []string{"teamastorage-keys/key1"}
	sa.UpdatedAt = now.Add(-30 * time.Second)
	prior[keyStorage] = sa
	pg := prior[keyPG]
	pg.Ready = record.Condition{Type: "Ready", Status: "False", Severity: "Info", Reason: "Reconciling",
		Message: "The resource is in the process of being reconciled by the operator", ObservedGeneration: 1}
	prior[keyPG] = pg
	delete(prior, keyRole) // not applied yet: planned as a create with a value known after apply

	// Revision 2: a bigger SKU, the container removed, a new password.
	v2 := strings.Replace(onboarding, "name: Standard_LRS", "name: Standard_GRS", 1)
	v2 = v2[:strings.LastIndex(v2, "---")]
	g2 := parse(t, map[string]string{"platform/team-a.yaml": v2, "db/pg.yaml": strings.Replace(database, secretPassword, secretPasswordNew, 1)})
	p2, err := g2.Plan(planner.Input{Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	p2.Revision = "fedcba9876543210fedcba9876543210fedcba98"
	planJSON, err := json.Marshal(p2)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secretPassword, secretPasswordNew} {
		if bytes.Contains(planJSON, []byte(s)) {
			t.Fatalf("fixture: the planner put %q in the plan", s)
		}
	}

	err = db.Update(func(w *state.Writer) error {
		for _, r := range prior {
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		if err := w.PutSecretExports("platform", "teamastorage-keys", map[string]string{"key1": secretExportValue}); err != nil {
			return err
		}
		if err := w.PutExports("platform", "team-a-identity-settings", map[string]string{"principalId": principalID}); err != nil {
			return err
		}
		runs := []*record.Run{
			{Revision: p1.Revision, Trigger: "startup", StartedAt: now.Add(-10 * time.Minute), FinishedAt: now.Add(-10*time.Minute + 42*time.Second),
				Outcome: record.OutcomeSucceeded, Counts: map[string]int{"create": len(p1.Resources)}, Summary: "8 created"},
			{Revision: p2.Revision, Trigger: "webhook", StartedAt: now.Add(-40 * time.Second), FinishedAt: now.Add(-31 * time.Second),
				Outcome: record.OutcomePartial, Counts: map[string]int{"update": 2, "create": 1, "delete": 1, "no-op": 5},
				Error: "platform/StorageAccount/teamastorage: AuthorizationFailed: " + authzMessage},
		}
		for _, r := range runs {
			if err := w.PutRun(r); err != nil {
				return err
			}
		}
		// What the runs touched: run 1 created everything, run 2 updated
		// the storage account (which failed) and the server, and deleted
		// the container.
		var created []record.Touched
		for _, r := range p1.Resources {
			created = append(created, record.Touched{Key: r.Key(), Action: "create", Outcome: "applied"})
		}
		if err := w.PutTouched(runs[0], created); err != nil {
			return err
		}
		if err := w.PutTouched(runs[1], []record.Touched{
			{Key: keyStorage, Action: "update", Outcome: "failed", Error: authzMessage},
			{Key: keyPG, Action: "update", Outcome: "applied"},
			{Key: keyContainer, Action: "delete", Outcome: "deleted"},
		}); err != nil {
			return err
		}
		// The storage account's last change: its SKU, from Premium_LRS.
		if err := w.PutChange(keyStorage, record.Change{Revision: p1.Revision, At: now.Add(-90 * time.Second), Action: "update",
			Previous: json.RawMessage(strings.Replace(string(prior[keyStorage].AppliedBody), "Standard_LRS", "Premium_LRS", 1))}); err != nil {
			return err
		}
		if err := w.SetLatestRevision(p2.Revision); err != nil {
			return err
		}
		return w.SetPlan(planJSON)
	})
	if err != nil {
		t.Fatal(err)
	}

	f := &fixture{db: db, plan: p2}
	h := api.New(db, api.Options{
		Sync: func(ctx context.Context) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.syncs++
			return nil
		},
		Approve: func(ctx context.Context, rev string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.approveErr != nil {
				return f.approveErr
			}
			f.approvals = append(f.approvals, rev)
			return nil
		},
		Token:  apiToken,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		UI:     web.Handler(),
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			f.mu.Lock()
			f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI())
			gate := f.held[r.URL.Path]
			f.mu.Unlock()
			if gate != nil {
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// planText is what `gitaso plan` prints for the stored plan.
func (f *fixture) planText(t testing.TB, showUnchanged bool) string {
	t.Helper()
	var buf bytes.Buffer
	if err := planner.RenderText(&buf, f.plan, planner.TextOptions{ShowUnchanged: showUnchanged}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// secrets are the values that must never reach the page.
func (f *fixture) secrets(t testing.TB) []string {
	t.Helper()
	out := []string{secretPassword, secretPasswordNew, secretExportValue, apiToken}
	rs, err := f.db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		out = append(out, r.AppliedHash)
	}
	return out
}
