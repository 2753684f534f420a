// Package emulator is an ARM + Entra ID emulator, faithful enough that gitaso's production code reaches it through
// exactly the path it uses for real Azure (azidentity credentials and an azcore ARM pipeline) with only the
// endpoints and the trusted CA changed. It serves, on one loopback HTTPS listener with an in-process CA:
//
//   - Entra ID: /{tenant}/v2.0/.well-known/openid-configuration, /{tenant}/oauth2/v2.0/token (client credentials
//     with a client secret or a workload identity client assertion), /{tenant}/oauth2/token (v1) and the keys.
//     Tokens are RS256 JWTs (v1 claims: tid, appid/azp, oid, aud, exp) signed by the emulator.
//   - Sign-in of people (OpenID Connect, signin.go): /{tenant}/oauth2/v2.0/authorize (authorization code flow,
//     PKCE S256 or plain) shows a sign-in form of the users of WithUsers (no password), and the token endpoint's
//     authorization_code grant returns a v2.0 ID token (iss SignInIssuer(), aud the client ID, pairwise sub, oid,
//     nonce, preferred_username, email, groups). AddSignInApplication registers the web application (client secret,
//     redirect URIs); errors carry Entra's AADSTS codes (50011 unregistered redirect URI, 501481 PKCE, 70008 a code
//     redeemed twice).
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
//     RBAC against role assignments with built-in roles under their real GUIDs, role assignment rules (one
//     assignment of a role to a principal at a scope: 409 RoleAssignmentExists), role assignments, locks and
//     policy assignments listed at a scope as ARM lists them (at, above and below it; $filter=atScope() at or
//     above; authzlist.go), throttling with ARM's token buckets, and a Resource Graph subset.
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
//   - a Notification Hubs namespace's RootManageSharedAccessKey rule and a notification hub's
//     DefaultFullSharedAccessSignature and DefaultListenSharedAccessSignature rules (exports_keys.go);
//   - a private endpoint's network interface {endpoint}.nic.{guid}, with a primary private address of the endpoint's
//     subnet, listed in the endpoint's properties.networkInterfaces and removed with it (exports_network.go).
//
// The key and credential actions ASO's exporters call answer with the bodies of the SDK clients' response types
// (exports_keys.go, exports_credentials.go): listKeys of App Configuration stores, Redis Enterprise databases, ML
// workspaces, Notification Hubs rules, Cognitive Services accounts, Event Grid topics, Redis caches, Cosmos DB
// accounts and SignalR; IoT hub listkeys; Log Analytics sharedKeys; API Management subscription listSecrets; Search
// listAdminKeys/listQueryKeys; AKS listClusterAdminCredential/listClusterUserCredential (base64 kubeconfigs); ARO
// listAdminCredentials/listCredentials. Keys are deterministic per emulator, resource and key name.
//
// Other singletons Azure creates with their parent (a SQL server's master database, a PostgreSQL or MySQL flexible
// server's databases and server parameters, a Cosmos DB account's built-in SQL role definitions, an event hub's
// $Default consumer group) are not modelled: ASO's recorded traffic shows none of them.
//
// Further: a deleted Key Vault (directly or with its resource group) stays soft-deleted under
// /subscriptions/{sub}/providers/Microsoft.KeyVault/locations/{location}/deletedVaults/{name} (GET, list, POST purge
// as a 202 LRO) and blocks a create of its name with 409 ConflictError unless createMode is recover, which restores
// it as it was (404 SoftDeletedVaultDoesNotExist when there is nothing to recover); a virtual network's subnets, a
// network security group's securityRules, a route table's routes and a load balancer's inboundNatRules are listed
// in the parent's properties (an empty list when there are none: ASO's hooks refuse a parent whose GET lacks the
// list), and a PUT of the parent makes its children exactly the ones its body lists. /resources and Resource Graph list tracked
// resources only (not subnets, rules or other proxy children).
//
// Data planes served under Azure's own host names by the emulator's HTTPS server (its certificate names them; a
// client dials the emulator for them with KeyVaultHTTPClient or through StartLoginProxy): Key Vault's keys
// (keyvault_keys.go) and secrets (keyvault_secrets.go, PutKeyVaultSecret) at {vault}.vault.azure.net, and App
// Configuration's key-values at {store}.azconfig.io (appconfig.go: GET /kv with the key= and label= filters and
// Link paging, GET and PUT /kv/{key}, PutAppConfigKeyValue; Entra tokens for https://azconfig.io, App
// Configuration Data Reader/Owner). The vault or store is created through ARM; their data live in memory only.
// Container registries (WithRegistry, acr.go) answer on listeners of their own and, through StartLoginProxy, under
// {registry}.azurecr.io, so a HelmRepository or OCIRepository URL written for Azure runs against the emulator as is.
//
// The behaviour ASO's per-kind hooks guard against (hooks*.go): an AKS cluster or agent pool whose provisioningState
// is not terminal refuses writes to itself and its pools (409 OperationNotAllowed), as do a PostgreSQL flexible
// server whose state is not Ready (409 ServerIsBusy, OperationNotAllowed when Stopped) for itself, its databases and
// firewall rules, a Kusto cluster in a non-terminal state for itself and its databases, and a Cosmos DB account
// being deleted (409 Conflict); a private endpoint's manual connections stay Pending until
// SetPrivateEndpointConnectionStatus approves them; a subnet keeps its read-only ipConfigurations across PUTs; a
// backup instance reports protectionStatus (POST {id}/sync clears a ProtectionError); an API Management product
// with subscriptions cannot be deleted without ?deleteSubscriptions=true (400 ValidationError); a subscription
// alias creates a subscription, and POST /subscriptions/{id}/providers/Microsoft.Subscription/cancel disables it.
// SetResourceProperties (PATCH /_admin/resource) puts any stored resource into the state a test needs.
//
// Azure Container Registry's data plane (acr.go): WithRegistry(name) serves a registry on its own loopback HTTPS
// listener (same CA; the certificate also names NAME.azurecr.io), whose login server is RegistryHost(name),
// "127.0.0.1:PORT". A registry needs a host of its own because OCI clients address a registry by host and reach
// /v2/ and the token realm at its root; a path prefix on the ARM listener would not do, and NAME.azurecr.io would
// need every client to resolve it. The OCI distribution API is go-containerregistry's pkg/registry (in memory,
// referrers on) behind ACR's authentication, as ACR documents it (Azure/acr docs/AAD-OAuth.md):
//
//   - GET /v2/ without credentials answers 401 with WWW-Authenticate: Bearer realm="https://HOST/oauth2/token",
//     service="HOST" (plus scope="repository:NAME:pull" on a repository request) and
//     {"errors":[{"code":"UNAUTHORIZED",...,"detail":[{"Type":...,"Name":...,"Action":...}]}]}.
//   - POST /oauth2/exchange (grant_type=access_token, service, tenant, access_token) takes an Entra ID token for ARM
//     issued by this emulator (checked as ARM checks it: signature, issuer, tenant, audience, expiry) and returns
//     {"refresh_token":...}, an ACR refresh token (3 hours). Anything but POST answers 404, as ACR does.
//   - /oauth2/token: POST grant_type=refresh_token (refresh_token, service, scope, repeated or space-separated) or
//     grant_type=password (username, password), or GET ?service=&scope= with basic credentials, returns
//     {"access_token":...} (75 minutes). Basic credentials are ACRTokenUsername (the null GUID) with an ACR refresh or
//     access token, as `az acr login --expose-token` hands them to docker and helm, or a service principal's client
//     ID and secret. The registry also takes those basic credentials directly on /v2/ requests.
//   - The access token's "access" claim holds, of the scopes asked for, what RBAC grants at the time of the request,
//     on the Microsoft.ContainerRegistry/registries resource of the registry's name when ARM holds one, else on the
//     default subscription: pull needs Microsoft.ContainerRegistry/registries/pull/read (AcrPull, AcrPush, Reader,
//     Contributor, Owner), push .../push/write (AcrPush, Contributor, Owner), delete .../artifacts/delete (AcrDelete,
//     Contributor, Owner); registry:catalog:* needs pull. A token without the scope a request needs, an expired or
//     foreign token, or another registry's token answers 401 UNAUTHORIZED with the challenge (error=
//     "insufficient_scope" or "invalid_token"). Anonymous pull, the admin user, repository-scoped tokens and ABAC
//     repository conditions are not modelled.
//
// Tests put content in a registry past authentication with PushOCI (any artifact) or PushHelmChart (a packaged
// chart, as `helm push` stores it, with HelmConfigMediaType and HelmChartLayerMediaType), and mint credentials with
// IssueRegistryRefreshToken. Registry content is in memory only, also with WithDataFile; /v2/_catalog lists
// repositories in no particular order and without pagination (go-containerregistry's registry; ACR sorts them).
//
// A general ARM client (the Azure CLI, generic `az resource` commands) finds what it relies on (cliextras.go):
// GET /metadata/endpoints, whose login endpoint is an ADFS authority at /adfs (as a disconnected Azure Stack Hub's
// is: MSAL validates no ADFS authority, so a CLI configured from the metadata signs in offline), instance discovery
// that names the tenant asked, a proxy for tools that must reach login.microsoftonline.com or
// {vault}.vault.azure.net (StartLoginProxy), subscriptions and lists showing what the caller may read,
// $filter on /resources and /resourcegroups, /locations, providers' resourceTypes and api-versions,
// checkNameAvailability, regenerateKey(s) with base64 keys, the tags/default extension, enforced management locks,
// and 400s for invalid names and locations. azcli_test.go drives Debian's azure-cli 2.45 through a whole session.
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
