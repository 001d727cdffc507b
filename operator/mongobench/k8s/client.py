"""API access: server-side apply with the operator's field manager, every request with a timeout.

The ApiClient is the operator state's (mongobench.state): created at start-up, bound here for
the module's functions, closed at shutdown; nothing creates one lazily.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

FIELD_MANAGER = "mongobench"
USER_AGENT = "mongobench-operator"
# (connect, read) seconds for every request: a stalled apiserver fails a handler, which kopf
# retries, rather than hanging it.
REQUEST_TIMEOUT = (5.0, 30.0)

_bound: list[client.ApiClient] = []  # the state's client, set by bind(); at most one


def new_api_client() -> client.ApiClient:
    """In-cluster config when running in a pod, else the kubeconfig (KUBECONFIG or ~/.kube)."""
    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException:
        config.load_kube_config()  # type: ignore[no-untyped-call]
    api = client.ApiClient()
    api.user_agent = USER_AGENT  # the operator's requests, told apart in an audit log
    return api


def bind(api: client.ApiClient) -> None:
    _bound[:] = [api]


def unbind(api: client.ApiClient) -> None:
    if _bound and _bound[0] is api:
        _bound.clear()


def api_client() -> client.ApiClient:
    if not _bound:
        raise RuntimeError("no Kubernetes API client: mongobench.state creates one at start-up")
    return _bound[0]


# kind -> (API group/version path prefix, plural). Only the kinds the operator manages.
_RESOURCES: dict[str, tuple[str, str]] = {
    "ConfigMap": ("api/v1", "configmaps"),
    "Secret": ("api/v1", "secrets"),
    "Service": ("api/v1", "services"),
    "ServiceAccount": ("api/v1", "serviceaccounts"),
    "PersistentVolumeClaim": ("api/v1", "persistentvolumeclaims"),
    "Pod": ("api/v1", "pods"),
    "StatefulSet": ("apis/apps/v1", "statefulsets"),
    "Deployment": ("apis/apps/v1", "deployments"),
    "Job": ("apis/batch/v1", "jobs"),
    "PodDisruptionBudget": ("apis/policy/v1", "poddisruptionbudgets"),
    "Role": ("apis/rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("apis/rbac.authorization.k8s.io/v1", "rolebindings"),
    "PodMonitor": ("apis/monitoring.coreos.com/v1", "podmonitors"),
    "ServiceMonitor": ("apis/monitoring.coreos.com/v1", "servicemonitors"),
    "MongoCluster": ("apis/mongobench.io/v1alpha1", "mongoclusters"),
    "BenchmarkRun": ("apis/mongobench.io/v1alpha1", "benchmarkruns"),
    "BenchmarkExperiment": ("apis/mongobench.io/v1alpha1", "benchmarkexperiments"),
}


def resource_path(kind: str, namespace: str, name: str | None = None) -> str:
    prefix, plural = _RESOURCES[kind]
    path = f"/{prefix}/namespaces/{namespace}/{plural}"
    return f"{path}/{name}" if name else path


def request(
    method: str,
    path: str,
    *,
    query: list[tuple[str, str]] | None = None,
    body: Any = None,
    content_type: str = "application/json",
    api: client.ApiClient | None = None,
) -> dict[str, Any]:
    """One API request; the decoded JSON response, or ApiException for any 4xx/5xx."""
    api = api or api_client()
    params = api.param_serialize(
        method,
        path,
        query_params=query or [],
        header_params={"Accept": "application/json", "Content-Type": content_type},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*params, _request_timeout=REQUEST_TIMEOUT)
    data = response.read()  # type: ignore[no-untyped-call]
    if response.status >= 400:
        raise ApiException(http_resp=response, body=data.decode("utf-8", "replace"))
    return dict(json.loads(data)) if data else {}


def apply(obj: Mapping[str, Any], api: client.ApiClient | None = None) -> dict[str, Any]:
    """Server-side apply `obj` as the operator's field manager; returns the object as stored."""
    meta = obj["metadata"]
    return request(
        "PATCH",
        resource_path(obj["kind"], meta["namespace"], meta["name"]),
        query=[("fieldManager", FIELD_MANAGER), ("force", "true")],
        body=json.dumps(obj),
        content_type="application/apply-patch+yaml",
        api=api,
    )


def get(
    kind: str, namespace: str, name: str, api: client.ApiClient | None = None
) -> dict[str, Any] | None:
    """The object, or None when it does not exist."""
    try:
        return request("GET", resource_path(kind, namespace, name), api=api)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def list_objects(
    kind: str,
    namespace: str,
    label_selector: str | None = None,
    api: client.ApiClient | None = None,
) -> list[dict[str, Any]]:
    query = [("labelSelector", label_selector)] if label_selector else []
    return list(request("GET", resource_path(kind, namespace), query=query, api=api)["items"])


def delete(
    kind: str,
    namespace: str,
    name: str,
    api: client.ApiClient | None = None,
    propagation: str = "Background",
) -> bool:
    """Delete if present; True when something was deleted."""
    try:
        request(
            "DELETE",
            resource_path(kind, namespace, name),
            body={"propagationPolicy": propagation},
            api=api,
        )
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def patch_status(kind: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
    """Merge-patch a custom resource's status subresource (lists in it are replaced)."""
    request(
        "PATCH",
        f"{resource_path(kind, namespace, name)}/status",
        body={"status": dict(status)},
        content_type="application/merge-patch+json",
    )


def owner_reference(owner: Mapping[str, Any], controller: bool = True) -> dict[str, Any]:
    """An ownerReference to a custom resource, so garbage collection follows it."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }
