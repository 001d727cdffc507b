{{/* The longest BenchmarkRun name the operator accepts: <run>-client names the run's
ServiceAccount, Role and RoleBinding and must fit in 63 (operator/mongobench/api/names.py
MAX_BENCHMARKRUN_NAME, the CRD's CEL rule on metadata.name; manifests/tests keeps them in step). */}}
{{- define "experiments.maxRunName" -}}56{{- end -}}

{{/* What defines a run's measurement, as JSON with sorted keys (Go's encoding sorts map keys):
the run's spec, all of it (it is immutable, so any change must be a new run), and the spec of the
MongoCluster of this chart it targets (a reshaped cluster is a new measurement), less what only
keeps or labels that cluster (deletionPolicy, monitoring.podMonitorLabels). Object labels are not
in it: they select runs, they do not change what is measured (the results library compares runs
by records.RUN_PARAMETERS and the cluster's shape, never by labels). Context: dict "run" "root". */}}
{{- define "experiments.measurement" -}}
{{- $run := .run -}}
{{- $target := dig "clusterRef" "name" "" $run.spec -}}
{{- $cluster := dict -}}
{{- range .root.Values.clusters }}
{{- if and $target (eq .name $target) }}
{{- $cluster = omit (deepCopy .spec) "deletionPolicy" -}}
{{- $monitoring := omit (get $cluster "monitoring" | default dict) "podMonitorLabels" }}
{{- $cluster = omit $cluster "monitoring" }}
{{- if $monitoring }}{{ $_ := set $cluster "monitoring" $monitoring }}{{ end }}
{{- end }}
{{- end }}
{{- dict "run" $run.spec "cluster" $cluster | toJson -}}
{{- end -}}

{{/* The first 8 hex digits of the sha256 of the run's measurement. Context: dict "run" "root". */}}
{{- define "experiments.runHash" -}}
{{- include "experiments.measurement" . | sha256sum | trunc 8 -}}
{{- end -}}

{{/* A run's object name: its Git name cut to leave room for "-<hash>" (never the hash), without
a trailing "-", then the hash. Context: dict "run" "root". */}}
{{- define "experiments.runName" -}}
{{- $room := sub (include "experiments.maxRunName" . | int) 9 | int -}}
{{- printf "%s-%s" (regexReplaceAll "-+$" (trunc $room .run.name) "") (include "experiments.runHash" .) -}}
{{- end -}}

{{/* The label of every BenchmarkRun this release renders: the superseded-runs hook looks among
them only. */}}
{{- define "experiments.selectorLabels" -}}
mongobench.io/gitops-release: {{ .Release.Name }}
{{- end -}}

{{/* The label selector of this release's runs that the values do not render (names: the
rendered names; none rendered: every run of the release). Context: dict "root" "names". */}}
{{- define "experiments.supersededSelector" -}}
{{- include "experiments.selectorLabels" .root | replace ": " "=" -}}
,mongobench.io/gitops-run
{{- if .names }} notin ({{ join "," .names }}){{ end -}}
{{- end -}}

{{/* A container of the superseded-runs hook: kubectl annotate of this release's runs that match
the selector. Context: dict "root" "name" "selector" "annotations" (the rest of the arguments). */}}
{{- define "experiments.kubectl" -}}
- name: {{ .name }}
  image: {{ .root.Values.superseded.image | quote }}
  command: [kubectl]
  args:
    - annotate
    - benchmarkruns.mongobench.io
    - --namespace={{ .root.Release.Namespace }}
    - --selector={{ .selector }}
    {{- range .annotations }}
    - {{ . }}
    {{- end }}
  env:
    - name: HOME  # kubectl's discovery cache, on a writable volume
      value: /tmp
  securityContext:
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: [ALL]
  resources:
    requests:
      cpu: 10m
      memory: 32Mi
    limits:
      memory: 128Mi
  volumeMounts:
    - name: tmp
      mountPath: /tmp
{{- end -}}
