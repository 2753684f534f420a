package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

// TestActivityLog reads a subscription's Activity Log from the emulator:
// every page (the emulator pages by 200 events), the selected fields, the
// time window, the principal's own caller name; a principal without
// Microsoft.Insights/eventtypes/values/read gets a 403 ARMError.
func TestActivityLog(t *testing.T) {
	env := newEmuEnv(t, emulator.WithoutThrottling())
	ctx := context.Background()
	c := env.client(t, env.owner)
	start := time.Now().Add(-time.Second)
	rg := "/subscriptions/" + env.sub + "/resourceGroups/rg-log"
	if _, err := c.Put(ctx, rg, "2021-04-01", []byte(`{"location":"westeurope"}`)); err != nil {
		t.Fatal(err)
	}
	const n = 150 // 2 events each: Started, Succeeded
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-%03d", rg, i)
		if _, err := c.Put(ctx, id, "2023-01-31", []byte(`{"location":"westeurope"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.e.DeleteOutOfBand(rg+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-000", "someone@example.com"); err != nil {
		t.Fatal(err)
	}
	env.e.ResetStats()
	evs, err := c.ActivityLog(ctx, env.sub, start, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 + 2*n + 2; len(evs) != want {
		t.Fatalf("%d events, want %d", len(evs), want)
	}
	if got := len(env.e.RequestLog()); got != 2 {
		t.Errorf("%d requests for %d events, want 2 pages", got, len(evs))
	}
	mine, err := env.clients.Principal(ctx, env.owner)
	if err != nil {
		t.Fatal(err)
	}
	var deletes, own int
	for _, ev := range evs {
		if ev.ResourceID == "" || ev.Time.IsZero() || ev.Status == "" || ev.Operation == "" || !ev.Changes() {
			t.Fatalf("event %+v", ev)
		}
		if strings.HasSuffix(ev.Operation, "/delete") && ev.Caller == "someone@example.com" {
			deletes++
		}
		for _, m := range mine {
			if strings.EqualFold(m, ev.Caller) {
				own++
				break
			}
		}
	}
	if deletes != 2 || own != 2+2*n {
		t.Errorf("out-of-band delete events %d (want 2), own events %d (want %d)", deletes, own, 2+2*n)
	}
	// The window: nothing after now.
	if evs, err := c.ActivityLog(ctx, env.sub, time.Now().Add(time.Second), time.Now().Add(time.Minute)); err != nil || len(evs) != 0 {
		t.Errorf("empty window: %d events, %v", len(evs), err)
	}
	// A principal that may not read the log.
	sp, err := env.e.AddServicePrincipal("nolog")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.e.AssignRole(sp.ObjectID, "Managed Identity Contributor", "/subscriptions/"+env.sub); err != nil {
		t.Fatal(err)
	}
	cred, err := CredentialFromSecret("nolog/aso-credential", map[string]string{
		KeySubscriptionID: env.sub, KeyTenantID: env.e.TenantID(), KeyClientID: sp.ClientID, KeyClientSecret: sp.Secret})
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.client(t, cred).ActivityLog(ctx, env.sub, start, time.Now())
	var ae *ARMError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusForbidden {
		t.Errorf("log read without permission: %v, want a 403 ARMError", err)
	}
}

func TestActivityEventChanges(t *testing.T) {
	for op, want := range map[string]bool{
		"Microsoft.ServiceBus/namespaces/queues/write":            true,
		"Microsoft.Resources/subscriptions/resourceGroups/delete": true,
		"Microsoft.Storage/storageAccounts/regenerateKey/action":  true,
		"Microsoft.Storage/storageAccounts/listKeys/action":       false,
		"Microsoft.Web/sites/config/list/action":                  false,
		"Microsoft.Storage/storageAccounts/read":                  false,
	} {
		if got := (ActivityEvent{Operation: op}).Changes(); got != want {
			t.Errorf("%s: Changes() = %v, want %v", op, got, want)
		}
	}
}
