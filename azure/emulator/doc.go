// Package emulator is an ARM + Entra ID emulator, faithful enough that gitaso's production code reaches it through
// exactly the path it uses for real Azure (azidentity credentials and an azcore ARM pipeline) with only the
// endpoints and the trusted CA changed. It serves, on one loopback HTTPS listener with an in-process CA:
//
//   - Entra ID: /{tenant}/v2.0/.well-known/openid-configuration, /{tenant}/oauth2/v2.0/token (client credentials
//     with a client secret or a workload identity client assertion), /{tenant}/oauth2/token (v1) and the keys.
//     Tokens are RS256 JWTs (v1 claims: tid, appid/azp, oid, aud, exp) signed by the emulator.
//   - Managed identity: the App Service protocol at /msi/token; point IDENTITY_ENDPOINT/IDENTITY_HEADER at
//     ManagedIdentityEndpoint(). Identities created through ARM (userAssignedIdentities, system-assigned identities)
//     are principals; a federatedIdentityCredentials child makes client assertions with that issuer/subject valid.
//   - Workload identity: the emulator is the OIDC issuer of every federated credential. IssueServiceAccountToken (or
//     POST /_admin/serviceaccounttoken) mints the token a cluster would project, with any issuer string, signed by
//     the emulator's service-account key; assertions signed by anything else are rejected.
//   - ARM: a generic resource store for any provider and type (resource groups, nested children, subscription- and
//     tenant-level resources, extension resources under any scope), PUT/PATCH/GET/HEAD/DELETE/list/listKeys, ARM's
//     error codes (401 token codes, 403 AuthorizationFailed, api-version, parent and location checks), LROs
//     (Azure-AsyncOperation for PUT, Location for DELETE, Retry-After plus retry-after-ms) with per-type latency,
//     RBAC against role assignments with built-in roles under their real GUIDs, role assignment rules, throttling
//     with ARM's token buckets, and a Resource Graph subset.
//   - Faults (WithFaults, SetFaults, PUT /_admin/faults): 429/500/503 answers, connection resets before the
//     request is served and resets after it was served (the write took effect, no response was sent), latency,
//     provisioning failures.
//   - Admin API under /_admin (loopback clients presenting AdminToken() in X-Admin-Token): faults, latency,
//     throttling, stats, request log, principals, role assignments, service-account tokens.
//
// Types that real ARM answers synchronously (resource groups, role assignments and definitions, user-assigned
// identities and federated credentials) answer 200/201 at once, with a relative Location header on 201; all other
// PUTs answer 201/200 with provisioningState Accepted and an Azure-AsyncOperation header, and move to
// Creating/Updating and then Succeeded (or Failed with a provisioning fault) over the type's latency. DELETE answers
// 202 with Location; a resource group delete cascades to every child and extension resource.
//
// Real ARM's own side effects that clients depend on are modelled. Children created with their parent (listed by
// the parent's child collection, not by /resources or Resource Graph, removed with the parent):
//
//   - a Service Bus or Event Hubs namespace's RootManageSharedAccessKey rule (listKeys answers with keys and sb://
//     connection strings, EntityPath for entity rules);
//   - a storage account's blobServices/default, fileServices/default, queueServices/default and
//     tableServices/default, as its kind has them (StorageV2 and Storage all four, BlobStorage and BlockBlobStorage
//     blob, FileStorage file), with the bodies Azure returns (blob and file services show the account's sku; none
//     has provisioningState or systemData). A PUT of one answers 200 and keeps the properties its body omits, as
//     Set Service Properties does; a data file without them gets them on load.
//
// Other singletons Azure creates with their parent (a SQL server's master database, a PostgreSQL or MySQL flexible
// server's databases and server parameters, a Cosmos DB account's built-in SQL role definitions, an event hub's
// $Default consumer group) are not modelled: ASO's recorded traffic shows none of them.
//
// Further: a deleted Key Vault (directly or with its resource group) stays soft-deleted under
// /subscriptions/{sub}/providers/Microsoft.KeyVault/locations/{location}/deletedVaults/{name} (GET, list, POST purge
// as a 202 LRO) and blocks a create of its name with 409 ConflictError unless createMode is recover, which restores
// it as it was (404 SoftDeletedVaultDoesNotExist when there is nothing to recover); a virtual network's subnets, a
// network security group's securityRules and a route table's routes are listed in the parent's properties, and a
// PUT of the parent makes its children exactly the ones its body lists. /resources and Resource Graph list tracked
// resources only (not subnets, rules or other proxy children).
//
// State is in memory; WithDataFile (the command's --data) keeps it, including keys and the CA, in a JSON file
// written atomically shortly after each change and on Close.
//
// Example:
//
//	e, err := emulator.New()
//	if err != nil { ... }
//	defer e.Close()
//	sp, _ := e.AddServicePrincipal("ci")
//	_ = e.AssignRole(sp.ObjectID, "Owner", "/subscriptions/"+e.SubscriptionID())
//	cred, _ := azidentity.NewClientSecretCredential(e.TenantID(), sp.ClientID, sp.Secret, &azidentity.ClientSecretCredentialOptions{
//		ClientOptions: azcore.ClientOptions{Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: e.AuthorityHost(), ...},
//			Transport: e.HTTPClient()},
//		DisableInstanceDiscovery: true,
//	})
package emulator
