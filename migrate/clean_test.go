package migrate_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/migrate"
)

// queueAsLeft is a NamespacesQueue as the API server returns it after Flux
// applied it (server-side apply, manager kustomize-controller) and ASO's
// controller reconciled it (manager aso-controller: its annotations,
// finalizer and a spec default written with an update, the status
// subresource).
const queueAsLeft = `{
  "apiVersion": "servicebus.azure.com/v1api20240101",
  "kind": "NamespacesQueue",
  "metadata": {
    "name": "team-a-orders", "namespace": "team-a", "uid": "0f6c", "resourceVersion": "812", "generation": 2,
    "creationTimestamp": "2026-11-20T10:00:00Z",
    "labels": {"app": "orders", "kustomize.toolkit.fluxcd.io/name": "team-a", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"},
    "annotations": {
      "serviceoperator.azure.com/reconcile-policy": "detach-on-delete",
      "serviceoperator.azure.com/resource-id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ServiceBus/namespaces/sb/queues/team-a-orders",
      "serviceoperator.azure.com/poller-resume-token": "abc",
      "serviceoperator.azure.com/latest-reconciled-generation": "2"
    },
    "finalizers": ["serviceoperator.azure.com/finalizer"],
    "ownerReferences": [{"apiVersion": "servicebus.azure.com/v1api20240101", "kind": "Namespace", "name": "sb", "uid": "77"}],
    "managedFields": [
      {"manager": "kustomize-controller", "operation": "Apply", "apiVersion": "servicebus.azure.com/v1api20240101", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}, "f:kustomize.toolkit.fluxcd.io/name": {}, "f:kustomize.toolkit.fluxcd.io/namespace": {}},
                                   "f:annotations": {"f:serviceoperator.azure.com/reconcile-policy": {}}},
                    "f:spec": {"f:azureName": {}, "f:owner": {"f:name": {}}, "f:maxDeliveryCount": {}, "f:lockDuration": {}}}},
      {"manager": "aso-controller", "operation": "Update", "apiVersion": "servicebus.azure.com/v1api20240101", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {"f:serviceoperator.azure.com/resource-id": {}, "f:serviceoperator.azure.com/poller-resume-token": {},
                                                     "f:serviceoperator.azure.com/latest-reconciled-generation": {}},
                                   "f:finalizers": {".": {}, "v:\"serviceoperator.azure.com/finalizer\"": {}},
                                   "f:ownerReferences": {".": {}, "k:{\"uid\":\"77\"}": {}}},
                    "f:spec": {"f:enablePartitioning": {}}}},
      {"manager": "aso-controller", "operation": "Update", "subresource": "status", "apiVersion": "servicebus.azure.com/v1api20240101", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:status": {"f:conditions": {}}}}
    ]
  },
  "spec": {"azureName": "team-a-orders", "owner": {"name": "sb"}, "maxDeliveryCount": 10, "lockDuration": "PT1M", "enablePartitioning": false},
  "status": {"conditions": [{"type": "Ready", "status": "True"}], "id": "/subscriptions/s/..."}
}`

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCleanFromManagedFields(t *testing.T) {
	obj := decode(t, queueAsLeft)
	before := decode(t, queueAsLeft)
	got, err := migrate.Clean(obj, migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "servicebus.azure.com/v1api20240101",
		"kind":       "NamespacesQueue",
		"metadata": map[string]any{
			"name": "team-a-orders", "namespace": "team-a",
			"labels":      map[string]any{"app": "orders"},
			"annotations": map[string]any{"serviceoperator.azure.com/reconcile-policy": "detach-on-delete"},
		},
		"spec": map[string]any{"owner": map[string]any{"name": "sb"}, "maxDeliveryCount": float64(10), "lockDuration": "PT1M"},
	}
	if d := cmp.Diff(want, got.Manifest); d != "" {
		t.Errorf("manifest (-want +got):\n%s", d)
	}
	if got.Source != migrate.FromManagedFields {
		t.Errorf("source %s", got.Source)
	}
	if d := cmp.Diff([]string{"metadata.ownerReferences", "spec.azureName", "spec.enablePartitioning"}, got.Dropped); d != "" {
		t.Errorf("dropped (-want +got):\n%s", d)
	}
	if d := cmp.Diff(before, obj); d != "" {
		t.Errorf("Clean changed its input:\n%s", d)
	}
}

// The last-applied annotation is the author's object exactly: an azureName
// written there stays even when it equals the default.
func TestCleanFromLastApplied(t *testing.T) {
	obj := decode(t, queueAsLeft)
	md := obj["metadata"].(map[string]any)
	delete(md, "managedFields")
	md["annotations"].(map[string]any)["kubectl.kubernetes.io/last-applied-configuration"] = `{"apiVersion":"servicebus.azure.com/v1api20240101","kind":"NamespacesQueue",` +
		`"metadata":{"name":"team-a-orders","namespace":"team-a","annotations":{"team":"a"}},"spec":{"azureName":"team-a-orders","owner":{"name":"sb"},"maxDeliveryCount":10}}`
	got, err := migrate.Clean(obj, migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "servicebus.azure.com/v1api20240101",
		"kind":       "NamespacesQueue",
		"metadata":   map[string]any{"name": "team-a-orders", "namespace": "team-a", "annotations": map[string]any{"team": "a"}},
		"spec":       map[string]any{"azureName": "team-a-orders", "owner": map[string]any{"name": "sb"}, "maxDeliveryCount": float64(10)},
	}
	if d := cmp.Diff(want, got.Manifest); d != "" {
		t.Errorf("manifest (-want +got):\n%s", d)
	}
	if got.Source != migrate.FromLastApplied {
		t.Errorf("source %s", got.Source)
	}
}

// Without managed fields or last-applied, the spec is kept whole less the
// webhook's azureName; a lost owner comes back from the ownerReference; a
// role assignment's UUIDv5 azureName is the default and goes; its
// ConfigMap and the credential-from Secret are listed, not copied.
func TestCleanFromObject(t *testing.T) {
	obj := decode(t, `{
  "apiVersion": "authorization.azure.com/v1api20220401", "kind": "RoleAssignment",
  "metadata": {"name": "team-a-rg-contributor", "namespace": "platform",
    "annotations": {"serviceoperator.azure.com/credential-from": "platform-cred"},
    "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1"},
                        {"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup", "name": "team-a-rg", "uid": "2"}]},
  "spec": {"azureName": "2a4c4d2c-5b3b-5fd6-8d5e-7c1b7b8f0d11",
           "principalIdFromConfig": {"name": "team-a-identity-settings", "key": "principalId"},
           "principalType": "ServicePrincipal",
           "roleDefinitionReference": {"wellKnownName": "Contributor"}},
  "status": {}
}`)
	got, err := migrate.Clean(obj, migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := got.Manifest["spec"].(map[string]any)
	if d := cmp.Diff(map[string]any{"group": "resources.azure.com", "kind": "ResourceGroup", "name": "team-a-rg"}, spec["owner"]); d != "" {
		t.Errorf("owner from the ownerReference (-want +got):\n%s", d)
	}
	// The UUIDv5 written above is not this object's default: it stays.
	if spec["azureName"] == nil {
		t.Errorf("a non-default azureName was dropped")
	}
	if got.Source != migrate.FromObject {
		t.Errorf("source %s", got.Source)
	}
	want := []migrate.Use{
		{Kind: "ConfigMap", Namespace: "platform", Name: "team-a-identity-settings", Field: "spec.principalIdFromConfig"},
		{Kind: "Secret", Namespace: "platform", Name: "platform-cred", Field: "metadata.annotations[serviceoperator.azure.com/credential-from]"},
	}
	if d := cmp.Diff(want, got.Uses); d != "" {
		t.Errorf("uses (-want +got):\n%s", d)
	}
	// The default UUIDv5 (as ASO's webhook computes it) is dropped.
	delete(spec, "azureName")
	obj2 := decode(t, `{"apiVersion": "authorization.azure.com/v1api20220401", "kind": "RoleAssignment",
  "metadata": {"name": "team-a-rg-contributor", "namespace": "platform"}, "spec": {}}`)
	obj2["spec"] = spec
	c2, err := migrate.Clean(obj2, migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	def := c2.Manifest["spec"].(map[string]any)
	def["azureName"] = defaultName(t, c2)
	c3, err := migrate.Clean(map[string]any{"apiVersion": obj2["apiVersion"], "kind": obj2["kind"], "metadata": obj2["metadata"], "spec": def}, migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, has := c3.Manifest["spec"].(map[string]any)["azureName"]; has || len(c3.Dropped) != 1 || c3.Dropped[0] != "spec.azureName" {
		t.Errorf("the webhook's UUIDv5 azureName kept: %v, dropped %v", c3.Manifest["spec"], c3.Dropped)
	}
}

func TestCleanRefuses(t *testing.T) {
	_, err := migrate.Clean(decode(t, `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "b"}}`), migrate.Options{})
	if !errors.Is(err, migrate.ErrNotASO) {
		t.Errorf("a ConfigMap: %v, want ErrNotASO", err)
	}
	_, err = migrate.Clean(decode(t, `{"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup", "metadata": {"name": "a"}}`), migrate.Options{})
	if err == nil {
		t.Errorf("an object without a namespace was accepted")
	}
}

// An object the API server returns under another version than its author
// applied (a listing reads one version per kind) is written at the
// author's version, from its managed fields.
func TestCleanAuthorsVersion(t *testing.T) {
	obj := decode(t, queueAsLeft)
	obj["apiVersion"] = "servicebus.azure.com/v1api20211101"
	got, err := migrate.Clean(obj, migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Manifest["apiVersion"] != "servicebus.azure.com/v1api20240101" || got.Version != "v1api20240101" {
		t.Errorf("apiVersion %v (%s), want the author's servicebus.azure.com/v1api20240101", got.Manifest["apiVersion"], got.Version)
	}
}
