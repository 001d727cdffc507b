{{/* A run's object name: its Git name and the first 8 hex digits of the sha256 of its spec
(Go's JSON encoding sorts map keys, so the same spec always gives the same name). */}}
{{- define "experiments.runName" -}}
{{- printf "%s-%s" .name (.spec | toJson | sha256sum | trunc 8) -}}
{{- end -}}
