package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/internal/syncbuf"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

const secretValue = "SUPER-SECRET-account-key=="

var t0 = time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)

type fixture struct {
	srv   *httptest.Server
	db    *state.DB
	logs  *syncBuffer
	syncs atomic.Int32
}

// syncBuffer is a log sink safe for concurrent writers and a reader.
type syncBuffer = syncbuf.Buffer

func resource(ns, group, kind, name, status, severity, reason string) record.Resource {
	return record.Resource{
		Namespace: ns, Group: group, Version: "v1", Kind: kind, Name: name,
		ARMID:       "/subscriptions/s/resourceGroups/rg/providers/X/" + name,
		APIVersion:  "2023-01-01",
		File:        ns + "/" + name + ".yaml",
		AppliedHash: "sha256:" + secretValue, // must never be served
		AppliedBody: json.RawMessage(`{"location":"westeurope"}`),
		Generation:  2,
		Ready:       record.Condition{Type: "Ready", Status: status, Severity: severity, Reason: reason, ObservedGeneration: 2, LastTransitionTime: t0},
		Revision:    "rev1",
		UpdatedAt:   t0,
		Policy:      "manage",
	}
}

func newFixture(t *testing.T, opts api.Options, seed bool) *fixture {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{db: db, logs: &syncBuffer{}}
	if seed {
		seedState(t, db)
	}
	opts.Logger = slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.Sync == nil && opts.Token != "" {
		opts.Sync = func(ctx context.Context) error { f.syncs.Add(1); return nil }
	}
	f.srv = httptest.NewServer(api.New(db, opts))
	t.Cleanup(f.srv.Close)
	return f
}

func seedState(t *testing.T, db *state.DB) {
	t.Helper()
	id := resource("team-a", "managedidentity.azure.com", "UserAssignedIdentity", "app-id", "True", "", "Succeeded")
	id.Outputs = map[string]string{"app-id-settings/principalId": "0000-1111"}
	sa := resource("team-a", "storage.azure.com", "StorageAccount", "appstore", "False", "Warning", "AuthorizationFailed")
	sa.Ready.Message = "client does not have authorization"
	sa.SecretOutputs = []string{"appstore-keys/key1"}
	pg := resource("team-a", "dbforpostgresql.azure.com", "FlexibleServer", "db", "Unknown", "", "")
	my := resource("team-a", "dbformysql.azure.com", "FlexibleServer", "db", "True", "", "Succeeded")
	rg := resource("platform", "resources.azure.com", "ResourceGroup", "rg-team-a", "True", "", "Succeeded")
	err := db.Update(func(w *state.Writer) error {
		for _, r := range []record.Resource{id, sa, pg, my, rg} {
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		if err := w.PutSecretExports("team-a", "appstore-keys", map[string]string{"key1": secretValue}); err != nil {
			return err
		}
		if err := w.PutExports("team-a", "app-id-settings", map[string]string{"principalId": "0000-1111"}); err != nil {
			return err
		}
		for i, o := range []record.Outcome{record.OutcomeSucceeded, record.OutcomeFailed, record.OutcomeSucceeded} {
			run := &record.Run{Revision: "rev" + string(rune('1'+i)), Trigger: "interval", StartedAt: t0.Add(time.Duration(i) * time.Minute),
				FinishedAt: t0.Add(time.Duration(i)*time.Minute + 1500*time.Millisecond), Outcome: o, Counts: map[string]int{"create": i}}
			if err := w.PutRun(run); err != nil {
				return err
			}
		}
		if err := w.PutOperation(record.Operation{Key: sa.Key(), ARMID: sa.ARMID, Method: "PUT", StartedAt: t0}); err != nil {
			return err
		}
		return w.SetPlan([]byte(`{"revision":"rev3","resources":[{"namespace":"team-a","kind":"StorageAccount","name":"appstore","action":"update"}]}`))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) do(t *testing.T, method, path, token string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(body, []byte(secretValue)) {
		t.Errorf("%s %s: response contains a secret value", method, path)
	}
	return resp.StatusCode, resp.Header, body
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

type list struct {
	Items []api.Resource `json:"items"`
}

func ids(l list) []string {
	out := []string{}
	for _, r := range l.Items {
		out = append(out, r.Namespace+"/"+r.Group+"/"+r.Kind+"/"+r.Name)
	}
	return out
}

func TestListResources(t *testing.T) {
	f := newFixture(t, api.Options{}, true)
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{
			"platform/resources.azure.com/ResourceGroup/rg-team-a",
			"team-a/dbformysql.azure.com/FlexibleServer/db",
			"team-a/dbforpostgresql.azure.com/FlexibleServer/db",
			"team-a/managedidentity.azure.com/UserAssignedIdentity/app-id",
			"team-a/storage.azure.com/StorageAccount/appstore",
		}},
		{"?namespace=platform", []string{"platform/resources.azure.com/ResourceGroup/rg-team-a"}},
		{"?kind=storageaccount", []string{"team-a/storage.azure.com/StorageAccount/appstore"}},
		{"?kind=dbforpostgresql.azure.com/FlexibleServer", []string{"team-a/dbforpostgresql.azure.com/FlexibleServer/db"}},
		{"?ready=false", []string{"team-a/storage.azure.com/StorageAccount/appstore"}},
		{"?ready=unknown&namespace=team-a", []string{"team-a/dbforpostgresql.azure.com/FlexibleServer/db"}},
		{"?ready=true&namespace=team-a&kind=FlexibleServer", []string{"team-a/dbformysql.azure.com/FlexibleServer/db"}},
		{"?namespace=nobody", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			code, h, body := f.do(t, "GET", "/api/v1/resources"+tt.query, "")
			if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d, content type %q: %s", code, h.Get("Content-Type"), body)
			}
			if !bytes.Contains(body, []byte(`"items":[`)) {
				t.Errorf("items must be a JSON array: %s", body)
			}
			if d := cmp.Diff(tt.want, ids(decode[list](t, body))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	code, _, body := f.do(t, "GET", "/api/v1/resources?ready=maybe", "")
	e := decode[api.ErrorBody](t, body)
	if code != 400 || e.Error.Code != api.CodeBadRequest || !strings.Contains(e.Error.Message, "maybe") {
		t.Errorf("bad ready: %d %s", code, body)
	}
}

func TestResourceViewHidesSecrets(t *testing.T) {
	f := newFixture(t, api.Options{}, true)
	code, _, body := f.do(t, "GET", "/api/v1/resources/team-a/StorageAccount/appstore", "")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	r := decode[api.Resource](t, body)
	if d := cmp.Diff([]string{"appstore-keys/key1"}, r.SecretOutputs); d != "" {
		t.Errorf("secretOutputs (-want +got):\n%s", d)
	}
	want := record.Condition{Type: "Ready", Status: "False", Severity: "Warning", Reason: "AuthorizationFailed",
		Message: "client does not have authorization", ObservedGeneration: 2, LastTransitionTime: t0}
	if d := cmp.Diff(want, r.Ready); d != "" {
		t.Errorf("ready (-want +got):\n%s", d)
	}
	if string(r.AppliedBody) != `{"location":"westeurope"}` {
		t.Errorf("appliedBody = %s", r.AppliedBody)
	}
	if bytes.Contains(body, []byte("appliedHash")) || bytes.Contains(body, []byte("sha256:")) {
		t.Errorf("applied hash served: %s", body)
	}

	code, _, body = f.do(t, "GET", "/api/v1/resources/team-a/managedidentity.azure.com/UserAssignedIdentity/app-id", "")
	r = decode[api.Resource](t, body)
	if code != 200 || r.Outputs["app-id-settings/principalId"] != "0000-1111" {
		t.Errorf("identity outputs: %d %s", code, body)
	}
	// A resource without a condition shows Ready Unknown.
	if err := f.db.Update(func(w *state.Writer) error {
		return w.PutResource(record.Resource{Namespace: "team-c", Group: "g.azure.com", Kind: "K", Name: "fresh"})
	}); err != nil {
		t.Fatal(err)
	}
	_, _, body = f.do(t, "GET", "/api/v1/resources/team-c/K/fresh", "")
	if r := decode[api.Resource](t, body); r.Ready.Type != "Ready" || r.Ready.Status != "Unknown" || bytes.Contains(body, []byte("0001-01-01")) {
		t.Errorf("fresh resource: %s", body)
	}
	// The list carries outputs but not bodies.
	_, _, body = f.do(t, "GET", "/api/v1/resources?namespace=team-a&kind=UserAssignedIdentity", "")
	l := decode[list](t, body)
	if len(l.Items) != 1 || l.Items[0].Outputs["app-id-settings/principalId"] != "0000-1111" || l.Items[0].AppliedBody != nil {
		t.Errorf("list item: %s", body)
	}
}

func TestGetResourceErrors(t *testing.T) {
	f := newFixture(t, api.Options{}, true)
	tests := []struct {
		path     string
		status   int
		code     string
		contains string
	}{
		{"/api/v1/resources/team-a/StorageAccount/missing", 404, api.CodeNotFound, "team-a/StorageAccount/missing"},
		{"/api/v1/resources/team-b/StorageAccount/appstore", 404, api.CodeNotFound, "not found"},
		{"/api/v1/resources/team-a/FlexibleServer/db", 409, api.CodeAmbiguous, "dbformysql.azure.com/FlexibleServer, dbforpostgresql.azure.com/FlexibleServer"},
		{"/api/v1/nothing", 404, api.CodeNotFound, "/api/v1/nothing"},
		{"/elsewhere", 404, api.CodeNotFound, "/elsewhere"},
	}
	for _, tt := range tests {
		code, h, body := f.do(t, "GET", tt.path, "")
		if code != tt.status || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Errorf("%s: status %d (%s), want %d", tt.path, code, h.Get("Content-Type"), tt.status)
			continue
		}
		e := decode[api.ErrorBody](t, body)
		if e.Error.Code != tt.code || !strings.Contains(e.Error.Message, tt.contains) {
			t.Errorf("%s: error %+v, want code %s containing %q", tt.path, e.Error, tt.code, tt.contains)
		}
	}
	// group/Kind disambiguates, also URL-encoded.
	for _, p := range []string{"/api/v1/resources/team-a/dbforpostgresql.azure.com/FlexibleServer/db", "/api/v1/resources/team-a/dbforpostgresql.azure.com%2FFlexibleServer/db"} {
		code, _, body := f.do(t, "GET", p, "")
		if r := decode[api.Resource](t, body); code != 200 || r.Group != "dbforpostgresql.azure.com" {
			t.Errorf("%s: %d %s", p, code, body)
		}
	}
	code, h, body := f.do(t, "DELETE", "/api/v1/runs", "")
	if e := decode[api.ErrorBody](t, body); code != 405 || e.Error.Code != api.CodeMethodNotAllowed || h.Get("Allow") != "GET" {
		t.Errorf("DELETE runs: %d allow=%q %s", code, h.Get("Allow"), body)
	}
}

func TestRunsAndPlan(t *testing.T) {
	f := newFixture(t, api.Options{}, true)
	code, _, body := f.do(t, "GET", "/api/v1/runs", "")
	runs := decode[struct{ Items []record.Run }](t, body).Items
	if code != 200 || len(runs) != 3 || runs[0].Revision != "rev3" || runs[2].Revision != "rev1" || runs[1].Outcome != record.OutcomeFailed {
		t.Fatalf("runs: %d %s", code, body)
	}
	_, _, body = f.do(t, "GET", "/api/v1/runs?limit=1", "")
	if runs := decode[struct{ Items []record.Run }](t, body).Items; len(runs) != 1 || runs[0].ID != 3 {
		t.Errorf("limit=1: %s", body)
	}
	for _, bad := range []string{"0", "-1", "x", "10001"} {
		if code, _, _ := f.do(t, "GET", "/api/v1/runs?limit="+bad, ""); code != 400 {
			t.Errorf("limit=%s: status %d, want 400", bad, code)
		}
	}
	code, h, body := f.do(t, "GET", "/api/v1/plan", "")
	if code != 200 || h.Get("Content-Type") != "application/json; charset=utf-8" ||
		string(body) != `{"revision":"rev3","resources":[{"namespace":"team-a","kind":"StorageAccount","name":"appstore","action":"update"}]}` {
		t.Errorf("plan: %d %q %s", code, h.Get("Content-Type"), body)
	}

	empty := newFixture(t, api.Options{}, false)
	code, _, body = empty.do(t, "GET", "/api/v1/plan", "")
	if e := decode[api.ErrorBody](t, body); code != 404 || e.Error.Code != api.CodeNotFound {
		t.Errorf("plan on empty state: %d %s", code, body)
	}
	code, _, body = empty.do(t, "GET", "/api/v1/runs", "")
	if code != 200 || !bytes.Contains(body, []byte(`"items":[]`)) {
		t.Errorf("runs on empty state: %d %s", code, body)
	}
}

func TestSyncAuth(t *testing.T) {
	f := newFixture(t, api.Options{Token: "s3cr3t-token"}, false)
	for _, tok := range []string{"", "wrong", "s3cr3t-token-longer"} {
		code, h, body := f.do(t, "POST", "/api/v1/sync", tok)
		if e := decode[api.ErrorBody](t, body); code != 401 || e.Error.Code != api.CodeUnauthorized || h.Get("WWW-Authenticate") == "" {
			t.Errorf("token %q: %d %s", tok, code, body)
		}
	}
	if n := f.syncs.Load(); n != 0 {
		t.Errorf("sync called %d times without a valid token", n)
	}
	code, _, body := f.do(t, "POST", "/api/v1/sync", "s3cr3t-token")
	if code != 202 || f.syncs.Load() != 1 {
		t.Errorf("valid token: %d %s, syncs=%d", code, body, f.syncs.Load())
	}
	// Reads need no token.
	if code, _, _ := f.do(t, "GET", "/api/v1/resources", ""); code != 200 {
		t.Errorf("read without token: %d", code)
	}
	if strings.Contains(f.logs.String(), "s3cr3t-token") {
		t.Error("token reached the log")
	}
	if code, _, _ := f.do(t, "GET", "/api/v1/sync", "s3cr3t-token"); code != 405 {
		t.Errorf("GET sync: %d, want 405", code)
	}
}

func TestSyncWithoutTokenAndErrors(t *testing.T) {
	nilSync := newFixture(t, api.Options{}, false)
	code, _, body := nilSync.do(t, "POST", "/api/v1/sync", "")
	if e := decode[api.ErrorBody](t, body); code != 503 || e.Error.Code != api.CodeUnavailable {
		t.Errorf("nil Sync: %d %s", code, body)
	}
	var gotCtx atomic.Bool
	failing := newFixture(t, api.Options{Sync: func(ctx context.Context) error {
		gotCtx.Store(ctx != nil)
		return errors.New("shutting down")
	}}, false)
	code, _, body = failing.do(t, "POST", "/api/v1/sync", "")
	if e := decode[api.ErrorBody](t, body); code != 503 || !strings.Contains(e.Error.Message, "shutting down") || !gotCtx.Load() {
		t.Errorf("failing Sync: %d %s", code, body)
	}
}

func TestProbes(t *testing.T) {
	var notReady atomic.Value
	notReady.Store("")
	f := newFixture(t, api.Options{Ready: func() error {
		if s := notReady.Load().(string); s != "" {
			return errors.New(s)
		}
		return nil
	}}, false)
	if code, _, body := f.do(t, "GET", "/healthz", ""); code != 200 || string(body) != "ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
	if code, _, body := f.do(t, "GET", "/readyz", ""); code != 200 || string(body) != "ok\n" {
		t.Errorf("readyz ready: %d %q", code, body)
	}
	notReady.Store("first fetch of git@example has not finished")
	if code, _, body := f.do(t, "GET", "/readyz", ""); code != 503 || !strings.Contains(string(body), "first fetch of git@example") {
		t.Errorf("readyz not ready: %d %q", code, body)
	}
}

func TestMetrics(t *testing.T) {
	f := newFixture(t, api.Options{}, true)
	code, h, body := f.do(t, "GET", "/metrics", "")
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("metrics: %d %q", code, h.Get("Content-Type"))
	}
	samples := map[string]string{}
	types := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			types[name] = typ
			continue
		}
		if !strings.HasPrefix(line, "gitaso_") { // the Go, process, ARM and reconcile metrics: metrics_test.go
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		samples[line[:i]] = line[i+1:]
	}
	want := map[string]string{
		`gitaso_resources{ready="True"}`:         "3",
		`gitaso_resources{ready="False"}`:        "1",
		`gitaso_resources{ready="Unknown"}`:      "1",
		`gitaso_runs_total{outcome="succeeded"}`: "2",
		`gitaso_runs_total{outcome="failed"}`:    "1",
		`gitaso_runs_total{outcome="refused"}`:   "0",
		`gitaso_runs_total{outcome="partial"}`:   "0",
		`gitaso_last_run_timestamp_seconds`:      strconv.FormatFloat(float64(t0.Add(2*time.Minute+1500*time.Millisecond).UnixMilli())/1e3, 'g', -1, 64),
		`gitaso_last_run_duration_seconds`:       "1.5",
		`gitaso_operations_in_flight`:            "1",
		`gitaso_runs_total{outcome="held"}`:      "0",
		`gitaso_revision_held`:                   "0",
		`gitaso_deletions_held`:                  "0",
		`gitaso_revision_refused`:                "0",
		`gitaso_api_requests_shed_total`:         "0",
		`gitaso_other_writer_resources`:          "0",
		// Without Options.Status: nothing fetched or failed, ready as
		// Options.Ready (nil: ready).
		`gitaso_source_last_success_timestamp_seconds`: "0",
		`gitaso_source_last_attempt_timestamp_seconds`: "0",
		`gitaso_source_consecutive_failures`:           "0",
		`gitaso_source_failures_total`:                 "0",
		`gitaso_state_write_consecutive_failures`:      "0",
		`gitaso_state_write_failures_total`:            "0",
		`gitaso_ready`:                                 "1",
		// No units (no Flux objects): the counts only.
		`gitaso_units{ready="True"}`:    "0",
		`gitaso_units{ready="False"}`:   "0",
		`gitaso_units{ready="Unknown"}`: "0",
	}
	if d := cmp.Diff(want, samples); d != "" {
		t.Errorf("samples (-want +got):\n%s", d)
	}
	if types["gitaso_runs_total"] != "counter" || types["gitaso_resources"] != "gauge" {
		t.Errorf("types: %v", types)
	}
}

func TestRequestLog(t *testing.T) {
	f := newFixture(t, api.Options{Sync: func(context.Context) error { return nil }}, true)
	f.do(t, "GET", "/api/v1/resources/team-a/StorageAccount/nope", "")
	f.do(t, "GET", "/healthz", "")
	f.do(t, "POST", "/api/v1/sync", "{}")
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(f.logs.String()), "\n") {
		recs = append(recs, decode[map[string]any](t, []byte(line)))
	}
	if len(recs) != 3 {
		t.Fatalf("want 3 log records, got %d:\n%s", len(recs), f.logs.String())
	}
	r := recs[0]
	// Reads are Debug (the status page polls); requests that act are Info.
	if r["msg"] != "http request" || r["level"] != "DEBUG" || r["method"] != "GET" ||
		r["path"] != "/api/v1/resources/team-a/StorageAccount/nope" || r["status"] != float64(404) {
		t.Errorf("record: %v", r)
	}
	if d, ok := r["duration"].(float64); !ok || d <= 0 {
		t.Errorf("duration = %v", r["duration"])
	}
	if recs[1]["level"] != "DEBUG" || recs[1]["path"] != "/healthz" || recs[1]["status"] != float64(200) {
		t.Errorf("probe record: %v", recs[1])
	}
	if recs[2]["level"] != "INFO" || recs[2]["method"] != "POST" || recs[2]["path"] != "/api/v1/sync" {
		t.Errorf("sync record: %v", recs[2])
	}
}

func TestUIFallback(t *testing.T) {
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html>gitaso</html>") })
	f := newFixture(t, api.Options{UI: ui}, false)
	if code, _, body := f.do(t, "GET", "/", ""); code != 200 || string(body) != "<html>gitaso</html>" {
		t.Errorf("UI: %d %s", code, body)
	}
	code, _, body := f.do(t, "GET", "/api/v1/unknown", "")
	if e := decode[api.ErrorBody](t, body); code != 404 || e.Error.Code != api.CodeNotFound {
		t.Errorf("unknown API path with UI: %d %s", code, body)
	}
}
