"""The keyfile (and TLS certificate) a modelled mongod would read: the Secret its pod mounts,
found through the API.

A real member reads its keyfile from the volume the operator mounted; the wire model stands in for
members whose pods only exist in the apiserver, so it follows the same reference: pod (or, for a
mongos Service, a pod it selects) -> the ``keyfile`` volume's Secret -> its ``keyfile`` key.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

KEYFILE_VOLUME = "keyfile"


def keyfile_keys(keyfile: str) -> tuple[str, ...]:
    """The keys mongod reads from a keyfile: one key, or a YAML list of keys (``- key`` per
    line, as MongoDB's keyfile rotation writes it), whitespace inside a key ignored. A member
    accepts __system authenticated with any of them."""
    lines = [line.strip() for line in keyfile.splitlines() if line.strip()]
    if lines and all(line.startswith("-") for line in lines):
        keys = ("".join(line[1:].split()).strip("'\"") for line in lines)
        return tuple(key for key in keys if key)
    return ("".join(keyfile.split()),)


def _pod_keyfile(core: Any, namespace: str, pod: Any) -> str | None:
    for volume in pod.spec.volumes or []:
        if volume.name == KEYFILE_VOLUME and volume.secret is not None:
            secret = core.read_namespaced_secret(volume.secret.secret_name, namespace)
            data = (secret.data or {}).get("keyfile")
            return base64.b64decode(data).decode() if data else None
    return None


def keyfile_from_pods(api: k8s.ApiClient) -> Callable[[str], str | None]:
    """member DNS name (``pod.service.ns.svc...`` or ``service.ns.svc...``) -> keyfile text.

    As mongod reads it: once, when the member starts. A pod's keyfile is kept from the first
    read on (by the pod's uid: a restarted pod is a new one), so a changed Secret reaches a
    member only by its restart, and a member not yet restarted still refuses a new key."""
    return _from_pods(api, _once_per_pod(_pod_keyfile))


def _once_per_pod(
    read: Callable[[Any, str, Any], str | None],
) -> Callable[[Any, str, Any], str | None]:
    """`read`, kept from its first answer per pod (by uid: a restarted pod is a new one), as
    mongod reads its keyfile and options once, when it starts."""
    read_at_start: dict[str, str] = {}

    def once(core: Any, namespace: str, pod: Any) -> str | None:
        uid = pod.metadata.uid
        if uid not in read_at_start:
            value = read(core, namespace, pod)
            if value is None:
                return None
            read_at_start[uid] = value
        return read_at_start[uid]

    return once


TLS_VOLUME = "tls"
TLS_KEY = "tls-combined.pem"


def _pod_certificate(core: Any, namespace: str, pod: Any) -> str | None:
    for volume in pod.spec.volumes or []:
        if volume.name == TLS_VOLUME and volume.secret is not None:
            secret = core.read_namespaced_secret(volume.secret.secret_name, namespace)
            data = (secret.data or {}).get(TLS_KEY)
            return base64.b64decode(data).decode() if data else None
    return None


def certificate_from_pods(api: k8s.ApiClient) -> Callable[[str], str | None]:
    """member DNS name -> the key and certificate its mongod reads (--tlsCertificateKeyFile):
    the ``tls`` volume's Secret, key ``tls-combined.pem``."""
    return _from_pods(api, _pod_certificate)


def _pod_flag(pod: Any, flag: str, default: str) -> str | None:
    """The value of `flag` in the pod's mongod (or mongos) arguments; `default` without it."""
    for container in pod.spec.containers or []:
        if container.name in ("mongod", "mongos"):
            args = list(container.args or [])
            if flag in args and args.index(flag) + 1 < len(args):
                return str(args[args.index(flag) + 1])
            return default
    return None


def _flag_from_pods(api: k8s.ApiClient, flag: str, default: str) -> Callable[[str], str | None]:
    """member DNS name -> `flag`'s value in its pod's arguments, read once per pod (by uid), as
    mongod reads its options at start: a member keeps them until restarted."""
    return _from_pods(api, _once_per_pod(lambda _core, _ns, pod: _pod_flag(pod, flag, default)))


def tls_mode_from_pods(api: k8s.ApiClient) -> Callable[[str], str | None]:
    """member DNS name -> the --tlsMode its mongod runs with ("disabled" without the flag)."""
    return _flag_from_pods(api, "--tlsMode", "disabled")


def cluster_auth_from_pods(api: k8s.ApiClient) -> Callable[[str], str | None]:
    """member DNS name -> its --clusterAuthMode (keyFile without the flag)."""
    return _flag_from_pods(api, "--clusterAuthMode", "keyFile")


def _pod_ca(core: Any, namespace: str, pod: Any) -> str | None:
    for volume in pod.spec.volumes or []:
        if volume.name == TLS_VOLUME and volume.secret is not None:
            secret = core.read_namespaced_secret(volume.secret.secret_name, namespace)
            data = (secret.data or {}).get("ca.crt")
            return base64.b64decode(data).decode() if data else None
    return None


def ca_from_pods(api: k8s.ApiClient) -> Callable[[str], str | None]:
    """member DNS name -> the CAs its mongod trusts (--tlsCAFile): the ``tls`` volume's
    ``ca.crt``."""
    return _from_pods(api, _pod_ca)


def pod_start_from_pods(api: k8s.ApiClient) -> Callable[[str], str | None]:
    """member DNS name -> its pod's uid: a restarted member is a new pod (a new uid)."""
    return _from_pods(api, lambda _core, _ns, pod: str(pod.metadata.uid))


def _from_pods(
    api: k8s.ApiClient, read: Callable[[Any, str, Any], str | None]
) -> Callable[[str], str | None]:
    core: Any = k8s.CoreV1Api(api)

    def lookup(member: str) -> str | None:
        labels = member.rsplit(":", 1)[0].split(".")
        try:
            if len(labels) > 2 and labels[2] == "svc":  # a Service: mongos
                namespace = labels[1]
                selector = core.read_namespaced_service(labels[0], namespace).spec.selector or {}
                pods = core.list_namespaced_pod(
                    namespace, label_selector=",".join(f"{k}={v}" for k, v in selector.items())
                ).items
                pod = pods[0] if pods else None
            else:
                namespace = labels[2]
                pod = core.read_namespaced_pod(labels[0], namespace)
            return read(core, namespace, pod) if pod is not None else None
        except ApiException:
            return None  # no such pod yet: nothing can authenticate as __system there

    return lookup
