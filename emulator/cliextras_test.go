package emulator_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

func valueNames(r result) []string {
	var out []string
	for _, v := range asList(r.body["value"]) {
		if m, ok := v.(map[string]any); ok {
			s, _ := m["name"].(string)
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

func TestDeleteMissingResourceGroupIsNotFound(t *testing.T) {
	e := newEmulator(t)
	c, _ := ownerClient(t, e)
	r := c.do(http.MethodDelete, rgPath(e, "nope"), rgAPI, nil)
	if r.status != http.StatusNotFound || r.code() != "ResourceGroupNotFound" {
		t.Fatalf("DELETE missing group = %d %s, want 404 ResourceGroupNotFound", r.status, r.code())
	}
}

func TestStorageKeysAreBase64AndRegenerate(t *testing.T) {
	e := newEmulator(t)
	c, _ := ownerClient(t, e)
	mustPut(t, c, rgPath(e, "rg"), rgAPI, map[string]any{"location": "westeurope"})
	sa := rgPath(e, "rg") + "/providers/Microsoft.Storage/storageAccounts/stkeys01"
	acct := mustPut(t, c, sa, storageAPI, map[string]any{"location": "westeurope", "kind": "StorageV2", "sku": map[string]any{"name": "Standard_LRS"}})
	if kct, _ := acct["properties"].(map[string]any)["keyCreationTime"].(map[string]any); kct["key1"] == nil || kct["key2"] == nil {
		t.Errorf("properties.keyCreationTime = %v", kct)
	}
	keys := func(r result) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, k := range asList(r.body["keys"]) {
			m := k.(map[string]any)
			out[m["keyName"].(string)] = m
		}
		return out
	}
	r := c.do(http.MethodPost, sa+"/listKeys", storageAPI, nil)
	before := keys(r)
	if r.status != http.StatusOK || len(before) != 2 {
		t.Fatalf("listKeys = %d %s", r.status, r.raw)
	}
	for n, k := range before {
		raw, err := base64.StdEncoding.DecodeString(k["value"].(string))
		if err != nil || len(raw) != 64 || k["permissions"] != "FULL" || !strings.HasPrefix(k["creationTime"].(string), "20") || strings.HasPrefix(k["creationTime"].(string), "1970") {
			t.Errorf("%s = %v (decoded %d bytes, %v)", n, k, len(raw), err)
		}
	}
	r = c.do(http.MethodPost, sa+"/regenerateKey", storageAPI, map[string]any{"keyName": "key2"})
	after := keys(r)
	if r.status != http.StatusOK || after["key2"]["value"] == before["key2"]["value"] || after["key1"]["value"] != before["key1"]["value"] {
		t.Fatalf("regenerateKey key2 = %d: before %v, after %v", r.status, before, after)
	}
	if again := keys(c.do(http.MethodPost, sa+"/listKeys", storageAPI, nil)); again["key2"]["value"] != after["key2"]["value"] {
		t.Errorf("listKeys after regenerate = %v, want %v", again["key2"], after["key2"])
	}
	if r := c.do(http.MethodPost, sa+"/regenerateKey", storageAPI, map[string]any{"keyName": "key3"}); r.status != http.StatusBadRequest {
		t.Errorf("regenerateKey key3 = %d, want 400", r.status)
	}
}

func TestServiceBusKeysAreBase64AndRegenerate(t *testing.T) {
	e := newEmulator(t)
	c, _ := ownerClient(t, e)
	mustPut(t, c, rgPath(e, "rg"), rgAPI, map[string]any{"location": "westeurope"})
	ns := rgPath(e, "rg") + "/providers/Microsoft.ServiceBus/namespaces/sb-keys-ns"
	mustPut(t, c, ns, "2021-11-01", map[string]any{"location": "westeurope", "sku": map[string]any{"name": "Standard"}})
	rule := ns + "/AuthorizationRules/RootManageSharedAccessKey"
	r := c.do(http.MethodPost, rule+"/listKeys", "2021-11-01", nil)
	for _, k := range []string{"primaryKey", "secondaryKey"} {
		raw, err := base64.StdEncoding.DecodeString(r.str(k))
		if err != nil || len(raw) != 32 || len(r.str(k)) != 44 {
			t.Errorf("%s %q: %d bytes, %v", k, r.str(k), len(raw), err)
		}
	}
	if !strings.HasSuffix(r.str("primaryConnectionString"), "SharedAccessKey="+r.str("primaryKey")) {
		t.Errorf("primaryConnectionString = %q", r.str("primaryConnectionString"))
	}
	n := c.do(http.MethodPost, rule+"/regenerateKeys", "2021-11-01", map[string]any{"keyType": "SecondaryKey"})
	if n.status != http.StatusOK || n.str("secondaryKey") == r.str("secondaryKey") || n.str("primaryKey") != r.str("primaryKey") {
		t.Fatalf("regenerateKeys SecondaryKey = %d %s (before %s)", n.status, n.raw, r.raw)
	}
	given := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	if n := c.do(http.MethodPost, rule+"/regenerateKeys", "2021-11-01", map[string]any{"keyType": "PrimaryKey", "key": given}); n.str("primaryKey") != given {
		t.Errorf("regenerateKeys with a key = %s", n.raw)
	}
	if n := c.do(http.MethodPost, rule+"/regenerateKeys", "2021-11-01", map[string]any{"keyType": "Other"}); n.status != http.StatusBadRequest {
		t.Errorf("regenerateKeys Other = %d, want 400", n.status)
	}
}

func TestCheckNameAvailabilityAndNames(t *testing.T) {
	e := newEmulator(t)
	c, _ := ownerClient(t, e)
	mustPut(t, c, rgPath(e, "rg"), rgAPI, map[string]any{"location": "westeurope"})
	mustPut(t, c, rgPath(e, "rg")+"/providers/Microsoft.Storage/storageAccounts/sttaken01", storageAPI, map[string]any{"location": "westeurope", "sku": map[string]any{"name": "Standard_LRS"}})
	mustPut(t, c, rgPath(e, "rg")+"/providers/Microsoft.ServiceBus/namespaces/sb-taken-01", "2021-11-01", map[string]any{"location": "westeurope"})
	subp := "/subscriptions/" + e.SubscriptionID() + "/providers/"
	for _, tc := range []struct {
		ns, typ, name string
		avail         bool
		reason        string
	}{
		{"Microsoft.Storage", "Microsoft.Storage/storageAccounts", "sttaken01", false, "AlreadyExists"},
		{"Microsoft.Storage", "Microsoft.Storage/storageAccounts", "stfree01", true, ""},
		{"Microsoft.Storage", "Microsoft.Storage/storageAccounts", "Bad_Name", false, "AccountNameInvalid"},
		{"Microsoft.ServiceBus", "", "sb-taken-01", false, "NameInUse"},
		{"Microsoft.ServiceBus", "", "sb-free-01", true, "None"},
		{"Microsoft.ServiceBus", "", "sb", false, "InvalidName"},
		{"Microsoft.KeyVault", "Microsoft.KeyVault/vaults", "kv-free-01", true, ""},
		{"Microsoft.KeyVault", "Microsoft.KeyVault/vaults", "1kv", false, "AccountNameInvalid"},
	} {
		r := c.do(http.MethodPost, subp+tc.ns+"/checkNameAvailability", "2023-01-01", map[string]any{"name": tc.name, "type": tc.typ})
		if r.status != http.StatusOK || r.body["nameAvailable"] != tc.avail || (tc.reason != "" && r.str("reason") != tc.reason) {
			t.Errorf("%s %s: %d %s, want available=%v reason %q", tc.ns, tc.name, r.status, r.raw, tc.avail, tc.reason)
		}
	}
	for _, tc := range []struct{ path, api, code string }{
		{rgPath(e, "bad*name"), rgAPI, "InvalidResourceGroup"},
		{rgPath(e, "ends-with-dot."), rgAPI, "InvalidResourceGroup"},
		{rgPath(e, "rg") + "/providers/Microsoft.Storage/storageAccounts/Upper", storageAPI, "AccountNameInvalid"},
		{rgPath(e, "rg") + "/providers/Microsoft.KeyVault/vaults/kv--double", "2023-07-01", "VaultNameNotValid"},
		{rgPath(e, "rg") + "/providers/Microsoft.ServiceBus/namespaces/short", "2021-11-01", "BadRequest"},
	} {
		r := c.do(http.MethodPut, tc.path, tc.api, map[string]any{"location": "westeurope", "properties": map[string]any{"tenantId": e.TenantID(), "sku": map[string]any{"family": "A", "name": "standard"}}})
		if r.status != http.StatusBadRequest || r.code() != tc.code {
			t.Errorf("PUT %s = %d %s, want 400 %s", tc.path, r.status, r.code(), tc.code)
		}
	}
}

func TestLocations(t *testing.T) {
	e := newEmulator(t)
	c, _ := ownerClient(t, e)
	r := c.do(http.MethodGet, "/subscriptions/"+e.SubscriptionID()+"/locations", "2022-12-01", nil)
	if got := valueNames(r); r.status != http.StatusOK || !slices.Contains(got, "westeurope") || !slices.Contains(got, "eastus") {
		t.Fatalf("locations = %d %v", r.status, got)
	}
	for _, v := range asList(r.body["value"]) {
		m := v.(map[string]any)
		if m["name"] == "westeurope" && (m["displayName"] != "West Europe" || m["type"] != "Region") {
			t.Errorf("westeurope = %v", m)
		}
	}
	if r := c.do(http.MethodPut, rgPath(e, "rg-x"), rgAPI, map[string]any{"location": "moon"}); r.status != http.StatusBadRequest || r.code() != "LocationNotAvailableForResourceGroup" {
		t.Errorf("group in moon = %d %s", r.status, r.code())
	}
	mustPut(t, c, rgPath(e, "rg"), rgAPI, map[string]any{"location": "West Europe"})
	if r := c.do(http.MethodPut, rgPath(e, "rg")+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id", miAPI, map[string]any{"location": "moon"}); r.status != http.StatusBadRequest || r.code() != "LocationNotAvailableForResourceType" {
		t.Errorf("identity in moon = %d %s", r.status, r.code())
	}
}

func TestProvidersListResourceTypes(t *testing.T) {
	e := newEmulator(t)
	c, _ := ownerClient(t, e)
	r := c.do(http.MethodGet, "/subscriptions/"+e.SubscriptionID()+"/providers/microsoft.storage", "2021-04-01", nil)
	if r.status != http.StatusOK || r.str("namespace") != "Microsoft.Storage" || r.str("registrationState") != "Registered" {
		t.Fatalf("provider = %d %s", r.status, r.raw)
	}
	found := false
	for _, v := range asList(r.body["resourceTypes"]) {
		rt := v.(map[string]any)
		if rt["resourceType"] != "storageAccounts" {
			continue
		}
		found = true
		versions := asList(rt["apiVersions"])
		if len(versions) == 0 || len(asList(rt["locations"])) == 0 || !slices.IsSortedFunc(versions, func(a, b any) int { return strings.Compare(b.(string), a.(string)) }) {
			t.Errorf("storageAccounts = %v", rt)
		}
	}
	if !found {
		t.Errorf("no storageAccounts in %s", r.raw)
	}
	if r := c.do(http.MethodGet, "/subscriptions/"+e.SubscriptionID()+"/providers", "2021-04-01", nil); r.status != http.StatusOK || len(asList(r.body["value"])) < 10 {
		t.Errorf("providers = %d, %d", r.status, len(asList(r.body["value"])))
	}
}

func TestTagsExtension(t *testing.T) {
	e := newEmulator(t)
	c, _ := ownerClient(t, e)
	mustPut(t, c, rgPath(e, "rg"), rgAPI, map[string]any{"location": "westeurope", "tags": map[string]any{"keep": "1"}})
	id := rgPath(e, "rg") + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id"
	mustPut(t, c, id, miAPI, map[string]any{"location": "westeurope"})
	tags := id + "/providers/Microsoft.Resources/tags/default"
	const api = "2021-04-01"
	tagsOf := func(r result) map[string]any {
		p, _ := r.body["properties"].(map[string]any)
		m, _ := p["tags"].(map[string]any)
		return m
	}
	if r := c.do(http.MethodPut, tags, api, map[string]any{"properties": map[string]any{"tags": map[string]any{"a": "1", "b": "2"}}}); r.status != http.StatusOK || len(tagsOf(r)) != 2 || r.str("type") != "Microsoft.Resources/tags" {
		t.Fatalf("PUT tags = %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodPatch, tags, api, map[string]any{"operation": "Merge", "properties": map[string]any{"tags": map[string]any{"c": "3"}}}); len(tagsOf(r)) != 3 {
		t.Errorf("Merge = %s", r.raw)
	}
	if r := c.do(http.MethodPatch, tags, api, map[string]any{"operation": "Delete", "properties": map[string]any{"tags": map[string]any{"a": "1"}}}); len(tagsOf(r)) != 2 || tagsOf(r)["a"] != nil {
		t.Errorf("Delete = %s", r.raw)
	}
	if r := c.do(http.MethodGet, id, miAPI, nil); len(r.body["tags"].(map[string]any)) != 2 {
		t.Errorf("identity tags after PATCH = %v", r.body["tags"])
	}
	if r := c.do(http.MethodPatch, tags, api, map[string]any{"operation": "Replace", "properties": map[string]any{"tags": map[string]any{"z": "9"}}}); len(tagsOf(r)) != 1 {
		t.Errorf("Replace = %s", r.raw)
	}
	if r := c.do(http.MethodGet, rgPath(e, "rg")+"/providers/Microsoft.Resources/tags/default", api, nil); tagsOf(r)["keep"] != "1" {
		t.Errorf("group tags = %s", r.raw)
	}
	if r := c.do(http.MethodDelete, tags, api, nil); r.status != http.StatusOK {
		t.Errorf("DELETE tags = %d", r.status)
	}
	if r := c.do(http.MethodGet, tags, api, nil); len(tagsOf(r)) != 0 {
		t.Errorf("tags after DELETE = %s", r.raw)
	}
	if r := c.do(http.MethodGet, rgPath(e, "rg")+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/gone/providers/Microsoft.Resources/tags/default", api, nil); r.status != http.StatusNotFound {
		t.Errorf("tags of a missing resource = %d", r.status)
	}
}

func TestLocksRefuseWhatTheyLock(t *testing.T) {
	e := newEmulator(t, emulator.WithDefaultLatency(0))
	c, _ := ownerClient(t, e)
	mustPut(t, c, rgPath(e, "rg"), rgAPI, map[string]any{"location": "westeurope"})
	sa := rgPath(e, "rg") + "/providers/Microsoft.Storage/storageAccounts/stlocked01"
	mustPut(t, c, sa, storageAPI, map[string]any{"location": "westeurope", "sku": map[string]any{"name": "Standard_LRS"}})
	const lockAPI = "2020-05-01"
	lock := sa + "/providers/Microsoft.Authorization/locks/nodelete"
	mustPut(t, c, lock, lockAPI, map[string]any{"properties": map[string]any{"level": "CanNotDelete"}})
	if r := c.do(http.MethodDelete, sa, storageAPI, nil); r.status != http.StatusConflict || r.code() != "ScopeLocked" {
		t.Errorf("DELETE locked account = %d %s", r.status, r.code())
	}
	if r := c.do(http.MethodDelete, rgPath(e, "rg"), rgAPI, nil); r.status != http.StatusConflict || r.code() != "ScopeLocked" {
		t.Errorf("DELETE group holding a locked account = %d %s", r.status, r.code())
	}
	if r := c.do(http.MethodPatch, sa, storageAPI, map[string]any{"tags": map[string]any{"a": "b"}}); r.status >= 300 {
		t.Errorf("PATCH under CanNotDelete = %d %s", r.status, r.code())
	}
	if r := c.do(http.MethodDelete, lock, lockAPI, nil); r.status != http.StatusOK {
		t.Fatalf("DELETE lock = %d", r.status)
	}
	ro := rgPath(e, "rg") + "/providers/Microsoft.Authorization/locks/readonly"
	mustPut(t, c, ro, lockAPI, map[string]any{"properties": map[string]any{"level": "ReadOnly"}})
	for _, tc := range []struct{ method, path string }{
		{http.MethodPatch, sa}, {http.MethodPost, sa + "/listKeys"}, {http.MethodDelete, sa},
		{http.MethodPut, rgPath(e, "rg") + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id"},
		{http.MethodPut, sa + "/providers/Microsoft.Resources/tags/default"},
	} {
		r := c.do(tc.method, tc.path, storageAPI, map[string]any{"location": "westeurope", "properties": map[string]any{"tags": map[string]any{}}})
		if r.status != http.StatusConflict || r.code() != "ScopeLocked" || !strings.Contains(r.str("error", "message"), rgPath(e, "rg")) {
			t.Errorf("%s %s under ReadOnly = %d %s", tc.method, tc.path, r.status, r.raw)
		}
	}
	if r := c.do(http.MethodGet, sa, storageAPI, nil); r.status != http.StatusOK {
		t.Errorf("GET under ReadOnly = %d", r.status)
	}
}

func TestListsShowWhatTheCallerMayRead(t *testing.T) {
	e := newEmulator(t, emulator.WithDefaultLatency(0))
	c, _ := ownerClient(t, e)
	for _, rg := range []string{"rg-a", "rg-b"} {
		mustPut(t, c, rgPath(e, rg), rgAPI, map[string]any{"location": "westeurope", "tags": map[string]any{"team": rg}})
		mustPut(t, c, rgPath(e, rg)+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-"+rg, miAPI, map[string]any{"location": "westeurope", "tags": map[string]any{"team": rg}})
		mustPut(t, c, rgPath(e, rg)+"/providers/Microsoft.Storage/storageAccounts/st"+strings.ReplaceAll(rg, "-", ""), storageAPI, map[string]any{"location": "uksouth", "sku": map[string]any{"name": "Standard_LRS"}})
	}
	sp, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "rg-a-reader"},
		Roles: []emulator.RoleGrant{{Role: "Reader", Scope: rgPath(e, "rg-a")}}})
	if err != nil {
		t.Fatal(err)
	}
	rd := newClient(t, e, secretCred(t, e, sp), 0)
	sub := "/subscriptions/" + e.SubscriptionID()
	if r := rd.do(http.MethodGet, "/subscriptions", "2022-12-01", nil); len(asList(r.body["value"])) != 1 {
		t.Errorf("GET /subscriptions for a group reader = %s", r.raw)
	}
	if r := rd.do(http.MethodGet, sub, "2022-12-01", nil); r.status != http.StatusOK {
		t.Errorf("GET subscription for a group reader = %d", r.status)
	}
	if r := rd.do(http.MethodGet, sub+"/resourcegroups", rgAPI, nil); !slices.Equal(valueNames(r), []string{"rg-a"}) {
		t.Errorf("groups for a group reader = %d %v", r.status, valueNames(r))
	}
	if r := rd.do(http.MethodGet, sub+"/resources", rgAPI, nil); !slices.Equal(valueNames(r), []string{"id-rg-a", "strga"}) {
		t.Errorf("resources for a group reader = %d %v", r.status, valueNames(r))
	}
	if r := rd.do(http.MethodGet, sub+"/providers/Microsoft.Storage/storageAccounts", storageAPI, nil); !slices.Equal(valueNames(r), []string{"strga"}) {
		t.Errorf("storage accounts for a group reader = %d %v", r.status, valueNames(r))
	}
	nobody, _ := e.AddServicePrincipal("nobody")
	nc := newClient(t, e, secretCred(t, e, nobody), 0)
	if r := nc.do(http.MethodGet, sub+"/resources", rgAPI, nil); r.status != http.StatusForbidden {
		t.Errorf("resources for a principal without roles = %d, want 403", r.status)
	}
	if r := nc.do(http.MethodGet, "/subscriptions", "2022-12-01", nil); len(asList(r.body["value"])) != 0 {
		t.Errorf("GET /subscriptions for a principal without roles = %s", r.raw)
	}
	for _, tc := range []struct {
		path, filter string
		want         []string
	}{
		{sub + "/resources", "resourceType eq 'Microsoft.Storage/storageAccounts'", []string{"strga", "strgb"}},
		{sub + "/resources", "tagName eq 'team' and tagValue eq 'rg-b'", []string{"id-rg-b"}},
		{sub + "/resources", "location eq 'uksouth' and resourceGroup eq 'rg-a'", []string{"strga"}},
		{sub + "/resources", "substringof('rg-', name)", []string{"id-rg-a", "id-rg-b"}},
		{sub + "/resourcegroups", "tagName eq 'team' and tagValue eq 'rg-a'", []string{"rg-a"}},
		{rgPath(e, "rg-b") + "/resources", "resourceType eq 'Microsoft.ManagedIdentity/userAssignedIdentities'", []string{"id-rg-b"}},
	} {
		r := c.do(http.MethodGet, tc.path+"?$filter="+url.QueryEscape(tc.filter), rgAPI, nil)
		if got := valueNames(r); r.status != http.StatusOK || !slices.Equal(got, tc.want) {
			t.Errorf("%s $filter=%s = %d %v, want %v", tc.path, tc.filter, r.status, got, tc.want)
		}
	}
	if r := c.do(http.MethodGet, sub+"/resources?$filter="+url.QueryEscape("plan eq 'x'"), rgAPI, nil); r.status != http.StatusBadRequest {
		t.Errorf("unsupported $filter = %d, want 400", r.status)
	}
}

// BenchmarkFilteredResourceList measures GET /subscriptions/{id}/resources over 1000 identities with a tag $filter
// (each item's tags are decoded) and the same list for a principal that may read one group (RBAC per item).
func BenchmarkFilteredResourceList(b *testing.B) {
	e, tok, rg := benchEnv(b)
	for i := range 1000 {
		body := fmt.Sprintf(`{"location":"westus2","tags":{"n":"%d"}}`, i%10)
		if st := rawDo(b, e, tok, http.MethodPut, fmt.Sprintf("%s/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id%d?api-version=%s", rg, i, miAPI), body); st >= 300 {
			b.Fatalf("PUT: %d", st)
		}
	}
	sub := "/subscriptions/" + e.SubscriptionID()
	sp, err := e.AddPrincipal(emulator.PrincipalSpec{Roles: []emulator.RoleGrant{{Role: "Reader", Scope: rg}}})
	if err != nil {
		b.Fatal(err)
	}
	readerTok, err := e.IssueAccessToken(sp.ObjectID, emulator.ARMAudience, time.Now().Add(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("tag-filter", func(b *testing.B) {
		path := sub + "/resources?api-version=" + rgAPI + "&$filter=" + url.QueryEscape("tagName eq 'n' and tagValue eq '3'")
		for b.Loop() {
			if st := rawDo(b, e, tok, http.MethodGet, path, ""); st != http.StatusOK {
				b.Fatalf("GET: %d", st)
			}
		}
	})
	b.Run("rbac-filtered", func(b *testing.B) {
		path := sub + "/resources?api-version=" + rgAPI
		for b.Loop() {
			if st := rawDo(b, e, readerTok, http.MethodGet, path, ""); st != http.StatusOK {
				b.Fatalf("GET: %d", st)
			}
		}
	})
}

func TestSubscriptionTagsAndTagNames(t *testing.T) {
	e := newEmulator(t)
	c, _ := ownerClient(t, e)
	sub := "/subscriptions/" + e.SubscriptionID()
	if r := c.do(http.MethodPut, sub+"/providers/Microsoft.Resources/tags/default", "2021-04-01", map[string]any{"properties": map[string]any{"tags": map[string]any{"cost": "42"}}}); r.status != http.StatusOK {
		t.Fatalf("PUT subscription tags = %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, sub, "2022-12-01", nil); r.str("tags", "cost") != "42" {
		t.Errorf("subscription = %s", r.raw)
	}
	mustPut(t, c, rgPath(e, "rg1"), rgAPI, map[string]any{"location": "westeurope", "tags": map[string]any{"env": "dev"}})
	mustPut(t, c, rgPath(e, "rg2"), rgAPI, map[string]any{"location": "westeurope", "tags": map[string]any{"env": "prod"}})
	mustPut(t, c, rgPath(e, "rg1")+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id", miAPI, map[string]any{"location": "westeurope", "tags": map[string]any{"env": "dev", "team": "a"}})
	r := c.do(http.MethodGet, sub+"/tagNames", "2021-04-01", nil)
	got := map[string]float64{}
	for _, v := range asList(r.body["value"]) {
		m := v.(map[string]any)
		got[m["tagName"].(string)] = m["count"].(map[string]any)["value"].(float64)
		if m["tagName"] == "env" && len(asList(m["values"])) != 2 {
			t.Errorf("env values = %v", m["values"])
		}
	}
	if got["env"] != 3 || got["team"] != 1 || len(got) != 2 {
		t.Errorf("tagNames = %v (%s)", got, r.raw)
	}
}
