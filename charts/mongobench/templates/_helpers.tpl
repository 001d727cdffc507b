{{/* The name in labels and object names: the chart's, unless nameOverride. */}}
{{- define "mongobench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The full name of every object the chart creates, cluster-scoped ones (ClusterRoles, peering,
admission policy) included, so two releases never clash: `<release>-<name>`, or the release name
alone when it already contains the name, or fullnameOverride.
*/}}
{{- define "mongobench.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "mongobench.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "mongobench.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "mongobench.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name: the existing ServiceAccount to run as (serviceAccount.create is false)" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "mongobench.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mongobench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "mongobench.labels" -}}
{{ include "mongobench.selectorLabels" . }}
app.kubernetes.io/part-of: mongobench
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
`annotations:` with commonAnnotations and an object's own (dict "root" . "extra" map), or nothing.
*/}}
{{- define "mongobench.annotations" -}}
{{- $all := merge (dict) (.extra | default dict) (.root.Values.commonAnnotations | default dict) -}}
{{- if $all -}}
annotations:
  {{- toYaml $all | nindent 2 }}
{{- end -}}
{{- end -}}

{{/* Labels a Prometheus selects monitors by: monitorLabels, then an object's own (the map given). */}}
{{- define "mongobench.monitorLabels" -}}
{{- $all := merge (dict) (.extra | default dict) (.root.Values.monitorLabels | default dict) -}}
{{- if $all -}}
{{ toYaml $all }}
{{- end -}}
{{- end -}}

{{/* repository:tag (the tag defaults to the chart's appVersion) or repository@digest. */}}
{{- define "mongobench.image" -}}
{{- $image := index . 0 -}}
{{- $root := index . 1 -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository (default $root.Chart.AppVersion $image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Whether the cluster serves a Prometheus Operator kind (monitoring.coreos.com/v1/<Kind>). */}}
{{- define "mongobench.hasMonitoringKind" -}}
{{- if .root.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" .kind) -}}true{{- end -}}
{{- end -}}
