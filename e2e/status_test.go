package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
)

// wantCond checks a stored Ready condition's status, severity and reason,
// and that its message contains every fragment.
func wantCond(t *testing.T, what string, c record.Condition, status, severity, reason string, fragments ...string) {
	t.Helper()
	if c.Type != record.ConditionReady || c.Status != status || c.Severity != severity || c.Reason != reason {
		t.Errorf("%s: %s/%s/%s %q, want %s/%s/%s", what, c.Status, c.Severity, c.Reason, c.Message, status, severity, reason)
		return
	}
	for _, f := range fragments {
		if !strings.Contains(c.Message, f) {
			t.Errorf("%s: message %q does not contain %q", what, c.Message, f)
		}
	}
	if strings.Contains(c.Message, "UnknownError") {
		t.Errorf("%s: message %q", what, c.Message)
	}
	if c.LastTransitionTime.IsZero() || c.ObservedGeneration == 0 {
		t.Errorf("%s: lastTransitionTime %v, observedGeneration %d", what, c.LastTransitionTime, c.ObservedGeneration)
	}
}

// An owner whose PUT is denied: the owner carries ARM's AuthorizationFailed
// (Warning, ARM's message), its child WaitingForOwner without a request of
// its own. Once the role is granted the next run retries and both become
// Ready. observedGeneration follows the manifest, lastTransitionTime the
// status.
func TestStatusOwnerDeniedThenGranted(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnv(t)
	team, err := e.emu.AddServicePrincipal("team-c")
	if err != nil {
		t.Fatal(err)
	}
	manifests := `
apiVersion: v1
kind: Secret
metadata:
  name: aso-credential
  namespace: team-c
stringData:
  AZURE_SUBSCRIPTION_ID: __SUB__
  AZURE_TENANT_ID: ` + e.emu.TenantID() + `
  AZURE_CLIENT_ID: ` + team.ClientID + `
  AZURE_CLIENT_SECRET: ` + team.Secret + `
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: team-c-rg
  namespace: team-c
spec:
  location: westeurope
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: team-c-identity
  namespace: team-c
spec:
  location: westeurope
  owner:
    name: team-c-rg
`
	e.commit("team-c", map[string]string{"team-c.yaml": manifests})
	rgID := e.rgID("team-c-rg")
	uaiID := rgID + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-c-identity"
	e.emu.ResetStats()
	rep := e.run(false)
	if rep.Run.Outcome != record.OutcomeFailed {
		t.Errorf("outcome %s, want failed", rep.Run.Outcome)
	}
	rg := e.resource("team-c", rgGroup, "ResourceGroup", "team-c-rg")
	uai := e.resource("team-c", uaiGroup, "UserAssignedIdentity", "team-c-identity")
	wantCond(t, "denied group", rg.Ready, record.StatusFalse, record.SeverityWarning, "AuthorizationFailed",
		team.ObjectID, "Microsoft.Resources/subscriptions/resourceGroups/write")
	wantCond(t, "identity", uai.Ready, record.StatusFalse, record.SeverityWarning, "WaitingForOwner",
		"team-c/ResourceGroup/team-c-rg", firstLineOf(rg.Ready.Message))
	if w := e.writes(); len(w) != 1 || w[0] != "PUT "+strings.ToLower(rgID) {
		t.Errorf("writes %v, want only the denied PUT of the group", w)
	}
	since := rg.Ready.LastTransitionTime

	// The same commit again: still failing, same transition time.
	waitNextSecond()
	e.run(false)
	rg = e.resource("team-c", rgGroup, "ResourceGroup", "team-c-rg")
	if rg.Ready.Reason != "AuthorizationFailed" || !rg.Ready.LastTransitionTime.Equal(since) {
		t.Errorf("unchanged manifest, same failure: %+v, want lastTransitionTime %v", rg.Ready, since)
	}

	// Granted: the next run retries and both become Ready.
	if err := e.emu.AssignRole(team.ObjectID, "Contributor", "/subscriptions/"+e.sub); err != nil {
		t.Fatal(err)
	}
	e.emu.ResetStats()
	rep = e.run(false)
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("after the grant: %s %s", rep.Run.Outcome, rep.Run.Error)
	}
	rg = e.resource("team-c", rgGroup, "ResourceGroup", "team-c-rg")
	uai = e.resource("team-c", uaiGroup, "UserAssignedIdentity", "team-c-identity")
	wantCond(t, "group after the grant", rg.Ready, record.StatusTrue, "", "Succeeded")
	wantCond(t, "identity after the grant", uai.Ready, record.StatusTrue, "", "Succeeded")
	if !rg.Ready.LastTransitionTime.After(since) {
		t.Errorf("lastTransitionTime %v did not move on False → True (was %v)", rg.Ready.LastTransitionTime, since)
	}
	if w := e.writes(); len(w) != 2 || w[0] != "PUT "+strings.ToLower(rgID) || w[1] != "PUT "+strings.ToLower(uaiID) {
		t.Errorf("writes %v, want the group's then the identity's PUT", w)
	}

	// A manifest change: the status (True) and so its transition time do
	// not move.
	readySince := rg.Ready.LastTransitionTime
	waitNextSecond()
	e.commit("tag", map[string]string{"team-c.yaml": strings.Replace(manifests, "  location: westeurope\n---", "  location: westeurope\n  tags: {team: c}\n---", 1)})
	e.run(false)
	rg = e.resource("team-c", rgGroup, "ResourceGroup", "team-c-rg")
	if rg.Ready.Status != record.StatusTrue || !rg.Ready.LastTransitionTime.Equal(readySince) {
		t.Errorf("changed group: %+v, want True since %v", rg.Ready, readySince)
	}
}

// observedGeneration counts manifest changes: a failed PUT retried with the
// same manifest, a skip resource read again, and a successful run with no
// change keep it; a manifest change moves it by one.
func TestStatusObservedGeneration(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnv(t)
	const msg = "The resource operation failed (injected)."
	e.emu.SetFaults(emulator.Faults{ProvisioningFailures: []emulator.ProvisioningFailure{{Match: "/resourceGroups/failing-rg", Code: "Conflict", Message: msg}}})
	rgs := func(tag string) string {
		return `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: failing-rg
  namespace: platform
spec:
  location: westeurope
  tags: {v: "` + tag + `"}
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: observed-rg
  namespace: platform
  annotations:
    serviceoperator.azure.com/reconcile-policy: skip
spec:
  location: westeurope
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: steady-rg
  namespace: platform
spec:
  location: westeurope
`
	}
	e.mustPut(e.rgID("observed-rg"), rgAPI, `{"location":"westeurope"}`)
	e.commit("gen", map[string]string{"rgs.yaml": rgs("1")})
	gens := func() map[string]int64 {
		out := map[string]int64{}
		for _, n := range []string{"failing-rg", "observed-rg", "steady-rg"} {
			r := e.resource("platform", rgGroup, "ResourceGroup", n)
			if r.Ready.ObservedGeneration != r.Generation {
				t.Errorf("%s: observedGeneration %d, generation %d", n, r.Ready.ObservedGeneration, r.Generation)
			}
			out[n] = r.Ready.ObservedGeneration
		}
		return out
	}
	e.run(false)
	wantCond(t, "failing group", e.resource("platform", rgGroup, "ResourceGroup", "failing-rg").Ready, record.StatusFalse, record.SeverityWarning, "Conflict", msg)
	first := gens()
	for n, g := range first {
		if g != 1 {
			t.Errorf("%s: generation %d after the first run, want 1", n, g)
		}
	}
	e.run(false)
	e.run(true)
	if again := gens(); again["failing-rg"] != 1 || again["observed-rg"] != 1 || again["steady-rg"] != 1 {
		t.Errorf("generations after two runs without a change: %v, want all 1", again)
	}
	e.emu.SetFaults(emulator.Faults{})
	e.commit("gen 2", map[string]string{"rgs.yaml": rgs("2")})
	e.run(false)
	if now := gens(); now["failing-rg"] != 2 || now["observed-rg"] != 1 || now["steady-rg"] != 1 {
		t.Errorf("generations after changing failing-rg: %v, want 2, 1, 1", now)
	}
	if c := e.resource("platform", rgGroup, "ResourceGroup", "failing-rg").Ready; c.Status != record.StatusTrue {
		t.Errorf("failing-rg after the fix: %+v", c)
	}
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// A resource whose producer failed: ConfigMapNotFound for a config map
// value, SecretNotFound for a secret, ReferenceNotFound for a referenced
// resource. The producer itself carries ARM's code and message. Removing
// the fault, the next run applies everything.
func TestStatusProducerFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnvWith(t, envOptions{emulator: []emulator.Option{emulator.WithDefaultLatency(20 * time.Millisecond), emulator.WithPollInterval(5 * time.Millisecond)}})
	manifests := `
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: app-identity
  namespace: platform
spec:
  location: westeurope
  owner:
    name: platform-rg
  operatorSpec:
    configMaps:
      principalId: {name: app-identity-settings, key: principalId}
---
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: app-reader
  namespace: platform
spec:
  owner:
    name: platform-rg
    group: resources.azure.com
    kind: ResourceGroup
  principalIdFromConfig: {name: app-identity-settings, key: principalId}
  roleDefinitionReference:
    wellKnownName: Reader
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: appdata
  namespace: platform
spec:
  location: westeurope
  kind: StorageV2
  sku: {name: Standard_LRS}
  owner:
    name: platform-rg
  operatorSpec:
    configMaps:
      blobEndpoint: {name: appdata-settings, key: blobEndpoint}
    secrets:
      key1: {name: appdata-keys, key: key1}
---
apiVersion: sql.azure.com/v1api20211101
kind: Server
metadata:
  name: appsql
  namespace: platform
spec:
  location: westeurope
  owner:
    name: platform-rg
  administratorLogin: sqladmin
  administratorLoginPassword: {name: appdata-keys, key: key1}
  version: "12.0"
---
apiVersion: network.azure.com/v1api20240301
kind: NetworkSecurityGroup
metadata:
  name: app-nsg
  namespace: platform
spec:
  location: westeurope
  owner:
    name: platform-rg
---
apiVersion: network.azure.com/v1api20240301
kind: VirtualNetwork
metadata:
  name: app-vnet
  namespace: platform
spec:
  location: westeurope
  owner:
    name: platform-rg
  addressSpace:
    addressPrefixes: [10.0.0.0/16]
---
apiVersion: network.azure.com/v1api20240301
kind: VirtualNetworksSubnet
metadata:
  name: app-subnet
  namespace: platform
spec:
  owner:
    name: app-vnet
  addressPrefix: 10.0.0.0/24
  networkSecurityGroup:
    reference: {name: app-nsg, group: network.azure.com, kind: NetworkSecurityGroup}
`
	const msg = "Deployment failed: capacity in westeurope is exhausted (injected)."
	e.emu.SetFaults(emulator.Faults{ProvisioningFailures: []emulator.ProvisioningFailure{
		{Match: "/userAssignedIdentities/app-identity", Code: "ResourceOperationFailure", Message: msg},
		{Match: "/storageAccounts/appdata", Code: "StorageAccountOperationFailed", Message: msg},
		{Match: "/networkSecurityGroups/app-nsg", Code: "NetworkSecurityGroupOperationFailed", Message: msg},
	}})
	e.commit("app", map[string]string{"rgs.yaml": platformRG, "app.yaml": manifests})
	e.emu.ResetStats()
	rep := e.run(false)
	if rep.Run.Outcome != record.OutcomePartial {
		t.Errorf("outcome %s, want partial", rep.Run.Outcome)
	}
	// The producers: ARM's code (retryable: Warning) and ARM's message, from
	// a synchronous 400 (identity) and from failed long-running operations.
	for _, p := range [][3]string{
		{uaiGroup, "UserAssignedIdentity", "app-identity"},
		{"storage.azure.com", "StorageAccount", "appdata"},
		{"network.azure.com", "NetworkSecurityGroup", "app-nsg"},
	} {
		r := e.resource("platform", p[0], p[1], p[2])
		code := map[string]string{"app-identity": "ResourceOperationFailure", "appdata": "StorageAccountOperationFailed", "app-nsg": "NetworkSecurityGroupOperationFailed"}[p[2]]
		wantCond(t, p[2], r.Ready, record.StatusFalse, record.SeverityWarning, code, msg)
	}
	ra := e.resource("platform", raGroup, "RoleAssignment", "app-reader")
	wantCond(t, "role assignment", ra.Ready, record.StatusFalse, record.SeverityWarning, "ConfigMapNotFound", "platform/UserAssignedIdentity/app-identity", msg)
	sql := e.resource("platform", "sql.azure.com", "Server", "appsql")
	wantCond(t, "sql server", sql.Ready, record.StatusFalse, record.SeverityWarning, "SecretNotFound", "platform/StorageAccount/appdata", msg)
	subnet := e.resource("platform", "network.azure.com", "VirtualNetworksSubnet", "app-subnet")
	wantCond(t, "subnet", subnet.Ready, record.StatusFalse, record.SeverityWarning, "ReferenceNotFound", "platform/NetworkSecurityGroup/app-nsg", msg)
	if vnet := e.resource("platform", "network.azure.com", "VirtualNetwork", "app-vnet"); vnet.Ready.Status != record.StatusTrue {
		t.Errorf("vnet: %+v", vnet.Ready)
	}
	for _, w := range e.writes() {
		for _, blocked := range []string{"/roleassignments/", "/microsoft.sql/", "/subnets/"} {
			if strings.Contains(w, blocked) {
				t.Errorf("blocked resource was sent: %s", w)
			}
		}
	}

	// Fault removed: the next run (same commit) applies everything.
	e.emu.SetFaults(emulator.Faults{})
	rep = e.run(false)
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("after the fix: %s %s", rep.Run.Outcome, rep.Run.Error)
	}
	rs, _ := e.db.Resources(record.Filter{})
	for _, r := range rs {
		if r.Ready.Status != record.StatusTrue || r.Ready.Severity != "" || r.Ready.Reason != "Succeeded" {
			t.Errorf("%s after the fix: %+v", r.Key(), r.Ready)
		}
	}
}

// An owner given by ARM ID in another subscription than the credential's:
// refused before anything is sent, with ASO's SubscriptionMismatch, as
// validate and plan say it.
func TestStatusSubscriptionMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnv(t)
	const other = "00000000-0000-4000-8000-000000000001"
	e.commit("other", map[string]string{"other.yaml": `
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: elsewhere
  namespace: platform
spec:
  location: westeurope
  owner:
    armId: /subscriptions/` + other + `/resourceGroups/elsewhere-rg
`})
	e.emu.ResetStats()
	rep, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "test"})
	if !errors.Is(err, reconcile.ErrRefused) || rep.Run.Outcome != record.OutcomeRefused {
		t.Fatalf("outcome %s, err %v, want refused", rep.Run.Outcome, err)
	}
	for _, want := range []string{"other.yaml:", "spec.owner.armId", "SubscriptionMismatch", other, e.sub} {
		if !strings.Contains(rep.Run.Error, want) {
			t.Errorf("error lacks %q: %s", want, rep.Run.Error)
		}
	}
	if got := e.armRequests(); len(got) != 0 {
		t.Errorf("requests %v, want none", got)
	}
}

// ARM's own error code is the reason: Error severity for the codes ASO
// treats as fatal, Warning with ARM's retry time for the others; the message
// is ARM's. The next run after the cause is gone succeeds.
func TestStatusARMErrorCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	// The emulator's 429s ask for a wait of its poll interval (30 s here),
	// beyond the client's MaxRetryDelay: the client does not wait and the
	// executor reports the retry time. 500s are retried once, at once.
	e := newEnvWith(t, envOptions{
		emulator: []emulator.Option{emulator.WithPollInterval(30 * time.Second)},
		client: func(o *azure.Options) {
			o.Retry.MaxRetries, o.Retry.RetryDelay, o.Retry.MaxRetryDelay = 1, time.Millisecond, time.Second
		},
	})
	rg := func(name string) string {
		return "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: " + name +
			"\n  namespace: platform\nspec:\n  location: westeurope\n---\n"
	}
	child := `
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: fatal-child
  namespace: platform
spec:
  location: westeurope
  owner:
    name: fatal-rg
`
	const locMsg = "The location property is required for this definition."
	e.emu.SetFaults(emulator.Faults{ProvisioningFailures: []emulator.ProvisioningFailure{{Match: "/resourceGroups/fatal-rg", Code: "LocationRequired", Message: locMsg}}})
	e.commit("fatal", map[string]string{"fatal.yaml": rg("fatal-rg") + child})
	rep := e.run(false)
	if retry, _ := rep.Result.Retry(); retry {
		t.Error("a fatal error (and its waiting child) reported as worth retrying")
	}
	fatal := e.resource("platform", rgGroup, "ResourceGroup", "fatal-rg")
	wantCond(t, "fatal group", fatal.Ready, record.StatusFalse, record.SeverityError, "LocationRequired", locMsg)
	if strings.Contains(fatal.Ready.Message, "retry") {
		t.Errorf("a fatal error promises a retry: %q", fatal.Ready.Message)
	}
	wantCond(t, "child of the fatal group", e.resource("platform", uaiGroup, "UserAssignedIdentity", "fatal-child").Ready,
		record.StatusFalse, record.SeverityWarning, "WaitingForOwner", "platform/ResourceGroup/fatal-rg", locMsg)

	// Throttled beyond the client's patience: Warning, ARM's code and
	// message, and the retry time ARM asked for.
	e.emu.SetFaults(emulator.Faults{Rate429: 1, Methods: []string{http.MethodPut}})
	e.commit("throttled", map[string]string{"throttled.yaml": rg("throttled-rg")})
	rep = e.run(false)
	if retry, after := rep.Result.Retry(); !retry || after != 30*time.Second {
		t.Errorf("throttled run: retry %v after %s, want a retry after 30s", retry, after)
	}
	wantCond(t, "throttled group", e.resource("platform", rgGroup, "ResourceGroup", "throttled-rg").Ready,
		record.StatusFalse, record.SeverityWarning, "SubscriptionRequestsThrottled", "Number of requests exceeded the limit", "retry after 30s")

	// A server error: Warning, ARM's code and message.
	e.emu.SetFaults(emulator.Faults{Rate500: 1, Methods: []string{http.MethodPut}})
	e.commit("broken", map[string]string{"broken.yaml": rg("broken-rg")})
	rep = e.run(false)
	if retry, _ := rep.Result.Retry(); !retry {
		t.Error("a run with 500s reported as not worth retrying")
	}
	wantCond(t, "group hit by 500s", e.resource("platform", rgGroup, "ResourceGroup", "broken-rg").Ready,
		record.StatusFalse, record.SeverityWarning, "InternalServerError", "Encountered internal server error.")

	// All causes gone: the next run retries every failed resource.
	e.emu.SetFaults(emulator.Faults{})
	rep = e.run(false)
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("after the faults: %s %s", rep.Run.Outcome, rep.Run.Error)
	}
	rs, _ := e.db.Resources(record.Filter{})
	if len(rs) != 4 {
		t.Errorf("%d resources in state, want 4", len(rs))
	}
	for _, r := range rs {
		if r.Ready.Status != record.StatusTrue {
			t.Errorf("%s after the faults: %+v", r.Key(), r.Ready)
		}
	}
}

// A fatal error that comes from ARM's own rules rather than an injected
// fault: a role assignment's principal cannot change in place
// (RoleAssignmentUpdateNotPermitted, Error). A principal that does not exist
// is retried (PrincipalNotFound, Warning: Entra ID replication may be late).
func TestStatusRoleAssignmentErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnv(t)
	a, err := e.emu.AddServicePrincipal("principal-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.emu.AddServicePrincipal("principal-b")
	if err != nil {
		t.Fatal(err)
	}
	ra := func(principal string) string {
		return `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: reader
  namespace: platform
spec:
  owner:
    name: platform-rg
    group: resources.azure.com
    kind: ResourceGroup
  principalId: ` + principal + `
  roleDefinitionReference:
    wellKnownName: Reader
`
	}
	e.commit("ra", map[string]string{"rgs.yaml": platformRG, "ra.yaml": ra(a.ObjectID)})
	if rep := e.run(false); rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("%s %s", rep.Run.Outcome, rep.Run.Error)
	}
	e.commit("change principal", map[string]string{"ra.yaml": ra(b.ObjectID)})
	e.run(false)
	r := e.resource("platform", raGroup, "RoleAssignment", "reader")
	wantCond(t, "changed principal", r.Ready, record.StatusFalse, record.SeverityError, "RoleAssignmentUpdateNotPermitted",
		"principal ID, and scope are not allowed to be updated")

	e.commit("unknown principal", map[string]string{"ra.yaml": strings.Replace(ra("99999999-0000-4000-8000-000000000000"), "name: reader", "name: ghost-reader", 1)})
	e.run(false)
	r = e.resource("platform", raGroup, "RoleAssignment", "ghost-reader")
	wantCond(t, "unknown principal", r.Ready, record.StatusFalse, record.SeverityWarning, "PrincipalNotFound", "99999999000040008000000000000000 does not exist in the directory")
}

// A failure that is not ARM's (here Entra ID refusing a wrong client secret)
// is the catch-all Failed, with the real cause as message and no secret.
func TestStatusFailedCatchAll(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	e := newEnv(t)
	sp, err := e.emu.AddServicePrincipal("team-d")
	if err != nil {
		t.Fatal(err)
	}
	const wrong = "not-the-secret-0123456789"
	e.commit("team-d", map[string]string{"team-d.yaml": `
apiVersion: v1
kind: Secret
metadata:
  name: aso-credential
  namespace: team-d
stringData:
  AZURE_SUBSCRIPTION_ID: __SUB__
  AZURE_TENANT_ID: ` + e.emu.TenantID() + `
  AZURE_CLIENT_ID: ` + sp.ClientID + `
  AZURE_CLIENT_SECRET: ` + wrong + `
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: team-d-rg
  namespace: team-d
spec:
  location: westeurope
`})
	e.emu.ResetStats()
	e.run(false)
	r := e.resource("team-d", rgGroup, "ResourceGroup", "team-d-rg")
	wantCond(t, "group", r.Ready, record.StatusFalse, record.SeverityWarning, "Failed",
		"authentication failed", "AADSTS7000215: Invalid client secret provided", sp.ClientID)
	if strings.Contains(r.Ready.Message, "\n") {
		t.Errorf("multi-line message: %q", r.Ready.Message)
	}
	if strings.Contains(r.Ready.Message, wrong) || strings.Contains(r.Ready.Message, sp.Secret) {
		t.Errorf("secret in the message: %q", r.Ready.Message)
	}
	if got := e.armRequests(); len(got) != 0 {
		t.Errorf("ARM requests %v, want none without a token", got)
	}
}
