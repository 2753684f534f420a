{{/* Chart name. */}}
{{- define "gitaso.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the release name, with the chart name appended unless it is part of it. */}}
{{- define "gitaso.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gitaso.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels (immutable: never add to them). */}}
{{- define "gitaso.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gitaso.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "gitaso.labels" -}}
helm.sh/chart: {{ include "gitaso.chart" . }}
{{ include "gitaso.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gitaso
{{- end }}

{{- define "gitaso.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gitaso.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "gitaso.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "gitaso.apiTokenSecret" -}}
{{- default (printf "%s-api-token" (include "gitaso.fullname" .)) .Values.apiToken.existingSecret }}
{{- end }}

{{- define "gitaso.instance" -}}
{{- default (include "gitaso.fullname" .) .Values.cluster.instance }}
{{- end }}

{{- define "gitaso.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace }}
{{- end }}

{{- define "gitaso.leaseName" -}}
{{- default (include "gitaso.fullname" .) .Values.leaderElection.id }}
{{- end }}

{{- define "gitaso.clientId" -}}
{{- default .Values.azure.clientId .Values.workloadIdentity.clientId }}
{{- end }}

{{/* The rules on ConfigMaps and Secrets: exports are applied server-side and pruned, inputs are watched. */}}
{{- define "gitaso.exportRules" -}}
- apiGroups: [""]
  resources: ["configmaps", "secrets"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
{{- end }}

{{/* Checks of value combinations that cannot work. */}}
{{- define "gitaso.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicas > 1 needs leaderElection.enabled=true (otherwise every replica applies to Azure)" }}
{{- end }}
{{- if and .Values.leaderElection.enabled (not .Values.cluster.enabled) }}
{{- fail "leaderElection.enabled needs cluster.enabled=true (the Lease lives in the cluster)" }}
{{- end }}
{{- if and (gt (int .Values.replicas) 1) .Values.persistence.enabled (not .Values.persistence.existingClaim) (not (has "ReadWriteMany" .Values.persistence.accessModes)) }}
{{- fail "replicas > 1 needs a volume every replica mounts: persistence.accessModes [ReadWriteMany] or persistence.existingClaim" }}
{{- end }}
{{- if and (gt (int .Values.replicas) 1) (not .Values.persistence.enabled) }}
{{- fail "replicas > 1 needs persistence.enabled=true on a ReadWriteMany volume (the replicas share the state)" }}
{{- end }}
{{- end }}
