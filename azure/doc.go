// Package azure is gitaso's access to Azure Resource Manager (ARM): the cloud
// configuration (endpoints and trusted CA), credentials scoped the way Azure
// Service Operator scopes them, and an ARM client built on azcore.
//
// # Cloud
//
// [LoadCloud] reads the cloud configuration file the emulator writes (or the
// public cloud when no file is named) and applies the GITASO_ARM_ENDPOINT,
// AZURE_AUTHORITY_HOST, GITASO_ARM_AUDIENCE and GITASO_CA_FILE overrides. Only
// endpoints change between clouds: tokens are always requested for the
// audience https://management.azure.com unless the file says otherwise.
//
// # Credentials
//
// A [Credential] is one Azure identity: a client secret, a client
// certificate, workload identity (a federated token file) or a managed
// identity. Its secret material is unexported and never printed: it
// implements [fmt.Formatter] and [slog.LogValuer] and shows only the
// subscription, tenant and client IDs.
//
//   - global: [CredentialFromEnv] (AZURE_SUBSCRIPTION_ID, AZURE_TENANT_ID,
//     AZURE_CLIENT_ID, then AZURE_CLIENT_SECRET, AZURE_CLIENT_CERTIFICATE or
//     AZURE_CLIENT_CERTIFICATE_PATH (+ AZURE_CLIENT_CERTIFICATE_PASSWORD),
//     workload identity (USE_WORKLOAD_IDENTITY_AUTH or AZURE_FEDERATED_TOKEN_FILE),
//     or managed identity).
//   - namespace: the Secret named aso-credential in the resource's namespace.
//   - resource: the Secret named by the serviceoperator.azure.com/credential-from
//     annotation, in the resource's own namespace.
//
// Which of these a resource uses (resource > namespace > global) is ASO's
// rule, aso.ChooseCredential, applied when the graph is built.
// [CredentialFromSecret] turns the chosen Secret's keys into a credential.
// Secrets come from the repository (workload-identity Secrets carry no
// secret material) and from a local credentials directory ([DirSecrets])
// holding <dir>/<namespace>/<secret-name>.env, .yaml, .yml or .json files,
// read again on every run.
//
// # Clients
//
// [NewClients] returns a cache of ARM clients: one azcore pipeline per
// credential (keyed by the credential's full content, so a rotated secret gets
// a new pipeline) and one client-side token-bucket rate limiter per
// subscription shared by every credential, sized just under ARM's own
// buckets and drained by the x-ms-ratelimit-remaining-subscription-* headers
// ARM returns. Provider auto-registration is off, api-version is set on each
// request, retries honour Retry-After, and long-running operations are
// polled to completion. [Client.With] gives one caller's calls their
// [CallOptions]: the share of concurrency they give back while an operation
// waits ([Slot]) and the function told where a started operation is polled
// (to resume it after a crash); they are arguments, never context values.
//
// Example:
//
//	cloud, err := azure.LoadCloud("")            // GITASO_CLOUD_CONFIG or public cloud
//	cred, err := azure.CredentialFromEnv()
//	clients := azure.NewClients(cloud, azure.DefaultOptions())
//	c, err := clients.For(cred)
//	body, err := c.Put(ctx, "/subscriptions/…/resourceGroups/rg", "2021-04-01", []byte(`{"location":"westeurope"}`))
//
// Failures from ARM are [*ARMError] values carrying ARM's own code and
// message, classified retryable or fatal the way ASO classifies them.
package azure
