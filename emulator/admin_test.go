package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

func adminDo(t *testing.T, e *emulator.Emulator, method, path string, body any, token string) (int, []byte) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, e.ARMEndpoint()+path, rd)
	if token != "" {
		req.Header.Set(emulator.AdminTokenHeader, token)
	}
	resp, err := e.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes()
}

func TestAdminFaultsStatsAndPrincipals(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithSeed(7))
	if st, _ := adminDo(t, e, "GET", "/_admin/stats", nil, ""); st != http.StatusUnauthorized {
		t.Fatalf("admin without token: %d", st)
	}
	tok := e.AdminToken()
	st, body := adminDo(t, e, "POST", "/_admin/principals", map[string]any{"displayName": "from-admin", "roles": []any{map[string]any{"role": "Owner"}}}, tok)
	var sp emulator.ServicePrincipal
	if st != http.StatusCreated || json.Unmarshal(body, &sp) != nil || sp.Secret == "" {
		t.Fatalf("admin principal: %d %s", st, body)
	}
	c := newClient(t, e, secretCred(t, e, sp), -1)
	sub := "/subscriptions/" + e.SubscriptionID()
	if r := c.do(http.MethodGet, sub, rgAPI, nil); r.status != 200 {
		t.Fatalf("admin-created principal: %d %s", r.status, r.raw)
	}
	for _, tc := range []struct {
		faults map[string]any
		status int
		code   string
	}{
		{map[string]any{"rate500": 1}, 500, "InternalServerError"},
		{map[string]any{"rate503": 1}, 503, "ServiceUnavailable"},
		{map[string]any{"rate429": 1}, 429, "SubscriptionRequestsThrottled"},
	} {
		if st, b := adminDo(t, e, "PUT", "/_admin/faults", tc.faults, tok); st != 200 {
			t.Fatalf("set faults: %d %s", st, b)
		}
		if r := c.do(http.MethodGet, sub, rgAPI, nil); r.status != tc.status || r.code() != tc.code {
			t.Errorf("fault %v: %d %s", tc.faults, r.status, r.raw)
		}
	}
	adminDo(t, e, "PUT", "/_admin/faults", map[string]any{"resetRate": 1}, tok)
	req, _ := http.NewRequest(http.MethodGet, e.ARMEndpoint()+sub+"?api-version="+rgAPI, nil)
	if resp, err := e.HTTPClient().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("connection reset fault: got %d", resp.StatusCode)
	}
	adminDo(t, e, "PUT", "/_admin/faults", map[string]any{"latency": "150ms"}, tok)
	start := time.Now()
	c.do(http.MethodGet, sub, rgAPI, nil)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("latency fault: request took %v", d)
	}
	adminDo(t, e, "PUT", "/_admin/faults", map[string]any{}, tok)
	st, body = adminDo(t, e, "GET", "/_admin/stats", nil, tok)
	var stats emulator.Stats
	if st != 200 || json.Unmarshal(body, &stats) != nil || stats.FaultsInjected != 4 || stats.ByStatus[0] != 1 || stats.ByStatus[500] != 1 {
		t.Fatalf("stats: %d %s", st, body)
	}
	st, body = adminDo(t, e, "GET", "/_admin/requests?limit=2", nil, tok)
	var reqs struct{ Value []emulator.LogEntry }
	if st != 200 || json.Unmarshal(body, &reqs) != nil || len(reqs.Value) != 2 {
		t.Fatalf("requests: %d %s", st, body)
	}
	if st, _ := adminDo(t, e, "POST", "/_admin/reset", nil, tok); st != http.StatusNoContent {
		t.Fatalf("reset: %d", st)
	}
	if s := e.Stats(); s.Requests > 1 {
		t.Errorf("after reset: %d requests", s.Requests)
	}
	st, body = adminDo(t, e, "POST", "/_admin/serviceaccounttoken", map[string]any{"subject": "system:serviceaccount:a:b"}, tok)
	if st != 200 || !strings.Contains(string(body), e.OIDCIssuer()) {
		t.Fatalf("service account token: %d %s", st, body)
	}
}

func TestGraphQueries(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	rgA, rgB := rgPath(e, "graph-a"), rgPath(e, "graph-b")
	c.do(http.MethodPut, rgA, rgAPI, map[string]any{"location": "westus2"})
	c.do(http.MethodPut, rgB, rgAPI, map[string]any{"location": "westus2"})
	const n = 1100
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if r := c.do(http.MethodPut, fmt.Sprintf("%s/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id%04d", rgA, i), miAPI, map[string]any{"location": "westus2"}); r.status != 201 {
				t.Errorf("seed %d: %d", i, r.status)
			}
		}(i)
	}
	wg.Wait()
	sa := rgB + "/providers/Microsoft.Storage/storageAccounts/graphsa"
	if _, err := c.putAndWait(sa, storageAPI, map[string]any{"location": "westus2", "tags": map[string]any{"team": "b"}}); err != nil {
		t.Fatal(err)
	}
	query := func(q string, opts map[string]any) result {
		body := map[string]any{"subscriptions": []string{e.SubscriptionID()}, "query": q}
		if opts != nil {
			body["options"] = opts
		}
		return c.do(http.MethodPost, "/providers/Microsoft.ResourceGraph/resources", "2021-03-01", body)
	}
	r := query("Resources | where resourceGroup =~ 'GRAPH-A' and type =~ 'Microsoft.ManagedIdentity/userAssignedIdentities' | project id, name", nil)
	if r.status != 200 || r.body["totalRecords"].(float64) != n || r.body["count"].(float64) != 1000 || r.str("$skipToken") == "" {
		t.Fatalf("page 1: %d total=%v count=%v token=%q", r.status, r.body["totalRecords"], r.body["count"], r.str("$skipToken"))
	}
	r2 := query("Resources | where resourceGroup =~ 'GRAPH-A' and type =~ 'Microsoft.ManagedIdentity/userAssignedIdentities' | project id, name", map[string]any{"$skipToken": r.str("$skipToken")})
	if r2.body["count"].(float64) != n-1000 || r2.str("$skipToken") != "" {
		t.Fatalf("page 2: %s", r2.raw[:200])
	}
	first := r.body["data"].([]any)[0].(map[string]any)
	if len(first) != 2 || first["name"] == nil {
		t.Errorf("project: %v", first)
	}
	r = query(fmt.Sprintf("Resources | where id in~ ('%s', '%s') | project id, type, tags, state = properties.provisioningState", strings.ToUpper(sa), rgA+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id0007"), nil)
	data, _ := r.body["data"].([]any)
	if len(data) != 2 {
		t.Fatalf("id in~: %s", r.raw)
	}
	for _, d := range data {
		m := d.(map[string]any)
		if m["type"] == "microsoft.storage/storageaccounts" && (m["state"] != "Succeeded" || m["tags"].(map[string]any)["team"] != "b") {
			t.Errorf("storage row: %v", m)
		}
	}
	r = query("ResourceContainers | where type =~ 'microsoft.resources/resourcegroups' | order by name asc | limit 1", nil)
	if data, _ := r.body["data"].([]any); len(data) != 1 || data[0].(map[string]any)["name"] != "graph-a" {
		t.Errorf("resource containers: %s", r.raw)
	}
	if r := query("Resources | summarize count()", nil); r.status != 400 {
		t.Errorf("unsupported query: %d", r.status)
	}
	// Rows are limited to what the caller may read.
	reader, _ := e.AddPrincipal(emulator.PrincipalSpec{Roles: []emulator.RoleGrant{{Role: "Reader", Scope: rgB}}})
	rc := newClient(t, e, secretCred(t, e, reader), -1)
	r = rc.do(http.MethodPost, "/providers/Microsoft.ResourceGraph/resources", "2021-03-01", map[string]any{"query": "Resources"})
	if r.body["totalRecords"].(float64) != 1 {
		t.Errorf("RBAC-filtered graph: %v", r.body["totalRecords"])
	}
}

func TestPersistenceAcrossRestarts(t *testing.T) {
	data := filepath.Join(t.TempDir(), "state.json")
	e1, err := emulator.New(emulator.WithDataFile(data), emulator.WithoutThrottling())
	if err != nil {
		t.Fatal(err)
	}
	c, sp := ownerClient(t, e1)
	rg := rgPath(e1, "persist")
	c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2"})
	r := c.do(http.MethodPut, rg+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/keep", miAPI, map[string]any{"location": "westus2"})
	clientID := r.str("properties", "clientId")
	ca := e1.CACertPEM()
	if err := e1.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := newEmulator(t, emulator.WithDataFile(data), emulator.WithoutThrottling())
	if !bytes.Equal(ca, e2.CACertPEM()) {
		t.Error("CA changed across restart")
	}
	c2 := newClient(t, e2, secretCred(t, e2, sp), -1) // the old secret still works
	r = c2.do(http.MethodGet, rg+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/keep", miAPI, nil)
	if r.status != 200 || r.str("properties", "clientId") != clientID {
		t.Fatalf("after restart: %d %s", r.status, r.raw)
	}
}

func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	ready := make(chan *emulator.Emulator, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- emulator.RunCommand(ctx, emulator.CommandOptions{Addr: "127.0.0.1:0", Dir: dir, DataFile: filepath.Join(dir, "data.json"),
			OnReady: func(e *emulator.Emulator) { ready <- e }}, &out)
	}()
	var e *emulator.Emulator
	select {
	case e = <-ready:
	case err := <-errc:
		t.Fatalf("RunCommand: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("RunCommand not ready")
	}
	env := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "export "), "="); ok && strings.HasPrefix(l, "export ") {
			env[k] = v
		}
	}
	for _, k := range []string{"AZURE_TENANT_ID", "AZURE_SUBSCRIPTION_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "GITASO_CLOUD_CONFIG", "AZURE_AUTHORITY_HOST", "GITASO_ARM_ENDPOINT", "GITASO_CA_FILE"} {
		if env[k] == "" {
			t.Errorf("missing export %s in:\n%s", k, out.String())
		}
	}
	var cc emulator.CloudConfig
	if b, err := readFile(env["GITASO_CLOUD_CONFIG"]); err != nil || json.Unmarshal(b, &cc) != nil || cc.ARMEndpoint != e.ARMEndpoint() || cc.CAFile != env["GITASO_CA_FILE"] || cc.Audience != emulator.ARMAudience {
		t.Fatalf("cloud.json: %v %+v", err, cc)
	}
	if b, err := readFile(env["GITASO_CA_FILE"]); err != nil || !bytes.Equal(b, e.CACertPEM()) {
		t.Fatalf("ca.pem: %v", err)
	}
	sp := emulator.ServicePrincipal{ClientID: env["AZURE_CLIENT_ID"], Secret: env["AZURE_CLIENT_SECRET"]}
	c := newClient(t, e, secretCred(t, e, sp), -1)
	if r := c.do(http.MethodPut, rgPath(e, "from-command"), rgAPI, map[string]any{"location": "westus2"}); r.status != 201 {
		t.Fatalf("bootstrap principal cannot write: %d %s", r.status, r.raw)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("RunCommand returned %v", err)
	}
}

// TestRunCommandFaults: gitaso emulator --fault-503 1 --fault-methods PUT answers every PUT 503 from the start and
// leaves reads alone; a share outside [0, 1] is refused before anything listens.
func TestRunCommandFaults(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	ready := make(chan *emulator.Emulator, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- emulator.RunCommand(ctx, emulator.CommandOptions{Addr: "127.0.0.1:0", Dir: dir,
			Faults:  emulator.Faults{Rate503: 1, Methods: []string{"PUT"}},
			OnReady: func(e *emulator.Emulator) { ready <- e }}, &out)
	}()
	var e *emulator.Emulator
	select {
	case e = <-ready:
	case err := <-errc:
		t.Fatalf("RunCommand: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("RunCommand not ready")
	}
	sp, ok := e.ServicePrincipalByName(emulator.BootstrapPrincipalName)
	if !ok {
		t.Fatal("no bootstrap principal")
	}
	c := newClient(t, e, secretCred(t, e, sp), -1)
	if r := c.do(http.MethodPut, rgPath(e, "faulted"), rgAPI, map[string]any{"location": "westus2"}); r.status != http.StatusServiceUnavailable {
		t.Fatalf("PUT with --fault-503 1: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, rgPath(e, "faulted"), rgAPI, nil); r.status != http.StatusNotFound {
		t.Fatalf("GET is not a faulted method: %d %s", r.status, r.raw)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("RunCommand returned %v", err)
	}
	err := emulator.RunCommand(context.Background(), emulator.CommandOptions{Addr: "127.0.0.1:0", Dir: t.TempDir(),
		Faults: emulator.Faults{Rate429: 1.5}}, &out)
	if err == nil || !strings.Contains(err.Error(), "fault 429: share 1.5 is not between 0 and 1") {
		t.Fatalf("a share of 1.5: %v", err)
	}
}
