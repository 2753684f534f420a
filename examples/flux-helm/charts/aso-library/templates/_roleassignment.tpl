{{/*
aso-library.roleAssignment: a built-in role (by its name, wellKnownName, resolved like ASO does) for the identity
whose principalId the ConfigMap <identity>-settings holds (exported by aso-library.userAssignedIdentity), on the
scope of its owner.
  name, identity, role (e.g. "Storage Blob Data Contributor"), scope (dict group, kind, name of the owner)
  (required).
*/}}
{{- define "aso-library.roleAssignment" -}}
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
{{ include "aso-library.metadata" . }}
spec:
  owner:
    {{- toYaml (required "aso-library.roleAssignment: scope is required" .scope) | nindent 4 }}
  principalIdFromConfig:
    name: {{ required "aso-library.roleAssignment: identity is required" .identity }}-settings
    key: principalId
  principalType: ServicePrincipal
  roleDefinitionReference:
    wellKnownName: {{ required "aso-library.roleAssignment: role is required" .role | quote }}
{{- end }}
