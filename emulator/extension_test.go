package emulator_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
)

// TestExtensionResourcesAtSubscriptionAndMissingParent: extension resources attach to a subscription as to a
// resource (TestEmulatorAnswersAsTable covers every resource type and resource groups); under a resource that does
// not exist they answer ARM's 404 for that resource, and they go with their parent.
func TestExtensionResourcesAtSubscriptionAndMissingParent(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	sub := "/subscriptions/" + e.SubscriptionID()
	diag := sub + "/providers/Microsoft.Insights/diagnosticSettings/subdiag"
	if r := c.do(http.MethodPut, diag, "2021-05-01-preview", map[string]any{"properties": map[string]any{"logs": []any{}}}); r.status >= 300 {
		t.Fatalf("subscription diagnostic setting: %d %s", r.status, r.raw)
	}
	if r := c.do(http.MethodGet, diag, "2021-05-01-preview", nil); r.status != 200 || !strings.EqualFold(r.str("id"), diag) {
		t.Errorf("GET: %d %s", r.status, r.raw)
	}
	rg := rgPath(e, "rg-ext")
	putRG(t, c, rg)
	missing := rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/nothere"
	r := c.do(http.MethodPut, missing+"/providers/Microsoft.Insights/diagnosticSettings/d", "2021-05-01-preview", map[string]any{"properties": map[string]any{}})
	if r.status != http.StatusNotFound || r.code() != "ResourceNotFound" || !strings.Contains(r.str("error", "message"), "userAssignedIdentities/nothere") {
		t.Errorf("extension under a missing resource: %d %s", r.status, r.raw)
	}
	uai := rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/here"
	mustPut(t, c, uai, miAPI, map[string]any{"location": "westus2"})
	ext := uai + "/providers/Microsoft.Insights/diagnosticSettings/d"
	mustPut(t, c, ext, "2021-05-01-preview", map[string]any{"properties": map[string]any{}})
	if _, err := c.deleteAndWait(uai, miAPI); err != nil {
		t.Fatal(err)
	}
	if r := c.do(http.MethodGet, ext, "2021-05-01-preview", nil); r.status != http.StatusNotFound {
		t.Errorf("extension after its resource's DELETE: %d", r.status)
	}
}
