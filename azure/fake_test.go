package azure

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testTenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	testSub    = "00000000-1111-2222-3333-444444444444"
	testClient = "11111111-2222-3333-4444-555555555555"
	testSecret = "s3cr3t-value-do-not-print"
)

// fakeAzure is a small TLS server speaking Entra ID's discovery and token
// endpoints, the App Service managed identity protocol, and whatever ARM
// behaviour a test registers with handle.
type fakeAzure struct {
	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	handlers  map[string]http.HandlerFunc // "METHOD /path" (path lower-cased)
	requests  []recorded
	tokenReqs []url.Values
	// assertion, when set, is the only client_assertion accepted.
	assertion string
	noRecord  bool // benchmarks: keep no request log
}

type recorded struct {
	Method, Path, Query, Auth string
	At                        time.Time
}

func newFakeAzure(t testing.TB) *fakeAzure {
	t.Helper()
	f := &fakeAzure{t: t, handlers: map[string]http.HandlerFunc{}}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // TLS failures are provoked on purpose
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAzure) handle(method, path string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[method+" "+strings.ToLower(path)] = h
}

func (f *fakeAzure) url(path string) string { return f.srv.URL + path }

// cloud returns a Cloud for the fake server with its CA written to a file.
func (f *fakeAzure) cloud() Cloud {
	dir := f.t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		f.t.Fatal(err)
	}
	return Cloud{Name: "fake", ARMEndpoint: f.srv.URL, AuthorityHost: f.srv.URL + "/", Audience: PublicARMAudience, CAFile: ca}
}

func (f *fakeAzure) armRequests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []recorded
	for _, r := range f.requests {
		if strings.HasPrefix(strings.ToLower(r.Path), "/subscriptions") || strings.HasPrefix(r.Path, "/providers") || strings.HasPrefix(r.Path, "/ops") {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeAzure) tokenRequests() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]url.Values(nil), f.tokenReqs...)
}

func (f *fakeAzure) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if !f.noRecord {
		f.requests = append(f.requests, recorded{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization"), At: time.Now()})
	}
	h := f.handlers[r.Method+" "+strings.ToLower(r.URL.Path)]
	f.mu.Unlock()
	host := "https://" + r.Host
	switch {
	case strings.HasSuffix(r.URL.Path, "/v2.0/.well-known/openid-configuration"):
		tenant := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")[0]
		writeJSON(w, 200, map[string]any{
			"issuer":                 host + "/" + tenant + "/v2.0",
			"token_endpoint":         host + "/" + tenant + "/oauth2/v2.0/token",
			"authorization_endpoint": host + "/" + tenant + "/oauth2/v2.0/authorize",
			"jwks_uri":               host + "/" + tenant + "/discovery/v2.0/keys",
		})
		return
	case strings.HasSuffix(r.URL.Path, "/oauth2/v2.0/token"):
		if err := r.ParseForm(); err != nil {
			writeJSON(w, 400, map[string]any{"error": "invalid_request"})
			return
		}
		f.mu.Lock()
		f.tokenReqs = append(f.tokenReqs, r.PostForm)
		want := f.assertion
		f.mu.Unlock()
		form := r.PostForm
		if !strings.Contains(" "+form.Get("scope")+" ", " "+PublicARMAudience+"/.default ") {
			writeJSON(w, 400, map[string]any{"error": "invalid_scope", "error_description": "AADSTS70011: bad scope " + form.Get("scope")})
			return
		}
		switch {
		case form.Get("client_secret") != "":
			if form.Get("client_secret") != testSecret {
				writeJSON(w, 401, map[string]any{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."})
				return
			}
		case form.Get("client_assertion") != "":
			if want != "" && form.Get("client_assertion") != want {
				writeJSON(w, 401, map[string]any{"error": "invalid_client", "error_description": "AADSTS700211: No matching federated identity record found."})
				return
			}
		default:
			writeJSON(w, 401, map[string]any{"error": "invalid_client", "error_description": "AADSTS7000216: client_assertion or client_secret is required."})
			return
		}
		writeJSON(w, 200, map[string]any{"token_type": "Bearer", "expires_in": 3600, "ext_expires_in": 3600,
			"access_token": "tok-" + form.Get("client_id")})
		return
	case r.URL.Path == "/msi/token":
		if r.Header.Get("X-IDENTITY-HEADER") != "identity-header-value" {
			writeJSON(w, 401, map[string]any{"error": "bad identity header"})
			return
		}
		f.mu.Lock()
		f.tokenReqs = append(f.tokenReqs, r.URL.Query())
		f.mu.Unlock()
		writeJSON(w, 200, map[string]any{"access_token": "tok-mi-" + r.URL.Query().Get("client_id"),
			"expires_on": fmt.Sprint(time.Now().Add(time.Hour).Unix()), "resource": r.URL.Query().Get("resource"), "token_type": "Bearer"})
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer tok-") {
		writeJSON(w, 401, armErr("AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing."))
		return
	}
	if h == nil {
		writeJSON(w, 404, armErr("ResourceNotFound", "The Resource '"+r.URL.Path+"' was not found."))
		return
	}
	h(w, r)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func armErr(code, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": msg}}
}

func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}

// secretCred returns a client-secret credential for the fake tenant.
func secretCred(t testing.TB, source string) *Credential {
	t.Helper()
	c, err := CredentialFromSecret(source, map[string]string{
		KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: testClient, KeyClientSecret: testSecret,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testOptions polls fast and keeps retries short so tests finish quickly.
func testOptions() Options {
	o := DefaultOptions()
	o.PollInterval = 10 * time.Millisecond
	o.Retry.RetryDelay = 10 * time.Millisecond
	o.Retry.MaxRetryDelay = 2 * time.Second
	return o
}

func newTestClient(t *testing.T, f *fakeAzure) *Client {
	t.Helper()
	cs := NewClients(f.cloud(), testOptions())
	c, err := cs.For(secretCred(t, "team-a/aso-credential"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }
