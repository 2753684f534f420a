package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/gitaso/gitaso/emulator"
)

// acCall sends one request to a store's data plane with a token of cred for scope ("" sends none) and returns the
// status, the headers and the body.
func acCall(t *testing.T, e *emulator.Emulator, cred azcore.TokenCredential, scope, method, rawURL string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, rawURL, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/vnd.microsoft.appconfig.kv+json")
	}
	if scope != "" {
		tok, err := cred.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{scope}})
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok.Token)
	}
	res, err := e.KeyVaultHTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

type acItem struct {
	Etag         string            `json:"etag"`
	Key          string            `json:"key"`
	Label        *string           `json:"label"`
	ContentType  *string           `json:"content_type"`
	Value        string            `json:"value"`
	Tags         map[string]string `json:"tags"`
	Locked       bool              `json:"locked"`
	LastModified string            `json:"last_modified"`
}

var linkNext = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// acList follows a list to its end through the Link headers and returns every item and the number of pages.
func acList(t *testing.T, e *emulator.Emulator, cred azcore.TokenCredential, endpoint, query string) ([]acItem, int) {
	t.Helper()
	next := endpoint + "/kv?" + query
	var all []acItem
	pages := 0
	for next != "" {
		status, h, b := acCall(t, e, cred, emulator.AppConfigAudience+"/.default", http.MethodGet, next, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", next, status, b)
		}
		if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/vnd.microsoft.appconfig.kvset+json") {
			t.Errorf("list content type %q", ct)
		}
		var page struct {
			Items []acItem `json:"items"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Items...)
		pages++
		next = ""
		if l := h.Get("Link"); l != "" {
			m := linkNext.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("Link header %q", l)
			}
			next = endpoint + m[1]
		}
	}
	return all, pages
}

func keysOf(items []acItem) string {
	var out []string
	for _, it := range items {
		l := `\0`
		if it.Label != nil {
			l = *it.Label
		}
		out = append(out, it.Key+"@"+l)
	}
	return strings.Join(out, " ")
}

// TestAppConfigDataPlane: a store created through ARM has its endpoint, serves key-values seeded through PUT /kv
// and the Go helper, filters them by key (exact, list, prefix) and label (exact, \0, wildcard, omitted: all),
// pages a long list through the Link header, and answers 401 without a token or with a token for ARM, 403 to a
// principal without an App Configuration data role (and to a Data Reader writing).
func TestAppConfigDataPlane(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-ac")
	putRG(t, c, rg)
	storeID := rg + "/providers/Microsoft.AppConfiguration/configurationStores/platform-cfg"
	store := mustPut(t, c, storeID, "2024-06-01", map[string]any{"location": "westeurope", "sku": map[string]any{"name": "standard"}})
	endpoint := e.AppConfigURL("platform-cfg")
	if got, _ := store["properties"].(map[string]any)["endpoint"].(string); got != endpoint {
		t.Fatalf("properties.endpoint %q, want %q", got, endpoint)
	}

	owner, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "ac-owner"},
		Roles: []emulator.RoleGrant{{Role: "App Configuration Data Owner", Scope: storeID}}})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "ac-reader"},
		Roles: []emulator.RoleGrant{{Role: "App Configuration Data Reader", Scope: rg}}})
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "ac-nobody"},
		Roles: []emulator.RoleGrant{{Role: "Contributor", Scope: storeID}}})
	if err != nil {
		t.Fatal(err)
	}
	oc, rc, nc := secretCred(t, e, owner), secretCred(t, e, reader), secretCred(t, e, nobody)
	scope := emulator.AppConfigAudience + "/.default"

	// Seeding through the data plane, as az appconfig kv set does.
	for _, kv := range []struct{ key, label, value string }{
		{"ENVIRONMENT", "", "snd"}, {"ENVIRONMENT", "prod", "prd"}, {"ACR_NAME", "", "sndacr"},
		{"ACR_NAME", "prod", "prdacr"}, {"team/a:NAME", "prod", "a"}, {"a*b", "", "star"},
	} {
		u := endpoint + "/kv/" + url.PathEscape(kv.key) + "?api-version=1.0"
		if kv.label != "" {
			u += "&label=" + url.QueryEscape(kv.label)
		}
		status, h, b := acCall(t, e, oc, scope, http.MethodPut, u, map[string]any{"value": kv.value, "tags": map[string]string{"by": "test"}})
		if status != http.StatusOK || h.Get("ETag") == "" {
			t.Fatalf("PUT %s: %d %s", u, status, b)
		}
	}
	// The Go helper, with a Key Vault reference.
	ref := `{"uri":"https://kv1.vault.azure.net/secrets/db-password"}`
	if err := e.PutAppConfigKeyValue("platform-cfg", emulator.AppConfigKeyValue{Key: "DB_PASSWORD", Label: "prod", Value: ref,
		ContentType: emulator.AppConfigKeyVaultRefContentType}); err != nil {
		t.Fatal(err)
	}
	if err := e.PutAppConfigKeyValue("no-such-store", emulator.AppConfigKeyValue{Key: "K", Value: "v"}); err == nil {
		t.Error("a key-value was put into a store that does not exist")
	}

	// One key-value, as the REST reference shapes it.
	status, h, b := acCall(t, e, rc, scope, http.MethodGet, endpoint+"/kv/DB_PASSWORD?label=prod&api-version=2023-11-01", nil)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "application/vnd.microsoft.appconfig.kv+json") {
		t.Fatalf("GET one: %d %s %s", status, h.Get("Content-Type"), b)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"etag", "key", "label", "content_type", "value", "tags", "locked", "last_modified"} {
		if _, ok := raw[f]; !ok {
			t.Errorf("item lacks %q: %s", f, b)
		}
	}
	if raw["value"] != ref || raw["content_type"] != emulator.AppConfigKeyVaultRefContentType || raw["label"] != "prod" {
		t.Errorf("item %s", b)
	}
	if status, _, b := acCall(t, e, rc, scope, http.MethodGet, endpoint+"/kv/ENVIRONMENT?api-version=1.0", nil); status != http.StatusOK || !bytes.Contains(b, []byte(`"label":null`)) || !bytes.Contains(b, []byte(`"value":"snd"`)) {
		t.Errorf("GET without label: %d %s, want the no-label key-value", status, b)
	}
	if status, _, _ := acCall(t, e, rc, scope, http.MethodGet, endpoint+"/kv/MISSING?api-version=1.0", nil); status != http.StatusNotFound {
		t.Errorf("GET a missing key: %d, want 404", status)
	}

	// Filters.
	for _, tc := range []struct{ query, want string }{
		{"key=ENVIRONMENT", `ENVIRONMENT@\0 ENVIRONMENT@prod`},
		{"key=*&label=prod", `ACR_NAME@prod DB_PASSWORD@prod ENVIRONMENT@prod team/a:NAME@prod`},
		{"label=%00", `ACR_NAME@\0 ENVIRONMENT@\0 a*b@\0`},
		{"label=" + url.QueryEscape(`\0`), `ACR_NAME@\0 ENVIRONMENT@\0 a*b@\0`},
		{"key=ACR_NAME,ENVIRONMENT&label=" + url.QueryEscape(`prod,\0`), `ACR_NAME@\0 ACR_NAME@prod ENVIRONMENT@\0 ENVIRONMENT@prod`},
		{"key=team/*", `team/a:NAME@prod`},
		{"label=pr*", `ACR_NAME@prod DB_PASSWORD@prod ENVIRONMENT@prod team/a:NAME@prod`},
		{"key=" + url.QueryEscape(`a\*b`), `a*b@\0`},
		{"key=A*&label=" + url.QueryEscape(`\0`), `ACR_NAME@\0`},
	} {
		items, _ := acList(t, e, rc, endpoint, "api-version=1.0&"+tc.query)
		if got := keysOf(items); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.query, got, tc.want)
		}
	}
	if status, _, b := acCall(t, e, rc, scope, http.MethodGet, endpoint+"/kv?api-version=1.0&key=a*,b", nil); status != http.StatusBadRequest || !bytes.Contains(b, []byte("invalid-argument")) {
		t.Errorf("a wildcard in a list: %d %s, want 400", status, b)
	}
	if status, _, _ := acCall(t, e, rc, scope, http.MethodGet, endpoint+"/kv?api-version=2019-01-01", nil); status != http.StatusBadRequest {
		t.Errorf("an unknown api-version: %d, want 400", status)
	}

	// Paging: 2.5 pages of one label.
	for i := range 2*emulator.AppConfigPageSize + 50 {
		if err := e.PutAppConfigKeyValue("platform-cfg", emulator.AppConfigKeyValue{Key: fmt.Sprintf("bulk/%04d", i), Label: "bulk", Value: "v"}); err != nil {
			t.Fatal(err)
		}
	}
	items, pages := acList(t, e, rc, endpoint, "api-version=1.0&label=bulk")
	if len(items) != 2*emulator.AppConfigPageSize+50 || pages != 3 {
		t.Fatalf("paged list: %d items in %d pages, want %d in 3", len(items), pages, 2*emulator.AppConfigPageSize+50)
	}
	for i, it := range items {
		if it.Key != fmt.Sprintf("bulk/%04d", i) {
			t.Fatalf("item %d is %s: pages overlap or skip", i, it.Key)
		}
	}
	_, h, b = acCall(t, e, rc, scope, http.MethodGet, endpoint+"/kv?api-version=2023-11-01&label=bulk", nil)
	if !bytes.Contains(b, []byte(`"@nextLink"`)) || h.Get("Link") == "" {
		t.Errorf("2023-11-01 first page: Link %q, body without @nextLink", h.Get("Link"))
	}

	// Authentication and authorisation.
	status, h, _ = acCall(t, e, nil, "", http.MethodGet, endpoint+"/kv?api-version=1.0", nil)
	if status != http.StatusUnauthorized || !strings.Contains(h.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no token: %d %q, want 401 with a Bearer challenge", status, h.Get("WWW-Authenticate"))
	}
	if status, _, b := acCall(t, e, rc, "https://management.azure.com/.default", http.MethodGet, endpoint+"/kv?api-version=1.0", nil); status != http.StatusUnauthorized || !bytes.Contains(b, []byte("audience")) {
		t.Errorf("an ARM token: %d %s, want 401 naming the audience", status, b)
	}
	status, _, b = acCall(t, e, nc, scope, http.MethodGet, endpoint+"/kv?api-version=1.0", nil)
	if status != http.StatusForbidden || !bytes.Contains(b, []byte("keyValues/read")) || !bytes.Contains(b, []byte("platform-cfg")) {
		t.Errorf("no data role: %d %s, want 403 naming the action and the store", status, b)
	}
	if status, _, b := acCall(t, e, rc, scope, http.MethodPut, endpoint+"/kv/X?api-version=1.0", map[string]any{"value": "x"}); status != http.StatusForbidden || !bytes.Contains(b, []byte("keyValues/write")) {
		t.Errorf("a Data Reader writing: %d %s, want 403", status, b)
	}
	if status, _, _ := acCall(t, e, rc, scope, http.MethodGet, e.AppConfigURL("other-store")+"/kv?api-version=1.0", nil); status != http.StatusNotFound {
		t.Errorf("a store that does not exist: %d, want 404", status)
	}
}

// TestKeyVaultSecrets: a Secrets Officer sets a secret, a Secrets User reads its newest and a named version, a
// principal without a role is refused with Key Vault's 403; the Go helper seeds a version.
func TestKeyVaultSecrets(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	vaultID := putVault(t, c, e, rgPath(e, "rg-kvs"), "kvsecrets", true, []any{})
	officer, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "s-officer"},
		Roles: []emulator.RoleGrant{{Role: "Key Vault Secrets Officer", Scope: vaultID}}})
	if err != nil {
		t.Fatal(err)
	}
	user, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "s-user"},
		Roles: []emulator.RoleGrant{{Role: "Key Vault Secrets User", Scope: vaultID}}})
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "s-nobody"},
		Roles: []emulator.RoleGrant{{Role: "Key Vault Crypto User", Scope: vaultID}}})
	if err != nil {
		t.Fatal(err)
	}
	scope := emulator.KeyVaultResource + "/.default"
	base := e.KeyVaultURL("kvsecrets")
	status, _, b := acCall(t, e, secretCred(t, e, officer), scope, http.MethodPut, base+"/secrets/db-password?api-version=7.4", map[string]any{"value": "first"})
	if status != http.StatusOK {
		t.Fatalf("set: %d %s", status, b)
	}
	var first struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &first)
	id, err := e.PutKeyVaultSecret("kvsecrets", "db-password", "second")
	if err != nil {
		t.Fatal(err)
	}
	uc := secretCred(t, e, user)
	for _, tc := range []struct{ url, want string }{{base + "/secrets/db-password", "second"}, {first.ID, "first"}, {id, "second"}} {
		status, _, b := acCall(t, e, uc, scope, http.MethodGet, tc.url+"?api-version=7.4", nil)
		var got struct {
			Value string `json:"value"`
		}
		_ = json.Unmarshal(b, &got)
		if status != http.StatusOK || got.Value != tc.want {
			t.Errorf("GET %s: %d %s, want %q", tc.url, status, b, tc.want)
		}
	}
	if status, _, b := acCall(t, e, secretCred(t, e, nobody), scope, http.MethodGet, base+"/secrets/db-password?api-version=7.4", nil); status != http.StatusForbidden || !bytes.Contains(b, []byte("secrets/getSecret/action")) {
		t.Errorf("no secrets role: %d %s, want 403", status, b)
	}
	if status, _, _ := acCall(t, e, uc, scope, http.MethodPut, base+"/secrets/db-password?api-version=7.4", map[string]any{"value": "x"}); status != http.StatusForbidden {
		t.Errorf("a Secrets User writing: %d, want 403", status)
	}
	if status, _, _ := acCall(t, e, uc, scope, http.MethodGet, base+"/secrets/missing?api-version=7.4", nil); status != http.StatusNotFound {
		t.Errorf("a missing secret: %d, want 404", status)
	}
}
