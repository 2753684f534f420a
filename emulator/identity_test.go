package emulator_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/gitaso/gitaso/emulator"
)

// TestWorkloadIdentityOnboarding is the onboarding flow of the seeds: the platform team creates a team identity, a
// federated credential and role assignments through ARM; the team then deploys with its own (federated) credential.
func TestWorkloadIdentityOnboarding(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	platform, _ := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "platform"},
		Roles: []emulator.RoleGrant{{Role: "Contributor"}, {Role: "User Access Administrator"}}})
	pc := newClient(t, e, secretCred(t, e, platform), -1)
	infra, teamRG, otherRG := rgPath(e, "infra"), rgPath(e, "team-a"), rgPath(e, "team-b")
	for _, rg := range []string{infra, teamRG, otherRG} {
		if r := pc.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "uksouth"}); r.status != 201 {
			t.Fatalf("RG: %d %s", r.status, r.raw)
		}
	}
	uai := infra + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-a-mi"
	r := pc.do(http.MethodPut, uai, miAPI, map[string]any{"location": "uksouth"})
	clientID, principalID := r.str("properties", "clientId"), r.str("properties", "principalId")
	if r.status != 201 || clientID == "" || principalID == "" || r.str("properties", "tenantId") != e.TenantID() {
		t.Fatalf("identity: %d %s", r.status, r.raw)
	}
	issuer := "https://uksouth.oic.prod-aks.azure.com/tenant/cluster/"
	subject := "system:serviceaccount:team-a:default"
	if r := pc.do(http.MethodPut, uai+"/federatedIdentityCredentials/team-a-fic", miAPI, map[string]any{"properties": map[string]any{
		"issuer": issuer, "subject": subject, "audiences": []any{"api://AzureADTokenExchange"}}}); r.status != 201 {
		t.Fatalf("fic: %d %s", r.status, r.raw)
	}
	ra := teamRG + "/providers/Microsoft.Authorization/roleAssignments/" + "0d2c1c8e-1111-4222-8333-444455556666"
	if r := pc.do(http.MethodPut, ra, authzAPI, map[string]any{"properties": map[string]any{"principalId": principalID,
		"roleDefinitionId": "/subscriptions/" + e.SubscriptionID() + "/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"}}); r.status != 201 {
		t.Fatalf("role assignment: %d %s", r.status, r.raw)
	}

	// Team credential: a WorkloadIdentityCredential reading the projected token file.
	tokFile := filepath.Join(t.TempDir(), "token")
	sa, err := e.IssueServiceAccountToken(issuer, subject)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokFile, []byte(sa), 0o600); err != nil {
		t.Fatal(err)
	}
	wic, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
		ClientOptions: clientOptions(e), ClientID: clientID, TenantID: e.TenantID(), TokenFilePath: tokFile, DisableInstanceDiscovery: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	team := newClient(t, e, wic, -1)
	sa1 := teamRG + "/providers/Microsoft.Storage/storageAccounts/teamasa"
	if _, err := team.putAndWait(sa1, storageAPI, map[string]any{"location": "uksouth"}); err != nil {
		t.Fatalf("team deploys into its RG: %v", err)
	}
	if r := team.do(http.MethodPut, otherRG+"/providers/Microsoft.Storage/storageAccounts/teambsa", storageAPI, map[string]any{"location": "uksouth"}); r.status != 403 || r.code() != "AuthorizationFailed" {
		t.Fatalf("team outside its RG: %d %s", r.status, r.raw)
	}
	if log := e.RequestLog(); log[len(log)-1].Principal != principalID {
		t.Errorf("request log principal = %q, want %q", log[len(log)-1].Principal, principalID)
	}

	// An assertion with the wrong subject is refused by the token endpoint.
	badCred, err := azidentity.NewClientAssertionCredential(e.TenantID(), clientID, func(context.Context) (string, error) {
		return e.IssueServiceAccountToken(issuer, "system:serviceaccount:team-b:default")
	}, &azidentity.ClientAssertionCredentialOptions{ClientOptions: clientOptions(e), DisableInstanceDiscovery: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = badCred.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{emulator.ARMAudience + "/.default"}})
	var af *azidentity.AuthenticationFailedError
	if !errors.As(err, &af) || !strings.Contains(err.Error(), "AADSTS70021") {
		t.Fatalf("wrong subject: %v", err)
	}
	// A secret is refused for a managed identity, and a wrong secret for a service principal.
	badSecret, _ := azidentity.NewClientSecretCredential(e.TenantID(), platform.ClientID, "wrong", &azidentity.ClientSecretCredentialOptions{ClientOptions: clientOptions(e), DisableInstanceDiscovery: true})
	if _, err := badSecret.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{emulator.ARMAudience + "/.default"}}); err == nil || !strings.Contains(err.Error(), "AADSTS7000215") {
		t.Fatalf("wrong secret: %v", err)
	}

	// Deleting the federated credential revokes the federation.
	if r := pc.do(http.MethodDelete, uai+"/federatedIdentityCredentials/team-a-fic", miAPI, nil); r.status != 200 {
		t.Fatalf("delete fic: %d", r.status)
	}
	fresh, _ := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
		ClientOptions: clientOptions(e), ClientID: clientID, TenantID: e.TenantID(), TokenFilePath: tokFile, DisableInstanceDiscovery: true,
	})
	if _, err := fresh.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{emulator.ARMAudience + "/.default"}}); err == nil {
		t.Fatal("token issued after the federated credential was deleted")
	}
}

// TestManagedIdentity uses the App Service protocol (IDENTITY_ENDPOINT/IDENTITY_HEADER); not parallel (t.Setenv).
func TestManagedIdentity(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	rg := rgPath(e, "rg-mi")
	c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2"})
	r := c.do(http.MethodPut, rg+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/app", miAPI, map[string]any{"location": "westus2"})
	clientID, principalID := r.str("properties", "clientId"), r.str("properties", "principalId")
	if err := e.AssignRole(principalID, "Reader", rg); err != nil {
		t.Fatal(err)
	}
	ep, hdr := e.ManagedIdentityEndpoint()
	t.Setenv("IDENTITY_ENDPOINT", ep)
	t.Setenv("IDENTITY_HEADER", hdr)
	mic, err := azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ClientOptions: clientOptions(e), ID: azidentity.ClientID(clientID)})
	if err != nil {
		t.Fatal(err)
	}
	mc := newClient(t, e, mic, -1)
	if r := mc.do(http.MethodGet, rg, rgAPI, nil); r.status != 200 {
		t.Fatalf("managed identity read: %d %s", r.status, r.raw)
	}
	if r := mc.do(http.MethodPut, rgPath(e, "mi-denied"), rgAPI, map[string]any{"location": "westus2"}); r.status != 403 {
		t.Fatalf("managed identity write: %d", r.status)
	}
	// System-assigned identity on a resource becomes a principal too.
	r = c.do(http.MethodPut, rg+"/providers/Microsoft.ServiceBus/namespaces/sysmi-ns", "2024-01-01", map[string]any{"location": "westus2", "identity": map[string]any{"type": "SystemAssigned"}})
	sysPID := r.str("identity", "principalId")
	if sysPID == "" || r.str("identity", "tenantId") != e.TenantID() {
		t.Fatalf("system identity: %s", r.raw)
	}
	if err := e.AssignRole(sysPID, "Reader", rg); err != nil {
		t.Fatalf("assign to system identity: %v", err)
	}
	// User-assigned identity references get their IDs filled.
	uaiID := rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/app"
	r = c.do(http.MethodPut, rg+"/providers/Microsoft.ServiceBus/namespaces/uami-ns", "2024-01-01", map[string]any{"location": "westus2",
		"identity": map[string]any{"type": "UserAssigned", "userAssignedIdentities": map[string]any{uaiID: map[string]any{}}}})
	if got := jsonString(r.body["identity"]); !strings.Contains(got, clientID) {
		t.Fatalf("user-assigned identity not filled: %s", got)
	}
}
