// Package examples holds runnable example repositories of ASO v2 manifests for gitaso, and the tests
// that keep them valid. It has no Go API.
//
//   - onboarding/: the platform-team onboarding scenario of shared/seeds: a platform namespace with a
//     subscription-wide credential creates a team's identity, federated credential, resource group and role
//     assignments; the team's namespace, with its own workload-identity credential, creates a Service Bus
//     queue/topic/subscription, a PostgreSQL database and a storage account. Environment values are Flux
//     post-build substitution variables (${SUBSCRIPTION_ID}, ...) defined in the ConfigMap
//     onboarding/platform/platform-vars.yaml (fake values; `make demo` writes the emulator's): run gitaso with
//     --substitute-from platform/platform-vars --substitute-from ConfigMap/platform/team-a-vars
//     --substitute-strict (team-a-vars is exported by the team identity). See onboarding/README.md.
//   - flux-helm/: a Flux repository in the seeds' shape (gitaso --flux --path clusters/snd): a platform
//     Kustomization substituting from the ConfigMap platform-vars renders a team's HelmRelease of an
//     infrastructure chart (charts/team-infra) built on a library chart of ASO templates (charts/aso-library),
//     pulled from an Azure Container Registry (HelmRepository type oci, provider azure). See flux-helm/README.md.
package examples
