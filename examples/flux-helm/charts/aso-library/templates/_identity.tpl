{{/*
aso-library.userAssignedIdentity: a UserAssignedIdentity whose principalId, clientId and tenantId are exported
to the ConfigMap <name>-settings (ASO operatorSpec.configMaps), for role assignments (principalIdFromConfig) and
for the workload's AZURE_CLIENT_ID.
  name, location, owner (a ResourceGroup of the release) or ownerArmId (required); tags.
*/}}
{{- define "aso-library.userAssignedIdentity" -}}
{{- $settings := printf "%s-settings" .name -}}
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
{{ include "aso-library.metadata" . }}
spec:
  location: {{ required "aso-library.userAssignedIdentity: location is required" .location }}
  {{- include "aso-library.owner" . | nindent 2 }}
  operatorSpec:
    configMaps:
      principalId:
        name: {{ $settings }}
        key: principalId
      clientId:
        name: {{ $settings }}
        key: clientId
      tenantId:
        name: {{ $settings }}
        key: tenantId
  {{- include "aso-library.tags" . | nindent 2 }}
{{- end }}

{{/*
aso-library.federatedIdentityCredential: trust between a Kubernetes service account and an identity (workload
identity): tokens of "issuer" (the cluster's OIDC issuer URL) for system:serviceaccount:<namespace>:<serviceAccount>
with audience api://AzureADTokenExchange are exchanged for the identity's Azure tokens.
  name, identity (the UserAssignedIdentity's name), issuer, serviceAccount (required); serviceAccountNamespace
  (default: the release namespace).
*/}}
{{- define "aso-library.federatedIdentityCredential" -}}
apiVersion: managedidentity.azure.com/v1api20230131
kind: FederatedIdentityCredential
{{ include "aso-library.metadata" . }}
spec:
  owner:
    name: {{ required "aso-library.federatedIdentityCredential: identity is required" .identity }}
  audiences:
    - api://AzureADTokenExchange
  issuer: {{ required "aso-library.federatedIdentityCredential: issuer is required" .issuer | quote }}
  subject: {{ printf "system:serviceaccount:%s:%s" (.serviceAccountNamespace | default .root.Release.Namespace) (required "aso-library.federatedIdentityCredential: serviceAccount is required" .serviceAccount) | quote }}
{{- end }}
