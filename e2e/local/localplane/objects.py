"""The objects cluster-tier tests apply and read back: a manifest applied with kubectl, a
mongobench resource read as the apiserver holds it, a CA Secret as `spec.tls.caSecretName`
names one."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import yaml
from kubernetes import client as k8s

if TYPE_CHECKING:
    import trustme

    from localplane.plane import Plane

GROUP, VERSION = "mongobench.io", "v1alpha1"


def apply(plane: Plane, namespace: str, obj: dict[str, Any]) -> None:
    plane.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(obj))


def get(api: k8s.ApiClient, namespace: str, plural: str, name: str) -> dict[str, Any]:
    """A mongobench resource (`plural` of mongobench.io/v1alpha1) as the apiserver holds it."""
    obj: Any = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, VERSION, namespace, plural, name
    )
    return dict(obj)


def ca_secret(name: str, ca: trustme.CA, *, watched: bool = True) -> dict[str, Any]:
    """The Secret holding a CA's certificate and key (`tls.crt`, `tls.key`), labelled for the
    operator to watch as docs/operations/tls.md asks (`watched`: False leaves the label off)."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    labels = {"mongobench.io/watch": "true"} if watched else {}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": labels},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": b64(ca.cert_pem.bytes()), "tls.key": b64(ca.private_key_pem.bytes())},
    }
