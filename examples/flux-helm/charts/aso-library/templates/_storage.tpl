{{/*
aso-library.storageAccount: a StorageV2 account with the platform's secure defaults (no public blob access,
TLS 1.2, HTTPS only), its blob service (declared: ARM creates blobServices/default with the account, and ASO
needs the object as the containers' owner; it cannot be deleted on its own, hence detach-on-delete) and its
containers. The blob endpoint is exported to the ConfigMap <name>-settings.
  name (3-24 lower-case letters and digits), location, owner or ownerArmId (required); sku (Standard_LRS),
  accessTier (Hot), containers (list of names), tags.
*/}}
{{- define "aso-library.storageAccount" -}}
apiVersion: storage.azure.com/v20230101
kind: StorageAccount
{{ include "aso-library.metadata" . }}
spec:
  location: {{ required "aso-library.storageAccount: location is required" .location }}
  {{- include "aso-library.owner" . | nindent 2 }}
  kind: StorageV2
  sku:
    name: {{ .sku | default "Standard_LRS" }}
  accessTier: {{ .accessTier | default "Hot" }}
  allowBlobPublicAccess: false
  minimumTlsVersion: TLS1_2
  supportsHttpsTrafficOnly: true
  operatorSpec:
    configMaps:
      blobEndpoint:
        name: {{ .name }}-settings
        key: blobEndpoint
  {{- include "aso-library.tags" . | nindent 2 }}
---
apiVersion: storage.azure.com/v20230101
kind: StorageAccountsBlobService
{{ include "aso-library.metadata" (merge (dict "name" (printf "%s-blob" .name) "annotations" (dict "serviceoperator.azure.com/reconcile-policy" "detach-on-delete")) .) }}
spec:
  owner:
    name: {{ .name }}
  deleteRetentionPolicy:
    enabled: true
    days: 7
  containerDeleteRetentionPolicy:
    enabled: true
    days: 7
{{- range .containers }}
---
apiVersion: storage.azure.com/v20230101
kind: StorageAccountsBlobServicesContainer
{{ include "aso-library.metadata" (dict "root" $.root "name" (printf "%s-%s" $.name .)) }}
spec:
  owner:
    name: {{ $.name }}-blob
  azureName: {{ . }}
  publicAccess: None
{{- end }}
{{- end }}
