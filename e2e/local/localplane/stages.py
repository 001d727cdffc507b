"""The project's KWOK stage config: what the simulated kubelet does to Nodes and Pods.

Written against the Stage API of kwok v0.8.0 (`kwok.x-k8s.io/v1alpha1`: `spec.selector` with `jq`
match expressions, `spec.steps[]` with a `patch` of the status subresource, applied as a strategic
merge). The plain kwok binary ships no stages; these are adapted from its kustomize `node/fast`,
`node/heartbeat` and `pod/fast` examples, plus one project rule:

Pods labelled `mongobench.io/component=benchmark-client` go Running/Ready like any other pod but
are never completed by KWOK: a test harness runs their command for real and patches their status
itself, and KWOK must not race it to `Succeeded`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

BENCHMARK_CLIENT_LABEL = ("mongobench.io/component", "benchmark-client")

_READY_STATUS = '.status.conditions.[] | select( .type == "Ready" ) | .status'

_NODE_CONDITIONS = """\
{{ $now := Now }}
{{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
conditions:
{{ range NodeConditions }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $lastTransitionTime | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
"""

# Keeps the capacity/addresses/nodeInfo a node was created with (nodes.py); defaults otherwise.
_NODE_INITIALIZE = (
    _NODE_CONDITIONS
    + """\
{{ with .status.addresses }}{{ else }}
addresses:
- {address: {{ NodeIP | Quote }}, type: InternalIP}
- {address: {{ NodeName | Quote }}, type: Hostname}
{{ end }}
allocatable:
{{ with .status.allocatable }}
{{ YAML . 1 }}
{{ else }}
  {cpu: "4", memory: 16Gi, pods: "110"}
{{ end }}
capacity:
{{ with .status.capacity }}
{{ YAML . 1 }}
{{ else }}
  {cpu: "4", memory: 16Gi, pods: "110"}
{{ end }}
{{ $nodeInfo := .status.nodeInfo }}
{{ $kwokVersion := printf "kwok-%s" Version }}
nodeInfo:
  architecture: {{ or $nodeInfo.architecture "amd64" }}
  bootID: {{ or $nodeInfo.bootID `""` }}
  containerRuntimeVersion: {{ or $nodeInfo.containerRuntimeVersion $kwokVersion }}
  kernelVersion: {{ or $nodeInfo.kernelVersion $kwokVersion }}
  kubeProxyVersion: {{ or $nodeInfo.kubeProxyVersion $kwokVersion }}
  kubeletVersion: {{ or $nodeInfo.kubeletVersion $kwokVersion }}
  machineID: {{ or $nodeInfo.machineID `""` }}
  operatingSystem: {{ or $nodeInfo.operatingSystem "linux" }}
  osImage: {{ or $nodeInfo.osImage `""` }}
  systemUUID: {{ or $nodeInfo.systemUUID `""` }}
phase: Running
"""
)

_POD_READY = """\
{{ $now := Now }}
conditions:
- {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized}
- {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Ready}
- {lastTransitionTime: {{ $now | Quote }}, status: "True", type: ContainersReady}
{{ range .spec.readinessGates }}
- {lastTransitionTime: {{ $now | Quote }}, status: "True", type: {{ .conditionType | Quote }}}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  imageID: {{ printf "%s@sha256:%s" .image \
"e8884f47df6d856e608f7cc155196152d6459a696c4addaf7980f07c019d1bea" | Quote }}
  name: {{ .name | Quote }}
  ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  {{ if eq .restartPolicy "Always" }}
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
  {{ else }}
  started: false
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
  {{ end }}
{{ end }}
{{ $hostIPs := NodeIPsWith .spec.nodeName }}
{{ with $hostIPs }}
hostIP: {{ index . 0 | Quote }}
hostIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
{{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) \
( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
{{ with $podIPs }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
""".replace("\\\n", "")

_POD_COMPLETE = """\
{{ $now := Now }}
conditions:
- {lastTransitionTime: {{ $now | Quote }}, status: "False", type: Ready, reason: PodCompleted}
- {lastTransitionTime: {{ $now | Quote }}, status: "False", type: ContainersReady, \
reason: PodCompleted}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  started: false
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
{{ end }}
phase: Succeeded
""".replace("\\\n", "")


def _jq(key: str, operator: str, *values: str) -> dict[str, Any]:
    expr: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        expr["values"] = list(values)
    return {"jq": expr}


def _status_patch(template: str) -> dict[str, Any]:
    return {"patch": {"subresource": "status", "root": "status", "template": template}}


def _stage(name: str, kind: str, match: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": kind},
            "selector": {"matchExpressions": match},
            **spec,
        },
    }


def stages() -> list[dict[str, Any]]:
    not_deleting = _jq(".metadata.deletionTimestamp", "DoesNotExist")
    return [
        _stage(
            "node-initialize",
            "Node",
            [_jq(_READY_STATUS, "NotIn", "True")],
            steps=[_status_patch(_NODE_INITIALIZE)],
        ),
        _stage(
            "node-heartbeat",
            "Node",
            [_jq(".status.phase", "In", "Running"), _jq(_READY_STATUS, "In", "True")],
            delay={"durationMilliseconds": 20000, "jitterDurationMilliseconds": 25000},
            # The node still matches after a heartbeat: re-arm without waiting for a watch event.
            immediateNextStage=True,
            steps=[_status_patch(_NODE_CONDITIONS)],
        ),
        _stage(
            "pod-ready",
            "Pod",
            [
                not_deleting,
                _jq(".status.phase", "In", "Pending"),
                _jq(_READY_STATUS, "NotIn", "True"),
            ],
            steps=[
                {"event": {"type": "Normal", "reason": "Started", "message": "Started (KWOK)"}},
                _status_patch(_POD_READY),
            ],
        ),
        _stage(
            "pod-complete",
            "Pod",
            [
                not_deleting,
                _jq(".status.phase", "In", "Running"),
                _jq(".metadata.ownerReferences.[].kind", "In", "Job"),
                # A pod without the label matches NotIn too (kwok: missing value -> NotIn true).
                _jq(
                    f'.metadata.labels["{BENCHMARK_CLIENT_LABEL[0]}"]',
                    "NotIn",
                    BENCHMARK_CLIENT_LABEL[1],
                ),
            ],
            delay={"durationMilliseconds": 500},
            steps=[
                {"event": {"type": "Normal", "reason": "Completed", "message": "Exit 0 (KWOK)"}},
                _status_patch(_POD_COMPLETE),
            ],
        ),
        _stage(
            "pod-delete",
            "Pod",
            [_jq(".metadata.deletionTimestamp", "Exists")],
            # The kubelet's half of graceful deletion: confirm with grace period 0. Finalizers
            # (e.g. the Job controller's job-tracking) still hold the object until removed.
            steps=[{"delete": True}],
        ),
    ]


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (the Go templates) as YAML block literals, readable in the file."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def render() -> str:
    return yaml.dump_all(stages(), Dumper=_BlockDumper, sort_keys=False, width=200)


def write_stages(path: Path) -> Path:
    path.write_text(render())
    return path
