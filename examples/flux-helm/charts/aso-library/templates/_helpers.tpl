{{/*
aso-library: named templates of Azure Service Operator v2 objects.

Every template takes one dict argument: "root" (the calling chart's top-level context, for the release
name and namespace) and the fields of the object. Objects are written in the release namespace, as Flux's
helm-controller installs them; their names come from the caller.

  {{ include "aso-library.resourceGroup" (dict "root" $ "name" "claims-rg" "location" "uksouth") }}
*/}}

{{/* aso-library.metadata: name, namespace, the common labels and optional annotations. */}}
{{- define "aso-library.metadata" -}}
metadata:
  name: {{ required "aso-library: name is required" .name }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    app.kubernetes.io/managed-by: {{ .root.Release.Service }}
    app.kubernetes.io/instance: {{ .root.Release.Name }}
    helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 }}
  {{- with .annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* aso-library.owner: spec.owner, by name (an object of the same namespace) or by ARM ID. */}}
{{- define "aso-library.owner" -}}
owner:
{{- if .ownerArmId }}
  armId: {{ .ownerArmId }}
{{- else }}
  name: {{ required "aso-library: owner (or ownerArmId) is required" .owner }}
{{- end }}
{{- end }}

{{/* aso-library.tags: the platform's mandatory tags merged with the caller's. */}}
{{- define "aso-library.tags" -}}
{{- $tags := merge (dict) (.tags | default dict) (dict "managed-by" "gitaso") -}}
tags:
  {{- toYaml $tags | nindent 2 }}
{{- end }}
