package aso

// ASO's pre-reconcile checks: kinds whose resource (or owner) rejects every
// PUT while it is in a transient state, so that ASO does not send one
// (api/containerservice, dbforpostgresql, documentdb and kusto
// customizations). Each check reads ARM's current view of the resource or
// owner, which stands for the status ASO keeps; PreReconcile does the GET.

func init() {
	register("containerservice.azure.com", "ManagedCluster").PreReconcile = managedClusterCheck
	ap := register("containerservice.azure.com", "ManagedClustersAgentPool")
	ap.PreReconcile = agentPoolCheck
	ap.PreReconcileOwner = agentPoolOwnerCheck
	register("dbforpostgresql.azure.com", "FlexibleServer").PreReconcile = flexibleServerCheck
	register("dbforpostgresql.azure.com", "FlexibleServersDatabase").PreReconcileOwner = flexibleServerOwnerCheck
	register("dbforpostgresql.azure.com", "FlexibleServersFirewallRule").PreReconcileOwner = flexibleServerOwnerCheck
	register("documentdb.azure.com", "DatabaseAccount").PreReconcile = databaseAccountCheck
	register("kusto.azure.com", "Cluster").PreReconcile = kustoClusterCheck
	register("kusto.azure.com", "Database").PreReconcileOwner = kustoDatabaseOwnerCheck
}

// The states in which a resource accepts a PUT; any other state blocks
// (ASO's nonBlocking*States sets, compared case-insensitively).
var (
	nonBlockingManagedClusterStates = []string{"succeeded", "failed", "canceled"}
	nonBlockingAgentPoolStates      = []string{"succeeded", "failed", "canceled"}
	nonBlockingFlexibleServerStates = []string{"succeeded", "failed", "canceled", "ready"}
	kustoClusterTerminalStates      = []string{"succeeded", "failed", "canceled"}
)

// ManagedClusterStateBlocks reports whether a managed cluster (or agent
// pool) in this provisioningState rejects a PUT.
func ManagedClusterStateBlocks(state string) bool {
	return stateBlocks(state, nonBlockingManagedClusterStates...)
}

// FlexibleServerStateBlocks reports whether a PostgreSQL flexible server in
// this state (properties.state: Ready, Stopped, Updating, ...) rejects a
// PUT of itself or its children.
func FlexibleServerStateBlocks(state string) bool {
	return stateBlocks(state, nonBlockingFlexibleServerStates...)
}

func provisioningState(status []byte) string {
	return stringAt(status, "properties", "provisioningState")
}

func managedClusterCheck(_ Target, status []byte) CheckResult {
	if s := provisioningState(status); ManagedClusterStateBlocks(s) {
		return block("Managed cluster is in provisioning state %q", s)
	}
	return proceed
}

func agentPoolCheck(_ Target, status []byte) CheckResult {
	if s := provisioningState(status); stateBlocks(s, nonBlockingAgentPoolStates...) {
		return block("Managed cluster agent pool is in provisioning state %q", s)
	}
	return proceed
}

func agentPoolOwnerCheck(t Target, owner []byte) CheckResult {
	if s := provisioningState(owner); ManagedClusterStateBlocks(s) {
		return block("Managed cluster %q is in provisioning state %q", t.OwnerName, s)
	}
	return proceed
}

func flexibleServerCheck(_ Target, status []byte) CheckResult {
	if s := stringAt(status, "properties", "state"); FlexibleServerStateBlocks(s) {
		return block("Flexible Server is in state %q", s)
	}
	return proceed
}

func flexibleServerOwnerCheck(_ Target, owner []byte) CheckResult {
	if s := stringAt(owner, "properties", "state"); FlexibleServerStateBlocks(s) {
		return block("Owning FlexibleServer is in state %q", s)
	}
	return proceed
}

func databaseAccountCheck(_ Target, status []byte) CheckResult {
	if s := provisioningState(status); s != "" && stateIs(s, "Deleting") {
		return block("reconcile blocked while account is at status deleting")
	}
	return proceed
}

func kustoClusterCheck(_ Target, status []byte) CheckResult {
	if s := provisioningState(status); stateBlocks(s, kustoClusterTerminalStates...) {
		return block("Cluster is in provisioning state %q", s)
	}
	return proceed
}

func kustoDatabaseOwnerCheck(_ Target, owner []byte) CheckResult {
	if s := provisioningState(owner); stateBlocks(s, kustoClusterTerminalStates...) {
		return block("Owning cluster is in provisioning state %q", s)
	}
	return proceed
}

func stateIs(state, want string) bool { return !stateBlocks(state, want) }
