package aso

import (
	"errors"
	"strings"
	"testing"
)

func mustKind(t testing.TB, apiVersion, kind string) *Kind {
	t.Helper()
	k, ok := LookupAPIVersion(apiVersion, kind)
	if !ok {
		t.Fatalf("%s %s not in catalog", apiVersion, kind)
	}
	return k
}

func TestAzureName(t *testing.T) {
	ra := mustKind(t, "authorization.azure.com/v1api20220401", "RoleAssignment")
	rd := mustKind(t, "authorization.azure.com/v1api20220401", "RoleDefinition")
	sql := mustKind(t, "documentdb.azure.com/v1api20231115", "SqlRoleAssignment")
	blob := mustKind(t, "storage.azure.com/v1api20230101", "StorageAccountsBlobService")
	sa := mustKind(t, "storage.azure.com/v1api20230101", "StorageAccount")
	rgOwner := map[string]any{"owner": map[string]any{"group": "resources.azure.com", "kind": "ResourceGroup", "name": "aso-sample-rg"}}
	armOwner := map[string]any{"owner": map[string]any{"armId": "/subscriptions/00000000-0000-0000-0000-000000000000"}}
	tests := []struct {
		name       string
		k          *Kind
		ns, obj    string
		spec       map[string]any
		want, seed string
		err        error
	}{
		// conversion-rules §4, checked against the authorization expected.json.
		{"role assignment", ra, "default", "aso-sample-contributor", rgOwner, "b22e0569-82f7-5328-8b87-308f0cc665a6",
			"resources.azure.com/ResourceGroup:default/aso-sample-rg:RoleAssignment/authorization.azure.com:default/aso-sample-contributor", nil},
		{"role assignment in the test namespace", ra, "aso-test-samples-creationanddeletion-test-authorization-v-44911", "aso-sample-contributor",
			map[string]any{"owner": map[string]any{"group": "resources.azure.com", "kind": "ResourceGroup", "name": "asotest-rg-fyvjhk"}},
			"2d76d181-4aba-5dac-a920-cd42487a00ab", "", nil},
		{"role definition in the test namespace", rd, "aso-test-samples-creationanddeletion-test-authorization-v-44911", "aso-sample-roledef",
			map[string]any{"owner": map[string]any{"group": "resources.azure.com", "kind": "ResourceGroup", "name": "asotest-rg-fyvjhk"}},
			"ac6f13fd-bf1d-5bb4-b5a3-1001e9d610cb", "", nil},
		{"role definition", rd, "", "aso-sample-roledef", rgOwner, "98bdb23e-d83f-528e-88a5-dfeceb615f40", "", nil},
		{"legacy armId owner", ra, "ns", "ra", armOwner, "", "/:ns/:RoleAssignment/authorization.azure.com:ns/ra", nil},
		{"scoped armId owner", rd, "ns", "rd", armOwner, "", "/subscriptions/00000000-0000-0000-0000-000000000000:RoleDefinition/authorization.azure.com:ns/rd", nil},
		{"known owner fills group and kind", sql, "ns", "x", map[string]any{"owner": map[string]any{"name": "acct"}}, "",
			"documentdb.azure.com/DatabaseAccount:ns/acct:SqlRoleAssignment/documentdb.azure.com:ns/x", nil},
		{"uuid metadata.name kept", ra, "ns", "6f9619ff-8b86-d011-b42d-00c04fc964ff", rgOwner, "6f9619ff-8b86-d011-b42d-00c04fc964ff", "", nil},
		{"azureName wins", ra, "ns", "ra", map[string]any{"azureName": "11111111-2222-3333-4444-555555555555"}, "11111111-2222-3333-4444-555555555555", "", nil},
		{"random naming", ra, "ns", "ra", map[string]any{"operatorSpec": map[string]any{"namingConvention": "random"}}, "", "", ErrRandomName},
		{"singleton", blob, "ns", "anything", map[string]any{"azureName": "ignored"}, "default", "", nil},
		{"metadata.name", sa, "ns", "mystorage", map[string]any{}, "mystorage", "", nil},
		{"spec.azureName", sa, "ns", "mystorage", map[string]any{"azureName": "other"}, "other", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.seed != "" {
				if got := UUIDv5Seed(tt.k, tt.ns, tt.obj, tt.spec); got != tt.seed {
					t.Errorf("seed\n got %s\nwant %s", got, tt.seed)
				}
			}
			got, err := AzureName(tt.k, tt.ns, tt.obj, tt.spec)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("AzureName = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestARMID(t *testing.T) {
	const sub = "00000000-0000-0000-0000-000000000000"
	rgID := "/subscriptions/" + sub + "/resourceGroups/rg"
	container := mustKind(t, "storage.azure.com/v1api20230101", "StorageAccountsBlobServicesContainer")
	blob := mustKind(t, "storage.azure.com/v1api20230101", "StorageAccountsBlobService")
	sa := mustKind(t, "storage.azure.com/v1api20230101", "StorageAccount")
	ra := mustKind(t, "authorization.azure.com/v1api20220401", "RoleAssignment")
	rg := mustKind(t, "resources.azure.com/v1api20200601", "ResourceGroup")
	alias := mustKind(t, "subscription.azure.com/v1api20211001", "Alias")
	plan := mustKind(t, "insights.azure.com/v1api20171001", "PricingPlan")
	rule := mustKind(t, "servicebus.azure.com/v1api20240101", "NamespacesAuthorizationRule")
	tests := []struct {
		name         string
		k            *Kind
		owner, azure string
		want, err    string
	}{
		{"resource group", rg, "ignored", "rg", rgID, ""},
		{"alias", alias, "", "a", "/providers/Microsoft.Subscription/aliases/a", ""},
		{"top level", sa, rgID, "sa", rgID + "/providers/Microsoft.Storage/storageAccounts/sa", ""},
		{"owner armId with lowercase resourcegroups", sa, "/subscriptions/" + sub + "/resourcegroups/rg", "sa", rgID + "/providers/Microsoft.Storage/storageAccounts/sa", ""},
		{"nested", container, rgID + "/providers/Microsoft.Storage/storageAccounts/sa/blobServices/default", "c",
			rgID + "/providers/Microsoft.Storage/storageAccounts/sa/blobServices/default/containers/c", ""},
		{"owner armId in other casing: provider present, own casing kept", blob, rgID + "/providers/microsoft.storage/STORAGEACCOUNTS/sa", "default",
			rgID + "/providers/Microsoft.Storage/storageAccounts/sa/blobServices/default", ""},
		{"kind's own casing, not the owner's", plan, rgID + "/providers/Microsoft.Insights/components/app", "current",
			rgID + "/providers/microsoft.insights/components/app/pricingPlans/current", ""},
		{"servicebus AuthorizationRules casing", rule, rgID + "/providers/Microsoft.ServiceBus/namespaces/ns", "r",
			rgID + "/providers/Microsoft.ServiceBus/namespaces/ns/AuthorizationRules/r", ""},
		{"extension at subscription", ra, "/subscriptions/" + sub, "u", "/subscriptions/" + sub + "/providers/Microsoft.Authorization/roleAssignments/u", ""},
		{"extension on a resource", ra, rgID + "/providers/Microsoft.Storage/storageAccounts/sa", "u",
			rgID + "/providers/Microsoft.Storage/storageAccounts/sa/providers/Microsoft.Authorization/roleAssignments/u", ""},
		{"child under a resource group", container, rgID, "c", "", "is a child resource"},
		{"owner of the wrong type", container, rgID + "/providers/Microsoft.Storage/storageAccounts/sa/fileServices/default", "c", "", "not a parent"},
		{"grandparent as owner", container, rgID + "/providers/Microsoft.Storage/storageAccounts/sa", "c", "", "not the direct parent"},
		{"name with slash", sa, rgID, "a/b", "", "contains '/'"},
		{"no owner", sa, "", "sa", "", "needs its owner's ARM ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ARMID(tt.k, sub, tt.owner, tt.azure)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestOwnerOf(t *testing.T) {
	blob := mustKind(t, "storage.azure.com/v1api20230101", "StorageAccountsBlobService")
	rg := mustKind(t, "resources.azure.com/v1api20200601", "ResourceGroup")
	o, err := OwnerOf(blob, map[string]any{"owner": map[string]any{"name": "sa"}})
	if err != nil || o != (OwnerRef{Group: "storage.azure.com", Kind: "StorageAccount", Name: "sa"}) {
		t.Errorf("OwnerOf = %+v, %v", o, err)
	}
	if _, err := OwnerOf(blob, map[string]any{}); err == nil {
		t.Error("missing owner accepted")
	}
	if _, err := OwnerOf(blob, map[string]any{"owner": map[string]any{"name": "sa", "armId": "/subscriptions/x"}}); err == nil {
		t.Error("owner with name and armId accepted")
	}
	if _, err := OwnerOf(blob, map[string]any{"owner": map[string]any{"name": "sa", "group": "resources.azure.com", "kind": "ResourceGroup"}}); err == nil {
		t.Error("owner of the wrong kind accepted")
	}
	if o, err := OwnerOf(rg, map[string]any{}); err != nil || o != (OwnerRef{}) {
		t.Errorf("resource group owner = %+v, %v", o, err)
	}
}
