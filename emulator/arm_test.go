package emulator_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/gitaso/gitaso/emulator"
)

func TestCRUDWithClientSecretAndPollers(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-crud")

	// Resource group: synchronous 201 without Location (as ARM answers; ASO's poller refuses one), then 200 on replace.
	r := c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2", "tags": map[string]any{"a": "1"}})
	if r.status != http.StatusCreated || r.str("properties", "provisioningState") != "Succeeded" {
		t.Fatalf("create RG: %d %s", r.status, r.raw)
	}
	if loc := r.header.Get("Location"); loc != "" || r.header.Get("Azure-AsyncOperation") != "" {
		t.Errorf("sync 201 of a resource group: Location %q, Azure-AsyncOperation %q, want neither", loc, r.header.Get("Azure-AsyncOperation"))
	}
	if r := c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2"}); r.status != http.StatusOK {
		t.Fatalf("replace RG: %d %s", r.status, r.raw)
	}

	// Storage account: 202 + Location (as the storage RP answers), polled with runtime.NewPoller.
	sa := rg + "/providers/Microsoft.Storage/storageAccounts/sacrud"
	got, err := c.putAndWait(sa, storageAPI, map[string]any{"location": "westus2", "kind": "StorageV2", "sku": map[string]any{"name": "Standard_LRS"}})
	if err != nil {
		t.Fatalf("create storage account: %v", err)
	}
	props, _ := got["properties"].(map[string]any)
	if props["provisioningState"] != "Succeeded" {
		t.Errorf("final provisioningState = %v", props["provisioningState"])
	}
	if ep, _ := props["primaryEndpoints"].(map[string]any); ep["blob"] != "https://sacrud.blob.core.windows.net/" {
		t.Errorf("primaryEndpoints = %v", props["primaryEndpoints"])
	}
	if got["id"] != sa || got["name"] != "sacrud" || got["type"] != "Microsoft.Storage/storageAccounts" {
		t.Errorf("envelope = %v %v %v", got["id"], got["name"], got["type"])
	}

	// Service Bus namespace: 201 + Azure-AsyncOperation, provisioning state Accepted at first.
	ns := rg + "/providers/Microsoft.ServiceBus/namespaces/sbcrud"
	resp := c.doResp(http.MethodPut, ns, "2024-01-01", map[string]any{"location": "westus2", "sku": map[string]any{"name": "Standard"}})
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Azure-AsyncOperation") == "" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("namespace PUT: %d headers %v", resp.StatusCode, resp.Header)
	}
	final, err := c.wait(resp)
	if err != nil {
		t.Fatalf("namespace poll: %v", err)
	}
	if final["properties"].(map[string]any)["serviceBusEndpoint"] != "https://sbcrud.servicebus.windows.net:443/" {
		t.Errorf("namespace defaults missing: %v", final["properties"])
	}

	// Case-insensitive IDs: GET with other casing returns the first create's casing.
	r = c.do(http.MethodGet, strings.ToUpper(sa[:len(sa)-6])+"sacrud", storageAPI, nil)
	if r.status != http.StatusOK || r.str("id") != sa {
		t.Fatalf("case-insensitive GET: %d %s", r.status, r.raw)
	}

	// PATCH merges.
	resp = c.doResp(http.MethodPatch, sa, storageAPI, map[string]any{"tags": map[string]any{"env": "test"}})
	patched, err := c.wait(resp)
	if err != nil {
		t.Fatalf("patch: %v", err)
	}
	if patched["kind"] != "StorageV2" || patched["tags"].(map[string]any)["env"] != "test" {
		t.Errorf("patched = %v", patched)
	}

	// List.
	r = c.do(http.MethodGet, rg+"/providers/Microsoft.Storage/storageAccounts", storageAPI, nil)
	if vals, _ := r.body["value"].([]any); r.status != 200 || len(vals) != 1 {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}
	r = c.do(http.MethodGet, "/subscriptions/"+e.SubscriptionID()+"/providers/Microsoft.Storage/storageAccounts", storageAPI, nil)
	if vals, _ := r.body["value"].([]any); r.status != 200 || len(vals) != 1 {
		t.Fatalf("subscription list: %d %s", r.status, r.raw)
	}
	r = c.do(http.MethodGet, rg+"/resources", rgAPI, nil)
	if vals, _ := r.body["value"].([]any); r.status != 200 || len(vals) != 2 {
		t.Fatalf("RG resources: %d %s", r.status, r.raw)
	}

	// listKeys.
	r = c.do(http.MethodPost, sa+"/listKeys", storageAPI, nil)
	if keys, _ := r.body["keys"].([]any); r.status != 200 || len(keys) != 2 {
		t.Fatalf("listKeys: %d %s", r.status, r.raw)
	}

	// DELETE: 200 at once (the storage RP deletes synchronously; gen/supplement.json), then gone; deleting again is 204.
	status, err := c.deleteAndWait(sa, storageAPI)
	if err != nil || status != http.StatusOK {
		t.Fatalf("delete: %d %v", status, err)
	}
	if r := c.do(http.MethodGet, sa, storageAPI, nil); r.status != 404 || r.code() != "ResourceNotFound" {
		t.Fatalf("GET after delete: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodDelete, sa, storageAPI, nil); r.status != http.StatusNoContent {
		t.Fatalf("second delete: %d %s", r.status, r.raw)
	}
	st := e.Stats()
	if st.ByOperation["PUT microsoft.storage/storageaccounts 202"] != 1 || st.ByMethod["DELETE"] < 2 {
		t.Errorf("stats = %+v", st.ByOperation)
	}
	if len(e.RequestLog()) == 0 {
		t.Error("empty request log")
	}
}

func TestLROStatesAndProvisioningFailure(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithLatency("Microsoft.ServiceBus/namespaces", 600*time.Millisecond))
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-lro")
	if r := c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2"}); r.status != 201 {
		t.Fatalf("RG: %d", r.status)
	}
	ns := rg + "/providers/Microsoft.ServiceBus/namespaces/slow-ns"
	resp := c.doResp(http.MethodPut, ns, "2024-01-01", map[string]any{"location": "westus2"})
	seen := map[string]bool{}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r := c.do(http.MethodGet, ns, "2024-01-01", nil)
		state := r.str("properties", "provisioningState")
		seen[state] = true
		if state == "Succeeded" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range []string{"Accepted", "Creating", "Succeeded"} {
		if !seen[s] {
			t.Errorf("provisioningState %s never seen (saw %v)", s, seen)
		}
	}
	if _, err := c.wait(resp); err != nil {
		t.Fatalf("poll: %v", err)
	}

	e.SetFaults(emulator.Faults{ProvisioningFailures: []emulator.ProvisioningFailure{{Match: "/namespaces/broken", Code: "NamespaceQuotaExceeded", Message: "quota"}}})
	_, err := c.putAndWait(rg+"/providers/Microsoft.ServiceBus/namespaces/broken", "2024-01-01", map[string]any{"location": "westus2"})
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != "NamespaceQuotaExceeded" {
		t.Fatalf("failed provisioning: %v", err)
	}
	if r := c.do(http.MethodGet, rg+"/providers/Microsoft.ServiceBus/namespaces/broken", "2024-01-01", nil); r.str("properties", "provisioningState") != "Failed" {
		t.Errorf("state after failure: %s", r.raw)
	}
}

func TestCascadeDelete(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-cascade")
	c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2"})
	sa := rg + "/providers/Microsoft.Storage/storageAccounts/sacascade"
	if _, err := c.putAndWait(sa, storageAPI, map[string]any{"location": "westus2"}); err != nil {
		t.Fatal(err)
	}
	container := sa + "/blobServices/default/containers/c1"
	if r := c.do(http.MethodPut, sa+"/blobServices/default", storageAPI, map[string]any{"properties": map[string]any{}}); r.status != 200 {
		t.Fatalf("blob service: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodPut, container, storageAPI, map[string]any{"properties": map[string]any{}}); r.status != 201 {
		t.Fatalf("container: %d %s", r.status, r.raw)
	}
	sp, _ := e.AddServicePrincipal("reader")
	ra := sa + "/providers/Microsoft.Authorization/roleAssignments/11111111-2222-4333-8444-555555555555"
	r := c.do(http.MethodPut, ra, authzAPI, map[string]any{"properties": map[string]any{
		"principalId": sp.ObjectID, "roleDefinitionId": "/subscriptions/" + e.SubscriptionID() + "/providers/Microsoft.Authorization/roleDefinitions/ba92f5b4-2d11-453d-a403-e96b0029c9fe"}})
	if r.status != 201 || r.str("properties", "scope") != sa {
		t.Fatalf("extension role assignment: %d %s", r.status, r.raw)
	}
	before := e.Stats().Resources
	if status, err := c.deleteAndWait(rg, rgAPI); err != nil || status != 202 {
		t.Fatalf("delete RG: %d %v", status, err)
	}
	for _, p := range []string{container, sa, ra} {
		r := c.do(http.MethodGet, p, storageAPI, nil)
		if r.status != 404 || r.code() != "ResourceGroupNotFound" {
			t.Errorf("GET %s after cascade: %d %s", p, r.status, r.raw)
		}
	}
	// The group, the account with its four services, the container and the role assignment.
	if after := e.Stats().Resources; before-after != 8 {
		t.Errorf("resources before %d after %d, want 8 removed", before, after)
	}
	// Role assignment deletes of absent assignments are 204 (as real ARM) even when the scope is gone;
	// other resources under a missing RG are 404 ResourceGroupNotFound.
	if r := c.do(http.MethodDelete, ra, authzAPI, nil); r.status != 204 {
		t.Errorf("delete absent RA: %d", r.status)
	}
	if r := c.do(http.MethodDelete, sa, storageAPI, nil); r.status != 404 || r.code() != "ResourceGroupNotFound" {
		t.Errorf("delete under missing RG: %d %s", r.status, r.raw)
	}
}

func TestThrottlingRecovery(t *testing.T) {
	e := newEmulator(t, emulator.WithThrottleScale(0.1)) // reads: 25 tokens, 2.5/s
	sp, err := e.AddPrincipal(emulator.PrincipalSpec{Roles: []emulator.RoleGrant{{Role: "Reader"}}})
	if err != nil {
		t.Fatal(err)
	}
	noRetry := newClient(t, e, secretCred(t, e, sp), -1)
	sub := "/subscriptions/" + e.SubscriptionID()
	var last result
	for i := 0; i < 30; i++ {
		last = noRetry.do(http.MethodGet, sub, rgAPI, nil)
		if last.status == http.StatusTooManyRequests {
			break
		}
		if rem := last.header.Get("x-ms-ratelimit-remaining-subscription-reads"); rem == "" {
			t.Fatalf("missing remaining-reads header")
		}
	}
	if last.status != http.StatusTooManyRequests || last.code() != "SubscriptionRequestsThrottled" || last.header.Get("Retry-After") == "" {
		t.Fatalf("expected 429, got %d %s", last.status, last.raw)
	}
	// azcore's retry policy honours Retry-After/retry-after-ms and recovers.
	retrying := newClient(t, e, secretCred(t, e, sp), 5)
	for i := 0; i < 5; i++ {
		if r := retrying.do(http.MethodGet, sub, rgAPI, nil); r.status != 200 {
			t.Fatalf("retrying GET %d: %d %s", i, r.status, r.raw)
		}
	}
	if e.Stats().Throttled < 2 {
		t.Errorf("throttled count = %d", e.Stats().Throttled)
	}
}

func TestErrorCodes(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, owner := ownerClient(t, e)
	rg := rgPath(e, "rg-errors")
	c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2"})
	sub := "/subscriptions/" + e.SubscriptionID()
	reader, _ := e.AddPrincipal(emulator.PrincipalSpec{Roles: []emulator.RoleGrant{{Role: "Reader"}}})
	contributor, _ := e.AddPrincipal(emulator.PrincipalSpec{Roles: []emulator.RoleGrant{{Role: "Contributor"}}})
	readerC := newClient(t, e, secretCred(t, e, reader), -1)
	contribC := newClient(t, e, secretCred(t, e, contributor), -1)
	raBody := func(principal, role string) map[string]any {
		return map[string]any{"properties": map[string]any{"principalId": principal,
			"roleDefinitionId": sub + "/providers/Microsoft.Authorization/roleDefinitions/" + role}}
	}
	const readerRole = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
	const contributorRole = "b24988ac-6180-42a0-ab88-20f7382dd24c"
	ra1 := rg + "/providers/Microsoft.Authorization/roleAssignments/aaaaaaaa-0000-4000-8000-000000000001"
	if r := c.do(http.MethodPut, ra1, authzAPI, raBody(reader.ObjectID, readerRole)); r.status != 201 {
		t.Fatalf("RA: %d %s", r.status, r.raw)
	}

	expired, _ := e.IssueAccessToken(owner.ObjectID, emulator.ARMAudience, time.Now().Add(-time.Minute))
	wrongAud, _ := e.IssueAccessToken(owner.ObjectID, "https://storage.azure.com", time.Now().Add(time.Hour))
	good, _ := e.IssueAccessToken(owner.ObjectID, emulator.ARMAudience+"/", time.Now().Add(time.Hour))
	tampered := good[:len(good)-4] + "AAAA"

	raw := func(auth, path string) result {
		req, _ := http.NewRequest(http.MethodGet, e.ARMEndpoint()+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := e.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r result
		r.status, r.header = resp.StatusCode, resp.Header
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		r.raw = buf[:n]
		_ = jsonUnmarshal(r.raw, &r.body)
		return r
	}
	q := "?api-version=" + rgAPI
	authCases := []struct {
		name, auth, code string
		status           int
	}{
		{"missing header", "", "AuthenticationFailed", 401},
		{"bad format", "Basic abc", "AuthenticationFailedInvalidHeader", 401},
		{"bad signature", "Bearer " + tampered, "InvalidAuthenticationToken", 401},
		{"garbage", "Bearer not.a.jwt", "InvalidAuthenticationToken", 401},
		{"expired", "Bearer " + expired, "ExpiredAuthenticationToken", 401},
		{"wrong audience", "Bearer " + wrongAud, "InvalidAuthenticationTokenAudience", 401},
		{"audience with slash ok", "Bearer " + good, "", 200},
	}
	for _, tc := range authCases {
		t.Run(tc.name, func(t *testing.T) {
			r := raw(tc.auth, rg+q)
			if r.status != tc.status || r.code() != tc.code {
				t.Fatalf("got %d %q, want %d %q: %s", r.status, r.code(), tc.status, tc.code, r.raw)
			}
			if tc.status == 401 && !strings.Contains(r.header.Get("WWW-Authenticate"), "invalid_token") {
				t.Errorf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
			}
		})
	}

	cases := []struct {
		name     string
		c        *client
		method   string
		path     string
		api      string
		body     any
		status   int
		code     string
		contains string
	}{
		{"missing api-version", c, "GET", rg, "", nil, 400, "MissingApiVersionParameter", ""},
		{"invalid api-version", c, "GET", rg, "2020-13-45", nil, 400, "InvalidApiVersionParameter", "2020-13-45"},
		{"resource group not found", c, "PUT", rgPath(e, "nope") + "/providers/Microsoft.Storage/storageAccounts/x", storageAPI, map[string]any{"location": "westus"}, 404, "ResourceGroupNotFound", "nope"},
		{"get RG not found", c, "GET", rgPath(e, "nope"), rgAPI, nil, 404, "ResourceGroupNotFound", ""},
		{"resource not found", c, "GET", rg + "/providers/Microsoft.Storage/storageAccounts/missing", storageAPI, nil, 404, "ResourceNotFound", "Microsoft.Storage/storageAccounts/missing"},
		{"parent not found", c, "PUT", rg + "/providers/Microsoft.Storage/storageAccounts/nosa/blobServices/default/containers/c", storageAPI, map[string]any{}, 404, "ParentResourceNotFound", "nosa/default"},
		{"location required", c, "PUT", rg + "/providers/Microsoft.Storage/storageAccounts/noloc", storageAPI, map[string]any{"kind": "StorageV2"}, 400, "LocationRequired", ""},
		{"rg location required", c, "PUT", rgPath(e, "noloc"), rgAPI, map[string]any{}, 400, "LocationRequired", ""},
		{"invalid content", c, "PUT", rgPath(e, "badjson"), rgAPI, "{not json", 400, "InvalidRequestContent", ""},
		{"subscription not found", c, "GET", "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/x", rgAPI, nil, 404, "SubscriptionNotFound", ""},
		{"reader cannot write", readerC, "PUT", rgPath(e, "denied"), rgAPI, map[string]any{"location": "westus"}, 403, "AuthorizationFailed", "Microsoft.Resources/subscriptions/resourceGroups/write"},
		{"reader can read", readerC, "GET", rg, rgAPI, nil, 200, "", ""},
		{"contributor cannot assign roles", contribC, "PUT", rg + "/providers/Microsoft.Authorization/roleAssignments/aaaaaaaa-0000-4000-8000-000000000009", authzAPI, raBody(reader.ObjectID, contributorRole), 403, "AuthorizationFailed", "Microsoft.Authorization/roleAssignments/write"},
		{"contributor can write resources", contribC, "PUT", rgPath(e, "contrib"), rgAPI, map[string]any{"location": "westus"}, 201, "", ""},
		{"role assignment exists", c, "PUT", rg + "/providers/Microsoft.Authorization/roleAssignments/aaaaaaaa-0000-4000-8000-000000000002", authzAPI, raBody(reader.ObjectID, readerRole), 409, "RoleAssignmentExists", ""},
		{"role assignment update", c, "PUT", ra1, authzAPI, raBody(reader.ObjectID, contributorRole), 409, "RoleAssignmentUpdateNotPermitted", ""},
		{"role assignment idempotent", c, "PUT", ra1, authzAPI, raBody(reader.ObjectID, readerRole), 201, "", ""},
		{"role assignment name", c, "PUT", rg + "/providers/Microsoft.Authorization/roleAssignments/not-a-guid", authzAPI, raBody(reader.ObjectID, readerRole), 400, "InvalidRoleAssignmentId", ""},
		{"principal not found", c, "PUT", rg + "/providers/Microsoft.Authorization/roleAssignments/aaaaaaaa-0000-4000-8000-000000000003", authzAPI, raBody("99999999-0000-4000-8000-000000000000", readerRole), 400, "PrincipalNotFound", ""},
		{"role definition missing", c, "PUT", rg + "/providers/Microsoft.Authorization/roleAssignments/aaaaaaaa-0000-4000-8000-000000000004", authzAPI, raBody(reader.ObjectID, "99999999-0000-4000-8000-000000000000"), 400, "RoleDefinitionDoesNotExist", ""},
		{"patch missing", c, "PATCH", rg + "/providers/Microsoft.Storage/storageAccounts/missing", storageAPI, map[string]any{"tags": map[string]any{}}, 404, "ResourceNotFound", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.c.do(tc.method, tc.path, tc.api, tc.body)
			if r.status != tc.status || r.code() != tc.code {
				t.Fatalf("got %d %q, want %d %q: %s", r.status, r.code(), tc.status, tc.code, r.raw)
			}
			if tc.contains != "" && !strings.Contains(string(r.raw), tc.contains) {
				t.Errorf("message %s does not mention %q", r.raw, tc.contains)
			}
		})
	}
}

func TestRoleDefinitions(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	r := c.do(http.MethodGet, "/providers/Microsoft.Authorization/roleDefinitions", authzAPI, nil)
	vals, _ := r.body["value"].([]any)
	if r.status != 200 || len(vals) < 10 {
		t.Fatalf("tenant list: %d %s", r.status, r.raw)
	}
	byName := map[string]map[string]any{}
	for _, v := range vals {
		m := v.(map[string]any)
		byName[m["properties"].(map[string]any)["roleName"].(string)] = m
	}
	for name, guid := range map[string]string{
		"Owner": "8e3af657-a8ff-443c-a75c-2fe8c4bcb635", "Contributor": "b24988ac-6180-42a0-ab88-20f7382dd24c",
		"Reader": "acdd72a7-3385-48ef-bd42-f606fba81ae7", "User Access Administrator": "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
		"Azure Service Bus Data Owner": "090c5cfd-751d-490a-894a-3ce6f1109419", "Azure Service Bus Data Sender": "69a216fc-b8fb-44d8-bc22-1f3c2cd27a39",
		"Azure Service Bus Data Receiver": "4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0", "Storage Blob Data Contributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
		"Storage Blob Data Reader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1", "Storage Blob Data Owner": "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",
	} {
		m := byName[name]
		if m == nil || m["name"] != guid || m["properties"].(map[string]any)["type"] != "BuiltInRole" {
			t.Errorf("role %s: %v", name, m)
		}
	}
	sub := "/subscriptions/" + e.SubscriptionID()
	r = c.do(http.MethodGet, sub+"/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c", authzAPI, nil)
	if r.status != 200 || r.str("id") != sub+"/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c" {
		t.Fatalf("get Contributor: %d %s", r.status, r.raw)
	}
	perms := r.body["properties"].(map[string]any)["permissions"].([]any)[0].(map[string]any)
	if !strings.Contains(strings.ToLower(jsonString(perms["notActions"])), "microsoft.authorization/*/write") {
		t.Errorf("Contributor notActions = %v", perms["notActions"])
	}
	r = c.do(http.MethodGet, sub+"/providers/Microsoft.Authorization/roleDefinitions?$filter="+urlEscape("roleName eq 'Reader'"), authzAPI, nil)
	if vals, _ := r.body["value"].([]any); len(vals) != 1 {
		t.Errorf("filter by roleName: %s", r.raw)
	}

	// A custom role created through ARM grants exactly its actions.
	rg := rgPath(e, "rg-custom")
	c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2"})
	custom := rg + "/providers/Microsoft.Authorization/roleDefinitions/c0ffee00-0000-4000-8000-000000000001"
	r = c.do(http.MethodPut, custom, authzAPI, map[string]any{"properties": map[string]any{"roleName": "rg-reader", "type": "customRole",
		"assignableScopes": []any{rg}, "permissions": []any{map[string]any{"actions": []any{"Microsoft.Resources/subscriptions/resourceGroups/read"}}}}})
	if r.status != 201 || r.str("properties", "type") != "CustomRole" {
		t.Fatalf("custom role: %d %s", r.status, r.raw)
	}
	sp, _ := e.AddServicePrincipal("custom")
	if err := e.AssignRole(sp.ObjectID, "rg-reader", rg); err != nil {
		t.Fatal(err)
	}
	cc := newClient(t, e, secretCred(t, e, sp), -1)
	if r := cc.do(http.MethodGet, rg, rgAPI, nil); r.status != 200 {
		t.Errorf("custom role read: %d %s", r.status, r.raw)
	}
	if r := cc.do(http.MethodGet, rg+"/providers/Microsoft.Storage/storageAccounts/x", storageAPI, nil); r.status != 403 {
		t.Errorf("custom role other read: %d", r.status)
	}
}
