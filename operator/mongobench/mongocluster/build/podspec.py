"""Pod-template pieces shared by the mongod StatefulSets and the mongos Deployment.

Pods satisfy the ``restricted`` Pod Security profile: non-root uid 999 (the ``mongodb`` user of
the official image), RuntimeDefault seccomp, no privilege escalation, every capability dropped,
only secret/emptyDir/PVC volumes.

Keyfile: mongod refuses a keyfile readable by group or others unless it is owned by root and at
most group-readable (MongoDB >= 4.2). A Secret volume with ``defaultMode: 0400`` plus
``fsGroup: 999`` gives exactly that: kubelet writes the file as root, chgrps it to 999 and adds
group read (0440), so uid 999 reads it through its group. No init container copying the key is
needed, and no writable copy of it exists.

Probes: TCP on 27017. mongod and mongos only listen once storage recovery / config-server
contact is done, so an open port means the process serves ``ping``; an exec probe running
``mongosh`` would start a Node.js process every few seconds in every pod (CPU noise inside a
benchmark) and fails on a custom ``image`` without mongosh.
"""

from __future__ import annotations

from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec, ResourceRequirements
from mongobench.mongocluster.build.labels import Component
from mongobench.mongocluster.build.layout import PORT, ClusterLayout
from mongobench.mongocluster.build.placement import (
    Scheduling,
    affinity,
    duet_labels,
    duet_place,
    with_duet,
)
from mongobench.mongocluster.build.tls import exporter_uri_options, tls_args, tls_mount, tls_volume

MONGODB_UID = 999
KEYFILE_DIR = "/etc/mongodb-keyfile"
KEYFILE_PATH = f"{KEYFILE_DIR}/keyfile"
KEYFILE_MODE = 0o400
EXPORTER_PORT = 9216
ZONE_KEY = "topology.kubernetes.io/zone"


def container_security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": MONGODB_UID,
        "runAsGroup": MONGODB_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pod_security_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": MONGODB_UID,
        "runAsGroup": MONGODB_UID,
        "fsGroup": MONGODB_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def resources(requirements: ResourceRequirements) -> dict[str, Any]:
    """The container's resources key (absent when the spec sets none)."""
    out = requirements.to_k8s()
    return {"resources": out} if out else {}


def _tcp_probe(period: int, failures: int) -> dict[str, Any]:
    return {
        "tcpSocket": {"port": PORT},
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def mongo_container(
    name: str,
    spec: MongoClusterSpec,
    requirements: ResourceRequirements,
    args: list[str],
    extra_mounts: list[dict[str, Any]],
) -> dict[str, Any]:
    """A mongod or mongos container. ``command`` is explicit so the image's entrypoint script
    (which edits arguments and needs a writable root) never runs, for any ``image``."""
    return {
        "name": name,
        "image": spec.image_ref,
        "imagePullPolicy": "IfNotPresent",
        "command": [name],
        "args": args,
        "ports": [{"name": "mongodb", "containerPort": PORT, "protocol": "TCP"}],
        # Up to 10 minutes to start: WiredTiger recovery after an unclean stop can be slow.
        "startupProbe": _tcp_probe(10, 60),
        "livenessProbe": _tcp_probe(10, 6),
        "readinessProbe": _tcp_probe(5, 3),
        **resources(requirements),
        "securityContext": container_security_context(),
        "volumeMounts": [
            *extra_mounts,
            {"name": "keyfile", "mountPath": KEYFILE_DIR, "readOnly": True},
            *([tls_mount()] if spec.tls.enabled else []),
            # mongod's Unix socket; the root filesystem is read-only.
            {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 - an emptyDir in the pod
        ],
    }


def common_args(spec: MongoClusterSpec) -> list[str]:
    """Flags every mongod and mongos takes (``--keyFile`` also turns on client auth)."""
    return ["--port", str(PORT), "--bind_ip_all", "--keyFile", KEYFILE_PATH, *tls_args(spec)]


def exporter_container(spec: MongoClusterSpec, layout: ClusterLayout) -> dict[str, Any]:
    """percona/mongodb_exporter beside one mongod/mongos, as the least-privilege exporter user.

    Credentials reach it as MONGODB_USER / MONGODB_PASSWORD env from the Secret, never literally.
    """

    def from_secret(env: str, key: str) -> dict[str, Any]:
        ref = {"name": layout.exporter_secret, "key": key}
        return {"name": env, "valueFrom": {"secretKeyRef": ref}}

    container: dict[str, Any] = {
        "name": "exporter",
        "image": spec.monitoring.exporter_image,
        "imagePullPolicy": "IfNotPresent",
        "args": [
            f"--mongodb.uri=mongodb://127.0.0.1:{PORT}/admin{exporter_uri_options(spec)}",
            "--mongodb.direct-connect",
            "--collect-all",
            "--compatible-mode",
            f"--web.listen-address=:{EXPORTER_PORT}",
        ],
        "env": [
            from_secret("MONGODB_USER", "username"),
            from_secret("MONGODB_PASSWORD", "password"),
        ],
        "ports": [{"name": "metrics", "containerPort": EXPORTER_PORT, "protocol": "TCP"}],
        **resources(spec.resources_for("exporter")),
        "securityContext": container_security_context(),
    }
    if spec.tls.enabled:  # the member's certificate and the CA, to dial its mongod over TLS
        container["volumeMounts"] = [tls_mount()]
    return container


def _scheduling(
    spec: MongoClusterSpec,
    layout: ClusterLayout,
    component: Component,
    selector: dict[str, str],
    sched: Scheduling,
    *,
    zone_spread: bool,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if sched.node_selector:
        out["nodeSelector"] = dict(sorted(sched.node_selector.items()))
    if sched.tolerations:
        out["tolerations"] = [t.to_k8s() for t in sched.tolerations]
    place = duet_place(layout.name, selector, component)
    pod_affinity = with_duet(
        affinity(spec, layout.name, component, selector, sched), spec.placement.duet, place
    )
    if pod_affinity:
        out["affinity"] = pod_affinity
    if zone_spread:
        out["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE_KEY,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": dict(selector)},
            }
        ]
    return out


def pod_template(
    spec: MongoClusterSpec,
    layout: ClusterLayout,
    labels: dict[str, str],
    main: dict[str, Any],
    *,
    component: Component,
    scheduling: Scheduling,
    zone_spread: bool,
    termination_grace_seconds: int,
    tls_secret: str,
) -> dict[str, Any]:
    """The pod template around ``main``: exporter sidecar, scheduling, security, volumes.

    ``tls_secret``: the Secret of this component's member certificate (mounted when TLS is on).

    ``labels`` are also the anti-affinity / spread selector, so pods of one replica set (or
    the mongos routers) keep apart from each other, not from the rest of the cluster, unless a
    placement preset relates the roles (placement.affinity).
    """
    containers = [main]
    if spec.monitoring.exporter:
        containers.append(exporter_container(spec, layout))
    return {
        "metadata": {
            "labels": dict(labels)
            | duet_labels(spec.placement.duet, duet_place(layout.name, labels, component))
        },
        "spec": {
            # mongod never calls the Kubernetes API; no token to steal.
            "automountServiceAccountToken": False,
            # Service env vars are unused and grow with the namespace.
            "enableServiceLinks": False,
            "terminationGracePeriodSeconds": termination_grace_seconds,
            "securityContext": pod_security_context(),
            **_scheduling(spec, layout, component, labels, scheduling, zone_spread=zone_spread),
            "containers": containers,
            "volumes": [
                {
                    "name": "keyfile",
                    "secret": {
                        "secretName": layout.keyfile_secret,
                        "defaultMode": KEYFILE_MODE,
                        "items": [{"key": "keyfile", "path": "keyfile"}],
                    },
                },
                {"name": "tmp", "emptyDir": {}},
                *([tls_volume(tls_secret)] if spec.tls.enabled else []),
            ],
        },
    }


def object_meta(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(labels)}
