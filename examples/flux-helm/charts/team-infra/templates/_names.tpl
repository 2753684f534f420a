{{- define "team-infra.resourceGroup" -}}
{{- .Values.resourceGroup | default (printf "%s-%s-rg" .Values.team .Values.service) -}}
{{- end }}

{{- define "team-infra.identity" -}}
{{- printf "%s-identity" .Values.service -}}
{{- end }}

{{- define "team-infra.tags" -}}
{{- toYaml (merge (dict "environment" .Values.environment "team" .Values.team "service" .Values.service) .Values.tags) -}}
{{- end }}
