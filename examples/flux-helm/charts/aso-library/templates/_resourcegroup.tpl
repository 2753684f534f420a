{{/*
aso-library.resourceGroup: a ResourceGroup.
  name, location (required); tags; azureName (default: name).
*/}}
{{- define "aso-library.resourceGroup" -}}
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
{{ include "aso-library.metadata" . }}
spec:
  {{- with .azureName }}
  azureName: {{ . }}
  {{- end }}
  location: {{ required "aso-library.resourceGroup: location is required" .location }}
  {{- include "aso-library.tags" . | nindent 2 }}
{{- end }}
