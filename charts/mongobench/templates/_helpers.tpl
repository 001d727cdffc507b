{{- define "mongobench.fullname" -}}
{{- printf "%s-operator" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mongobench.labels" -}}
app.kubernetes.io/name: mongobench-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "mongobench.selectorLabels" -}}
app.kubernetes.io/name: mongobench-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
