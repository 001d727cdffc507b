"""API access: server-side apply with the operator's field manager, every request with a timeout.

The operator's own small client over urllib3 (not the `kubernetes` package: ~38 MiB resident for
a few verbs on raw JSON). Credentials come from mongobench.k8s.credentials, the same loader as
kopf's login. The ApiClient is the operator state's (mongobench.state): created at start-up,
closed at shutdown; nothing creates one lazily. The controllers use it through
mongobench.k8s.api (KubeApi), passed to them.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

import urllib3

from mongobench.k8s import credentials as creds_
from mongobench.k8s.credentials import Credentials

FIELD_MANAGER = "mongobench"
USER_AGENT = "mongobench-operator"
# (connect, read) seconds for every request: a stalled apiserver fails a handler, which kopf
# retries, rather than hanging it.
REQUEST_TIMEOUT = (5.0, 30.0)
# Connections kept per apiserver: one per handler thread (MONGOBENCH_WORKERS) and spare.
POOL_SIZE = 32


class ApiError(Exception):
    """The apiserver answered 4xx/5xx: its status, reason phrase and body (a Status, JSON)."""

    def __init__(self, status: int, reason: str, body: str = "") -> None:
        self.status, self.reason, self.body = status, reason, body
        super().__init__(f"HTTP {status} {reason}: {self.message}")

    @property
    def message(self) -> str:
        """The Status message when the body is one, else the reason phrase."""
        try:
            return str(json.loads(self.body)["message"])
        except (ValueError, KeyError, TypeError):
            return self.reason


class ClientClosed(RuntimeError):
    """The operator is stopping: its API client takes no more requests."""


class ApiClient:
    """Thread-safe: one connection pool; credentials refreshed when an exec plugin's expire,
    a token file re-read once a minute, and both once more on a 401. Closed, it refuses every
    request (ClientClosed): a sync still running as the operator stops writes nothing more."""

    def __init__(self, credentials: Credentials, timeout: tuple[float, float] = REQUEST_TIMEOUT):
        self.timeout = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        self._closed = False
        self._lock = threading.Lock()
        self._creds = credentials
        self._pool = _pool(credentials)
        self._token: tuple[str | None, float] = (None, -1e9)

    @property
    def credentials(self) -> Credentials:
        return self._creds

    def request(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        """One API request; the decoded JSON response, or ApiError for any 4xx/5xx."""
        if self._closed:
            raise ClientClosed(f"{method} {path}: the operator is stopping")
        url = self._creds.server + path + (f"?{urlencode(query)}" if query else "")
        data = body if body is None or isinstance(body, str | bytes) else json.dumps(body)
        renewable = self._creds.exec_plugin is not None or self._creds.token_file is not None
        for renew in (False, True):
            pool, auth = self._session(renew)
            response = pool.request(
                method,
                url,
                body=data,
                headers={
                    **auth,
                    "Accept": "application/json",
                    "Content-Type": content_type,
                    "User-Agent": USER_AGENT,  # the operator's requests, told apart in audit logs
                },
                timeout=self.timeout,
            )
            if response.status != 401 or renew or not renewable:
                break
        text = response.data.decode("utf-8", "replace")
        if response.status >= 400:
            raise ApiError(response.status, response.reason or "", text)
        return dict(json.loads(text)) if text else {}

    def _session(self, renew: bool) -> tuple[urllib3.PoolManager, dict[str, str]]:
        with self._lock:
            creds = self._creds
            if creds.exec_plugin is not None and (renew or creds.expired()):
                fresh = creds_.refreshed(creds)
                if (fresh.cert_data, fresh.key_data) != (creds.cert_data, creds.key_data):
                    self._pool.clear()
                    self._pool = _pool(fresh)
                self._creds = creds = fresh
            token, read_at = self._token
            if creds.token_file is not None:
                if renew or time.monotonic() - read_at > creds_.TOKEN_FILE_MAX_AGE:
                    token = creds_.bearer_token(creds)
                    self._token = (token, time.monotonic())
            else:
                token = creds.token
            if creds.username and creds.password and not token:
                pair = base64.b64encode(f"{creds.username}:{creds.password}".encode()).decode()
                auth = {"Authorization": f"Basic {pair}"}
            else:
                auth = {"Authorization": f"Bearer {token}"} if token else {}
            return self._pool, dict(auth)

    def renewed_credentials(self) -> Credentials:
        """The credentials renewed now (exec plugin run, token file read), the token inline."""
        _, auth = self._session(renew=True)
        header = auth.get("Authorization", "")
        token = header.removeprefix("Bearer ") if header.startswith("Bearer ") else None
        with self._lock:
            return replace(self._creds, token=token or None, token_file=None)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._pool.clear()


def _pool(creds: Credentials) -> urllib3.PoolManager:
    context = ssl.create_default_context(cadata=creds.ca_data.decode() if creds.ca_data else None)
    if creds.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if creds.cert_data and creds.key_data:
        # ssl loads a certificate chain only from files: private ones, removed at once.
        with tempfile.TemporaryDirectory(prefix="mongobench-tls-") as tmp:
            cert, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            for path, data in ((cert, creds.cert_data), (key, creds.key_data)):
                with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                    f.write(data)
            context.load_cert_chain(cert, key)
    options: dict[str, Any] = {"maxsize": POOL_SIZE, "ssl_context": context}
    if creds.proxy_url:
        return urllib3.ProxyManager(creds.proxy_url, **options)
    return urllib3.PoolManager(**options)


def new_api_client() -> ApiClient:
    """In-cluster credentials when running in a pod, else the kubeconfig (KUBECONFIG or ~/.kube)."""
    return ApiClient(creds_.load())


# kind -> (API group/version path prefix, plural, namespaced). Only the kinds the operator uses.
_RESOURCES: dict[str, tuple[str, str, bool]] = {
    "ConfigMap": ("api/v1", "configmaps", True),
    "Secret": ("api/v1", "secrets", True),
    "Service": ("api/v1", "services", True),
    "ServiceAccount": ("api/v1", "serviceaccounts", True),
    "PersistentVolumeClaim": ("api/v1", "persistentvolumeclaims", True),
    "Pod": ("api/v1", "pods", True),
    "Event": ("api/v1", "events", True),
    "Node": ("api/v1", "nodes", False),
    "StatefulSet": ("apis/apps/v1", "statefulsets", True),
    "Deployment": ("apis/apps/v1", "deployments", True),
    "Job": ("apis/batch/v1", "jobs", True),
    "PodDisruptionBudget": ("apis/policy/v1", "poddisruptionbudgets", True),
    "NetworkPolicy": ("apis/networking.k8s.io/v1", "networkpolicies", True),
    "Role": ("apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "StorageClass": ("apis/storage.k8s.io/v1", "storageclasses", False),
    "PodMonitor": ("apis/monitoring.coreos.com/v1", "podmonitors", True),
    "Certificate": ("apis/cert-manager.io/v1", "certificates", True),
    "MongoCluster": ("apis/mongobench.io/v1alpha1", "mongoclusters", True),
    "BenchmarkRun": ("apis/mongobench.io/v1alpha1", "benchmarkruns", True),
    "BenchmarkExperiment": ("apis/mongobench.io/v1alpha1", "benchmarkexperiments", True),
}


def resource_path(kind: str, namespace: str | None, name: str | None = None) -> str:
    """The API path of a kind's collection, or of one object; `namespace` is ignored for
    cluster-scoped kinds."""
    prefix, plural, namespaced = _RESOURCES[kind]
    path = f"/{prefix}/namespaces/{namespace}/{plural}" if namespaced else f"/{prefix}/{plural}"
    return f"{path}/{name}" if name else path


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
