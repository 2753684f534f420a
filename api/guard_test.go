package api_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// request is one hand-built request to a fixture.
type request struct {
	method, path string
	host         string            // Host header; "" keeps the server's 127.0.0.1:port
	header       map[string]string // added as is
	body         string
}

func (f *fixture) send(t *testing.T, rq request) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(rq.method, f.srv.URL+rq.path, strings.NewReader(rq.body))
	if err != nil {
		t.Fatal(err)
	}
	if rq.host != "" {
		req.Host = rq.host
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
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
	return resp.StatusCode, b
}

const jsonCT = "application/json"

// TestMutatingEndpointsResistCSRF: with no token configured, POST
// /api/v1/sync and /api/v1/approve still refuse what a web page of another
// origin can send (a simple text/plain or form POST, an Origin or
// Sec-Fetch-Site naming another site) and a Host that is not the API's
// (DNS rebinding); the status page's own request passes.
func TestMutatingEndpointsResistCSRF(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	f := newFixture(t, api.Options{
		Sync: func(context.Context) error { mu.Lock(); calls = append(calls, "sync"); mu.Unlock(); return nil },
		Approve: func(_ context.Context, rev string) error {
			mu.Lock()
			calls = append(calls, "approve "+rev)
			mu.Unlock()
			return nil
		},
	}, false)
	self := strings.TrimPrefix(f.srv.URL, "http://")
	port := self[strings.LastIndexByte(self, ':')+1:]
	approveBody := `{"revision":"0123456789abcdef"}`
	for _, tc := range []struct {
		name   string
		host   string
		header map[string]string
		want   int
		code   string
	}{
		{"curl with JSON", "", map[string]string{"Content-Type": jsonCT}, 202, ""},
		{"JSON with charset", "", map[string]string{"Content-Type": "application/json; charset=utf-8"}, 202, ""},
		{"status page (same origin)", "", map[string]string{"Content-Type": jsonCT, "Origin": f.srv.URL, "Sec-Fetch-Site": "same-origin"}, 202, ""},
		{"localhost name", "localhost:" + port, map[string]string{"Content-Type": jsonCT, "Origin": "http://localhost:" + port}, 202, ""},
		{"IPv6 loopback", "[::1]:" + port, map[string]string{"Content-Type": jsonCT}, 202, ""},
		{"no content type", "", nil, 415, api.CodeUnsupportedMediaType},
		{"text/plain (a simple cross-site POST)", "", map[string]string{"Content-Type": "text/plain"}, 415, api.CodeUnsupportedMediaType},
		{"form", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, api.CodeUnsupportedMediaType},
		{"cross-site fetch", "", map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "cross-site"}, 403, api.CodeForbidden},
		{"same-site other port", "", map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "same-site"}, 403, api.CodeForbidden},
		{"other origin", "", map[string]string{"Content-Type": jsonCT, "Origin": "https://evil.example"}, 403, api.CodeForbidden},
		{"other port of localhost", "", map[string]string{"Content-Type": jsonCT, "Origin": "http://127.0.0.1:1"}, 403, api.CodeForbidden},
		{"null origin", "", map[string]string{"Content-Type": jsonCT, "Origin": "null"}, 403, api.CodeForbidden},
		{"DNS rebinding", "evil.example:" + port, map[string]string{"Content-Type": jsonCT, "Origin": "http://evil.example:" + port}, 403, api.CodeForbidden},
		{"rebinding without Origin", "evil.example:" + port, map[string]string{"Content-Type": jsonCT}, 403, api.CodeForbidden},
	} {
		for _, path := range []string{"/api/v1/sync", "/api/v1/approve"} {
			t.Run(tc.name+" "+path, func(t *testing.T) {
				mu.Lock()
				before := len(calls)
				mu.Unlock()
				code, body := f.send(t, request{method: http.MethodPost, path: path, host: tc.host, header: tc.header, body: approveBody})
				if code != tc.want {
					t.Fatalf("status %d, want %d: %s", code, tc.want, body)
				}
				if tc.code != "" {
					if e := decode[api.ErrorBody](t, body); e.Error.Code != tc.code {
						t.Errorf("error code %q, want %q: %s", e.Error.Code, tc.code, body)
					}
				}
				mu.Lock()
				called := len(calls) > before
				mu.Unlock()
				if called != (tc.want == 202) {
					t.Errorf("handler called = %v with status %d", called, code)
				}
			})
		}
	}
	// A CORS preflight is never granted.
	code, _ := f.send(t, request{method: http.MethodOptions, path: "/api/v1/sync", header: map[string]string{
		"Origin": "https://evil.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}})
	if code/100 == 2 {
		t.Errorf("preflight answered %d", code)
	}
	req, _ := http.NewRequest(http.MethodOptions, f.srv.URL+"/api/v1/sync", nil)
	req.Header.Set("Origin", "https://evil.example")
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("Access-Control-Allow-Origin: %q", got)
	}
}

// TestHostCheck: every endpoint but /healthz and the webhook answers only
// the Host names it knows (DNS rebinding reads status too).
func TestHostCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		listen  string
		allowed []string
		ok, bad []string
	}{
		{"loopback default", "", nil,
			[]string{"127.0.0.1:8080", "localhost:8080", "LOCALHOST", "localhost.", "app.localhost:8080", "[::1]:8080", "127.8.9.10"},
			[]string{"evil.example:8080", "10.0.0.5:8080", "localhost.evil.example", "127.0.0.1.nip.io:8080"}},
		{"listen on a name", "gitaso.internal:8080", nil,
			[]string{"gitaso.internal:8080", "GITASO.internal", "localhost:8080"},
			[]string{"other.internal:8080", "10.0.0.5"}},
		{"listen on an IP", "10.0.0.5:8080", nil,
			[]string{"10.0.0.5:8080", "127.0.0.1:8080"},
			[]string{"10.0.0.6:8080", "evil.example"}},
		{"listen on every address", "0.0.0.0:8080", []string{"gitaso.example.com", ".corp.example"},
			[]string{"10.0.0.5:8080", "[fd00::1]:8080", "gitaso.example.com", "corp.example", "a.b.corp.example:443"},
			[]string{"evil.example", "gitaso.example.com.evil.example", "xcorp.example"}},
		{"listen on :port", ":8080", nil, []string{"192.168.1.4:8080"}, []string{"rebind.example:8080"}},
		{"wildcard", "", []string{"*"}, []string{"anything.example"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, api.Options{ListenAddr: tc.listen, AllowedHosts: tc.allowed}, true)
			for _, h := range tc.ok {
				for _, p := range []string{"/api/v1/resources", "/api/v1/runs", "/metrics", "/readyz"} {
					if code, body := f.send(t, request{method: http.MethodGet, path: p, host: h}); code != 200 {
						t.Errorf("Host %s %s: %d %s", h, p, code, body)
					}
				}
			}
			for _, h := range tc.bad {
				for _, p := range []string{"/api/v1/resources", "/api/v1/plan", "/metrics", "/readyz", "/"} {
					code, body := f.send(t, request{method: http.MethodGet, path: p, host: h})
					if code != 403 {
						t.Errorf("Host %s %s: %d, want 403", h, p, code)
						continue
					}
					if e := decode[api.ErrorBody](t, body); e.Error.Code != api.CodeForbidden || !strings.Contains(e.Error.Message, "--api-allowed-hosts") {
						t.Errorf("Host %s: %s", h, body)
					}
					if strings.Contains(string(body), "team-a") {
						t.Errorf("Host %s %s: state served: %s", h, p, body)
					}
				}
				// Liveness answers any Host.
				if code, _ := f.send(t, request{method: http.MethodGet, path: "/healthz", host: h}); code != 200 {
					t.Errorf("Host %s /healthz: %d", h, code)
				}
			}
		})
	}
}

// The webhook keeps its own authentication and answers any Host: Git hosts
// call it by the public name of whatever forwards to gitaso.
func TestWebhookAnyHost(t *testing.T) {
	f := newFixture(t, api.Options{Webhook: func(context.Context) error { return nil }, WebhookSecret: "hook-secret"}, false)
	for _, auth := range []string{"Bearer hook-secret", "bearer hook-secret", "BEARER hook-secret"} {
		code, body := f.send(t, request{method: http.MethodPost, path: "/api/v1/webhook", host: "hooks.example.com",
			header: map[string]string{"Authorization": auth}, body: "{}"})
		if code != 202 {
			t.Errorf("%s from another Host: %d %s", auth, code, body)
		}
	}
	if code, _ := f.send(t, request{method: http.MethodPost, path: "/api/v1/webhook", host: "hooks.example.com", body: "{}"}); code != 401 {
		t.Errorf("unauthenticated webhook: %d", code)
	}
}

// RFC 7235: the auth scheme is case-insensitive.
func TestBearerSchemeCaseInsensitive(t *testing.T) {
	f := newFixture(t, api.Options{Token: "tok-123"}, false)
	for i, auth := range []string{"Bearer tok-123", "bearer tok-123", "BEARER tok-123", "BeArEr   tok-123 "} {
		code, body := f.send(t, request{method: http.MethodPost, path: "/api/v1/sync", header: map[string]string{"Content-Type": jsonCT, "Authorization": auth}})
		if code != 202 || f.syncs.Load() != int32(i+1) {
			t.Errorf("%q: %d %s", auth, code, body)
		}
	}
	for _, auth := range []string{"Basic tok-123", "Bearer", "Bearertok-123", "tok-123", "Bearer tok-1234"} {
		code, _ := f.send(t, request{method: http.MethodPost, path: "/api/v1/sync", header: map[string]string{"Content-Type": jsonCT, "Authorization": auth}})
		if code != 401 {
			t.Errorf("%q: %d, want 401", auth, code)
		}
	}
}

func TestValidateAndLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true, "127.1.2.3:80": true, "LocalHost:1": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "10.0.0.5:8080": false, "gitaso.internal:8080": false,
	} {
		if got := api.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
	err := api.Options{ListenAddr: "0.0.0.0:8080"}.Validate()
	if !errors.Is(err, api.ErrTokenRequired) || !strings.Contains(err.Error(), "--api-token-file") || !strings.Contains(err.Error(), "0.0.0.0:8080") {
		t.Errorf("no token on 0.0.0.0: %v", err)
	}
	for _, o := range []api.Options{
		{ListenAddr: "0.0.0.0:8080", Token: "t"},
		{ListenAddr: "127.0.0.1:8080"},
		{ListenAddr: "localhost:0"},
		{},
		{AllowedHosts: []string{"gitaso.example.com", ".example.com", "*", "10.0.0.1:8080"}},
	} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	for _, h := range []string{"https://gitaso.example.com", "", "a b", "user@host"} {
		if err := (api.Options{AllowedHosts: []string{h}}).Validate(); err == nil {
			t.Errorf("allowed host %q accepted", h)
		}
	}
}

func TestApprove(t *testing.T) {
	var got []string
	var mu sync.Mutex
	f := newFixture(t, api.Options{Token: "tok", Approve: func(ctx context.Context, rev string) error {
		mu.Lock()
		defer mu.Unlock()
		if ctx == nil {
			return errors.New("no context")
		}
		if strings.HasPrefix(rev, "deadbee") {
			return fmt.Errorf("no deletions of that revision are held: %s", rev)
		}
		got = append(got, rev)
		return nil
	}}, false)
	post := func(body string, hdr map[string]string) (int, []byte) {
		h := map[string]string{"Content-Type": jsonCT, "Authorization": "Bearer tok"}
		for k, v := range hdr {
			h[k] = v
		}
		return f.send(t, request{method: http.MethodPost, path: "/api/v1/approve", header: h, body: body})
	}
	code, body := post(`{"revision":"0123456789abcdef0123456789abcdef01234567"}`, nil)
	if code != 202 || !strings.Contains(string(body), `"status":"accepted"`) {
		t.Fatalf("approve: %d %s", code, body)
	}
	if code, body := post(`{"revision":" 0123456 "}`, nil); code != 202 {
		t.Errorf("7-character prefix: %d %s", code, body)
	}
	if len(got) != 2 || got[0] != "0123456789abcdef0123456789abcdef01234567" || got[1] != "0123456" {
		t.Errorf("Approve got %q", got)
	}
	for _, bad := range []string{``, `{}`, `{"revision":""}`, `{"revision":"012345"}`, `{"revision":7}`, `{"rev":"0123456789"}`, `not json`,
		`{"revision":"0123456789"} {"revision":"abcdef0123"}`, `["0123456789"]`} {
		code, body := post(bad, nil)
		if e := decode[api.ErrorBody](t, body); code != 400 || e.Error.Code != api.CodeBadRequest {
			t.Errorf("body %q: %d %s", bad, code, body)
		}
	}
	code, body = post(`{"revision":"deadbeef"}`, nil)
	if e := decode[api.ErrorBody](t, body); code != 409 || e.Error.Code != api.CodeConflict || !strings.Contains(e.Error.Message, "no deletions of that revision are held: deadbeef") {
		t.Errorf("not held: %d %s", code, body)
	}
	if code, _ := post(`{"revision":"0123456789"}`, map[string]string{"Authorization": ""}); code != 401 {
		t.Errorf("approve without the token: %d", code)
	}
	if code, _ := post(`{"revision":"0123456789"}`, map[string]string{"Content-Type": "text/plain"}); code != 415 {
		t.Errorf("approve as text/plain: %d", code)
	}
	if code, _ := post(`{"revision":"`+strings.Repeat("a", 70<<10)+`"}`, nil); code != 413 {
		t.Errorf("approve with a 70 KiB body: %d", code)
	}
	if len(got) != 2 {
		t.Errorf("Approve called by refused requests: %q", got)
	}
	if code, _ := f.send(t, request{method: http.MethodGet, path: "/api/v1/approve"}); code != 405 {
		t.Errorf("GET approve: %d", code)
	}

	off := newFixture(t, api.Options{}, false)
	code, body = off.send(t, request{method: http.MethodPost, path: "/api/v1/approve", header: map[string]string{"Content-Type": jsonCT}, body: `{"revision":"0123456789"}`})
	if e := decode[api.ErrorBody](t, body); code != 503 || e.Error.Code != api.CodeUnavailable {
		t.Errorf("nil Approve: %d %s", code, body)
	}
}

func TestBodyLimits(t *testing.T) {
	f := newFixture(t, api.Options{Sync: func(context.Context) error { return nil },
		Webhook: func(context.Context) error { return nil }, WebhookSecret: "s"}, false)
	code, body := f.send(t, request{method: http.MethodPost, path: "/api/v1/sync", header: map[string]string{"Content-Type": jsonCT}, body: strings.Repeat(" ", 65<<10)})
	if e := decode[api.ErrorBody](t, body); code != 413 || e.Error.Code != api.CodeTooLarge {
		t.Errorf("sync with 65 KiB: %d %s", code, body)
	}
	if code, body := f.send(t, request{method: http.MethodPost, path: "/api/v1/sync", header: map[string]string{"Content-Type": jsonCT}, body: "{}"}); code != 202 {
		t.Errorf("sync with {}: %d %s", code, body)
	}
	code, body = f.send(t, request{method: http.MethodPost, path: "/api/v1/webhook", header: map[string]string{"X-Gitlab-Token": "s"}, body: strings.Repeat("x", 1<<20+1)})
	if e := decode[api.ErrorBody](t, body); code != 413 || e.Error.Code != api.CodeTooLarge {
		t.Errorf("webhook with 1 MiB + 1: %d %s", code, body)
	}
}

// TestMetricsHeld: the held gauges follow the newest finished run.
func TestMetricsHeld(t *testing.T) {
	f := newFixture(t, api.Options{}, true)
	metric := func(name string) string {
		t.Helper()
		_, _, body := f.do(t, "GET", "/metrics", "")
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				return v
			}
		}
		t.Fatalf("no %s in\n%s", name, body)
		return ""
	}
	put := func(r *record.Run) {
		t.Helper()
		if err := f.db.Update(func(w *state.Writer) error { return w.PutRun(r) }); err != nil {
			t.Fatal(err)
		}
	}
	hold := &record.Hold{Reason: record.HoldMassDeletion, Message: "too many", Deletions: 30, Managed: 40}
	put(&record.Run{Revision: "rev4", StartedAt: t0.Add(time.Hour), FinishedAt: t0.Add(time.Hour + time.Second), Outcome: record.OutcomeHeld, Held: hold})
	if a, b, c := metric("gitaso_revision_held"), metric("gitaso_deletions_held"), metric(`gitaso_runs_total{outcome="held"}`); a != "1" || b != "30" || c != "1" {
		t.Errorf("after a held run: revision_held %s, deletions_held %s, runs_total{held} %s", a, b, c)
	}
	// A run in progress does not hide the finished one.
	running := &record.Run{Revision: "rev4", StartedAt: t0.Add(2 * time.Hour)}
	put(running)
	if a, b := metric("gitaso_revision_held"), metric("gitaso_deletions_held"); a != "1" || b != "30" {
		t.Errorf("while a run is in progress: revision_held %s, deletions_held %s", a, b)
	}
	running.FinishedAt, running.Outcome = t0.Add(2*time.Hour+time.Second), record.OutcomeSucceeded
	put(running)
	if a, b := metric("gitaso_revision_held"), metric("gitaso_deletions_held"); a != "0" || b != "0" {
		t.Errorf("after the approved run: revision_held %s, deletions_held %s", a, b)
	}
}
