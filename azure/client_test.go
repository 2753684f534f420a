package azure

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	rgID  = "/subscriptions/" + testSub + "/resourceGroups/rg1"
	saID  = rgID + "/providers/Microsoft.Storage/storageAccounts/sa1"
	rgAPI = "2021-04-01"
	saAPI = "2023-01-01"
)

func TestGetAndNotFound(t *testing.T) {
	f := newFakeAzure(t)
	f.handle("GET", rgID, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"id": rgID, "name": "rg1", "location": "westeurope"})
	})
	c := newTestClient(t, f)
	ctx := context.Background()
	body, err := c.Get(ctx, rgID, rgAPI)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil || got["name"] != "rg1" {
		t.Fatalf("body %s, err %v", body, err)
	}
	_, err = c.Get(ctx, rgID+"x", rgAPI)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
	var ae *ARMError
	if !errors.As(err, &ae) || ae.Code != "ResourceNotFound" || ae.StatusCode != 404 || !strings.Contains(ae.Message, "rg1x") {
		t.Fatalf("ARMError = %+v", ae)
	}
	// api-version on every ARM request, bearer token from the tenant.
	for _, r := range f.armRequests() {
		if r.Query != "api-version="+rgAPI {
			t.Errorf("%s %s query %q", r.Method, r.Path, r.Query)
		}
		if r.Auth != "Bearer tok-"+testClient {
			t.Errorf("%s %s auth %q", r.Method, r.Path, r.Auth)
		}
	}
	if n := len(f.tokenRequests()); n != 1 {
		t.Errorf("token requests = %d, want 1 (cached)", n)
	}
}

func TestPutSync201WithRelativeLocation(t *testing.T) {
	f := newFakeAzure(t)
	var gets atomic.Int32
	f.handle("PUT", rgID, func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		_ = json.Unmarshal(readBody(r), &in)
		// Real ARM answers a resource group PUT synchronously, with a relative Location.
		w.Header().Set("Location", rgID+"?api-version="+rgAPI)
		writeJSON(w, 201, map[string]any{"id": rgID, "name": "rg1", "location": in["location"],
			"properties": map[string]any{"provisioningState": "Succeeded"}})
	})
	f.handle("GET", rgID, func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		writeJSON(w, 200, map[string]any{"id": rgID})
	})
	c := newTestClient(t, f)
	out, err := c.Put(context.Background(), rgID, rgAPI, []byte(`{"location":"westeurope"}`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(out, &got)
	if got["location"] != "westeurope" {
		t.Fatalf("Put returned %s", out)
	}
	if gets.Load() != 0 {
		t.Errorf("a sync PUT answered with the resource needs no GET; got %d", gets.Load())
	}
}

func TestPutAsyncOperation(t *testing.T) {
	f := newFakeAzure(t)
	var polls atomic.Int32
	opURL := f.url("/ops/op1?api-version=" + saAPI)
	f.handle("PUT", saID, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("content-type %q", r.Header.Get("Content-Type"))
		}
		w.Header().Set("Azure-AsyncOperation", opURL)
		w.Header().Set("Retry-After", "0")
		writeJSON(w, 201, map[string]any{"id": saID, "properties": map[string]any{"provisioningState": "Creating"}})
	})
	f.handle("GET", "/ops/op1", func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) < 3 {
			writeJSON(w, 200, map[string]any{"status": "InProgress"})
			return
		}
		writeJSON(w, 200, map[string]any{"status": "Succeeded"})
	})
	f.handle("GET", saID, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"id": saID, "properties": map[string]any{"provisioningState": "Succeeded", "primaryEndpoints": map[string]any{"blob": "https://sa1.blob"}}})
	})
	c := newTestClient(t, f)
	out, err := c.Put(context.Background(), saID, saAPI, []byte(`{"location":"westeurope"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "primaryEndpoints") {
		t.Fatalf("want final GET body, got %s", out)
	}
	if polls.Load() != 3 {
		t.Errorf("polls = %d, want 3", polls.Load())
	}
	var methods []string
	for _, r := range f.armRequests() {
		methods = append(methods, r.Method+" "+r.Path)
	}
	want := []string{"PUT " + saID, "GET /ops/op1", "GET /ops/op1", "GET /ops/op1", "GET " + saID}
	if diff := cmp.Diff(want, methods); diff != "" {
		t.Errorf("request sequence (-want +got):\n%s", diff)
	}
}

func TestPutFailedOperation(t *testing.T) {
	f := newFakeAzure(t)
	f.handle("PUT", saID, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Azure-AsyncOperation", f.url("/ops/op2"))
		writeJSON(w, 201, map[string]any{"id": saID, "properties": map[string]any{"provisioningState": "Creating"}})
	})
	f.handle("GET", "/ops/op2", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"status": "Failed", "error": map[string]any{
			"code": "StorageAccountAlreadyTaken", "message": "The storage account named sa1 is already taken."}})
	})
	c := newTestClient(t, f)
	_, err := c.Put(context.Background(), saID, saAPI, []byte(`{}`))
	var ae *ARMError
	if !errors.As(err, &ae) {
		t.Fatalf("want ARMError, got %v", err)
	}
	if ae.Code != "StorageAccountAlreadyTaken" || !strings.Contains(ae.Message, "already taken") || ae.Method != "PUT" || ae.Path != saID {
		t.Fatalf("ARMError = %+v", ae)
	}
}

func TestPutBodyPolling(t *testing.T) {
	// 200 with a non-terminal provisioningState and no polling header: poll the resource.
	f := newFakeAzure(t)
	var gets atomic.Int32
	f.handle("PUT", saID, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"id": saID, "properties": map[string]any{"provisioningState": "Updating"}})
	})
	f.handle("GET", saID, func(w http.ResponseWriter, r *http.Request) {
		state := "Updating"
		if gets.Add(1) >= 2 {
			state = "Succeeded"
		}
		writeJSON(w, 200, map[string]any{"id": saID, "properties": map[string]any{"provisioningState": state}})
	})
	c := newTestClient(t, f)
	out, err := c.Put(context.Background(), saID, saAPI, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if provisioningState(out) != "Succeeded" || gets.Load() != 2 {
		t.Fatalf("out %s after %d GETs", out, gets.Load())
	}
}

func TestDelete(t *testing.T) {
	f := newFakeAzure(t)
	var polls atomic.Int32
	f.handle("DELETE", saID, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", f.url("/ops/del1?api-version="+saAPI))
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(202)
	})
	f.handle("GET", "/ops/del1", func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) < 2 {
			w.WriteHeader(202)
			return
		}
		w.WriteHeader(204)
	})
	c := newTestClient(t, f)
	ctx := context.Background()
	if err := c.Delete(ctx, saID, saAPI); err != nil {
		t.Fatal(err)
	}
	if polls.Load() != 2 {
		t.Errorf("polls = %d", polls.Load())
	}
	// Absent: 404 is success.
	if err := c.Delete(ctx, rgID+"/providers/Microsoft.Storage/storageAccounts/gone", saAPI); err != nil {
		t.Fatalf("delete of absent resource: %v", err)
	}
}

func TestDeleteLocationPollNotFound(t *testing.T) {
	f := newFakeAzure(t)
	f.handle("DELETE", saID, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", f.url("/ops/del2"))
		w.WriteHeader(202)
	})
	f.handle("GET", "/ops/del2", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 404, armErr("ResourceNotFound", "gone"))
	})
	c := newTestClient(t, f)
	if err := c.Delete(context.Background(), saID, saAPI); err != nil {
		t.Fatalf("404 while polling a delete is success: %v", err)
	}
}

func TestRetryAfter429(t *testing.T) {
	f := newFakeAzure(t)
	var n atomic.Int32
	f.handle("GET", rgID, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, 429, armErr("TooManyRequests", "The request is being throttled."))
			return
		}
		writeJSON(w, 200, map[string]any{"id": rgID})
	})
	c := newTestClient(t, f)
	if _, err := c.Get(context.Background(), rgID, rgAPI); err != nil {
		t.Fatal(err)
	}
	reqs := f.armRequests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2", len(reqs))
	}
	// The retry waited for Retry-After (1 s), not the 10 ms retry delay.
	if gap := reqs[1].At.Sub(reqs[0].At); gap < 900*time.Millisecond {
		t.Errorf("retry came %v after the 429; Retry-After was 1s", gap)
	}
}

func TestErrorsClassified(t *testing.T) {
	f := newFakeAzure(t)
	f.handle("PUT", saID, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 403, armErr("AuthorizationFailed", "The client '"+testClient+"' with object id 'x' does not have authorization to perform action 'Microsoft.Storage/storageAccounts/write' over scope '"+saID+"' or the scope is invalid."))
	})
	f.handle("PUT", rgID, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 400, armErr("LocationRequired", "The location property is required for this definition."))
	})
	f.handle("PUT", rgID+"/providers/Microsoft.Cdn/profiles/p1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(409)
		_, _ = w.Write([]byte("conflict without a JSON body"))
	})
	c := newTestClient(t, f)
	ctx := context.Background()
	tests := []struct {
		id        string
		status    int
		code      string
		retryable bool
	}{
		{saID, 403, "AuthorizationFailed", true},
		{rgID, 400, "LocationRequired", false},
		{rgID + "/providers/Microsoft.Cdn/profiles/p1", 409, "Conflict", true},
	}
	for _, tc := range tests {
		_, err := c.Put(ctx, tc.id, "2021-01-01", []byte(`{}`))
		var ae *ARMError
		if !errors.As(err, &ae) {
			t.Fatalf("%s: want ARMError, got %v", tc.id, err)
		}
		if ae.StatusCode != tc.status || ae.Code != tc.code || ae.Retryable != tc.retryable || ae.Message == "" {
			t.Errorf("%s: got %+v", tc.id, ae)
		}
		if !strings.Contains(err.Error(), tc.code) {
			t.Errorf("error text %q lacks the code", err)
		}
	}
}

func TestNoProviderRegistration(t *testing.T) {
	f := newFakeAzure(t)
	f.handle("PUT", saID, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 409, armErr("MissingSubscriptionRegistration", "The subscription is not registered to use namespace 'Microsoft.Storage'."))
	})
	c := newTestClient(t, f)
	_, err := c.Put(context.Background(), saID, saAPI, []byte(`{}`))
	var ae *ARMError
	if !errors.As(err, &ae) || ae.Code != "MissingSubscriptionRegistration" {
		t.Fatalf("got %v", err)
	}
	for _, r := range f.armRequests() {
		if strings.Contains(r.Path, "/register") || (r.Method == "GET" && strings.Contains(r.Path, "/providers/Microsoft.Storage") && r.Path != saID) {
			t.Errorf("unexpected provider registration request %s %s", r.Method, r.Path)
		}
	}
	if n := len(f.armRequests()); n != 1 {
		t.Errorf("ARM requests = %d, want 1", n)
	}
}

func TestListFollowsNextLink(t *testing.T) {
	f := newFakeAzure(t)
	coll := rgID + "/providers/Microsoft.ServiceBus/namespaces"
	f.handle("GET", coll, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("$skiptoken") == "" {
			writeJSON(w, 200, map[string]any{"value": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}},
				"nextLink": f.url(coll + "?api-version=2021-11-01&$skiptoken=p2")})
			return
		}
		writeJSON(w, 200, map[string]any{"value": []any{map[string]any{"name": "c"}}})
	})
	c := newTestClient(t, f)
	items, err := c.List(context.Background(), coll, "2021-11-01")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range items {
		var v struct{ Name string }
		_ = json.Unmarshal(it, &v)
		names = append(names, v.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, names); diff != "" {
		t.Error(diff)
	}
}

func TestQueryPages(t *testing.T) {
	f := newFakeAzure(t)
	var bodies []map[string]any
	f.handle("POST", "/providers/Microsoft.ResourceGraph/resources", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api-version") != ResourceGraphAPIVersion {
			t.Errorf("api-version %q", r.URL.RawQuery)
		}
		var in map[string]any
		_ = json.Unmarshal(readBody(r), &in)
		bodies = append(bodies, in)
		opts := in["options"].(map[string]any)
		if opts["$skipToken"] == nil {
			writeJSON(w, 200, map[string]any{"totalRecords": 3, "count": 2, "$skipToken": "tok2",
				"data": []any{map[string]any{"id": "a", "n": 1}, map[string]any{"id": "b", "n": 2.5}}})
			return
		}
		writeJSON(w, 200, map[string]any{"totalRecords": 3, "count": 1, "data": []any{map[string]any{"id": "c", "tags": map[string]any{"x": 7}}}})
	})
	c := newTestClient(t, f)
	rows, err := c.Query(context.Background(), "Resources | project id", []string{testSub})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"id": "a", "n": int64(1)}, {"id": "b", "n": 2.5}, {"id": "c", "tags": map[string]any{"x": int64(7)}}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if len(bodies) != 2 {
		t.Fatalf("pages = %d", len(bodies))
	}
	wantFirst := map[string]any{"subscriptions": []any{testSub}, "query": "Resources | project id",
		"options": map[string]any{"$top": float64(1000), "resultFormat": "objectArray"}}
	if diff := cmp.Diff(wantFirst, bodies[0]); diff != "" {
		t.Errorf("first request (-want +got):\n%s", diff)
	}
	if bodies[1]["options"].(map[string]any)["$skipToken"] != "tok2" {
		t.Errorf("second page request %v", bodies[1])
	}
}

func TestPost(t *testing.T) {
	f := newFakeAzure(t)
	f.handle("POST", saID+"/listKeys", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"keys": []any{map[string]any{"keyName": "key1"}}})
	})
	f.handle("POST", saID+"/regenerate", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", f.url("/ops/post1"))
		w.WriteHeader(202)
	})
	f.handle("GET", "/ops/post1", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"done": true})
	})
	c := newTestClient(t, f)
	out, err := c.Post(context.Background(), saID+"/listKeys", saAPI, nil)
	if err != nil || !strings.Contains(string(out), "key1") {
		t.Fatalf("%s %v", out, err)
	}
	out, err = c.Post(context.Background(), saID+"/regenerate", saAPI, []byte(`{}`))
	if err != nil || !strings.Contains(string(out), "done") {
		t.Fatalf("LRO post: %s %v", out, err)
	}
}

func TestClientsCachePerCredential(t *testing.T) {
	f := newFakeAzure(t)
	cs := NewClients(f.cloud(), testOptions())
	a, err := cs.For(secretCred(t, "team-a/aso-credential"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := cs.For(secretCred(t, "team-a/aso-credential"))
	if a != b {
		t.Error("equal credentials must share a client")
	}
	rotated, _ := CredentialFromSecret("team-a/aso-credential", map[string]string{
		KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: testClient, KeyClientSecret: "rotated"})
	c, _ := cs.For(rotated)
	if c == a {
		t.Error("a rotated secret must get its own pipeline")
	}
}

func TestBadTokenSurfaces(t *testing.T) {
	f := newFakeAzure(t)
	f.handle("GET", rgID, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]any{"id": rgID}) })
	cs := NewClients(f.cloud(), testOptions())
	cred, _ := CredentialFromSecret("ns/aso-credential", map[string]string{
		KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: testClient, KeyClientSecret: "wrong-secret-value"})
	c, err := cs.For(cred)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(context.Background(), rgID, rgAPI)
	if err == nil || !strings.Contains(err.Error(), "AADSTS7000215") {
		t.Fatalf("want the token endpoint's error, got %v", err)
	}
	if strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatal("error leaks the secret")
	}
	if len(f.armRequests()) != 0 {
		t.Error("no ARM request may be sent without a token")
	}
}

func TestWorkloadIdentityAndManagedIdentity(t *testing.T) {
	f := newFakeAzure(t)
	f.handle("GET", rgID, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"id": rgID, "auth": r.Header.Get("Authorization")})
	})
	dir := t.TempDir()
	tokenFile := dir + "/token"
	const assertion = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6Z2l0YXNvOmdpdGFzbyJ9.c2ln"
	if err := writeFile(tokenFile, assertion); err != nil {
		t.Fatal(err)
	}
	f.assertion = assertion
	opts := testOptions()
	opts.FederatedTokenFile = tokenFile
	cs := NewClients(f.cloud(), opts)
	wi, err := CredentialFromSecret("team-b/aso-credential", map[string]string{
		KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: "wi-client"})
	if err != nil || wi.Kind() != KindWorkloadIdentity {
		t.Fatalf("%v %v", wi, err)
	}
	c, err := cs.For(wi)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Get(context.Background(), rgID, rgAPI)
	if err != nil || !strings.Contains(string(out), "tok-wi-client") {
		t.Fatalf("%s %v", out, err)
	}
	reqs := f.tokenRequests()
	last := reqs[len(reqs)-1]
	if last.Get("client_assertion") != assertion || last.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		t.Errorf("token request %v", last)
	}

	// Managed identity through IDENTITY_ENDPOINT/IDENTITY_HEADER (never IMDS).
	t.Setenv("IDENTITY_ENDPOINT", f.url("/msi/token"))
	t.Setenv("IDENTITY_HEADER", "identity-header-value")
	t.Setenv(KeySubscriptionID, testSub)
	t.Setenv(KeyClientID, "mi-client")
	t.Setenv(KeyTenantID, "")
	mi, err := CredentialFromEnv()
	if err != nil || mi.Kind() != KindManagedIdentity {
		t.Fatalf("%v %v", mi, err)
	}
	c, err = cs.For(mi)
	if err != nil {
		t.Fatal(err)
	}
	out, err = c.Get(context.Background(), rgID, rgAPI)
	if err != nil || !strings.Contains(string(out), "tok-mi-mi-client") {
		t.Fatalf("%s %v", out, err)
	}
	reqs = f.tokenRequests()
	if q := reqs[len(reqs)-1]; q.Get("resource") != PublicARMAudience && q.Get("resource") != PublicARMAudience+"/" {
		t.Errorf("MI token request %v", q)
	}
}

func TestCAFromCloudConfig(t *testing.T) {
	// No HTTPClient in the options: the pipeline must trust the cloud's CA file.
	f := newFakeAzure(t)
	f.handle("GET", rgID, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]any{"id": rgID}) })
	o := testOptions()
	o.HTTPClient = nil
	cs := NewClients(f.cloud(), o)
	c, err := cs.For(secretCred(t, "env"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(context.Background(), rgID, rgAPI); err != nil {
		t.Fatal(err)
	}
	// Without the CA file, TLS verification fails.
	cl := f.cloud()
	cl.CAFile = ""
	c2, err := NewClients(cl, o).For(secretCred(t, "env"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Get(context.Background(), rgID, rgAPI); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("want a certificate error, got %v", err)
	}
}

func TestRequestURLEscapes(t *testing.T) {
	f := newFakeAzure(t)
	c := newTestClient(t, f)
	u, err := c.requestURL(rgID+"/providers/Microsoft.Cdn/profiles/a b", "2024-02-01")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(u, "/profiles/a%20b?api-version=2024-02-01") {
		t.Errorf("url %s", u)
	}
	if _, err := c.requestURL("subscriptions/x", "v"); err == nil {
		t.Error("relative path accepted")
	}
	if _, err := c.requestURL("/subscriptions/x", ""); err == nil {
		t.Error("missing api-version accepted")
	}
}

func TestWaitHonoursContext(t *testing.T) {
	f := newFakeAzure(t)
	f.handle("PATCH", saID, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Azure-AsyncOperation", f.url("/ops/forever"))
		writeJSON(w, 202, nil)
	})
	f.handle("GET", "/ops/forever", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"status": "InProgress"})
	})
	c := newTestClient(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Patch(ctx, saID, saAPI, []byte(`{"tags":{"a":"b"}}`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
	var patches int
	for _, r := range f.armRequests() {
		if r.Method == "PATCH" {
			patches++
		}
	}
	if patches != 1 {
		t.Errorf("PATCH sent %d times", patches)
	}
}
