"""The interface the e2e scenarios are written against, and what both backends share.

A scenario asks the session's `Backend` for an `Env`: a fresh namespace on a cluster where the
mongobench operator runs, plus ways to look at it. Everything a scenario does goes through the
Kubernetes API (`api`, `kubectl`, `apply`, ...), MongoDB (`mongo`, a MongoView) and Prometheus
(`prometheus`), so the same body runs on

- `local`: the project's control plane (KWOK nodes), the operator as a process, the in-memory
  wire model standing in for mongod, FerretDB as the data path of client pods executed by the
  harness kubelet, a real Prometheus (backends/local.py);
- `kind`: a kind cluster with the chart's operator, real mongod, real client pods and
  kube-prometheus-stack (backends/kind.py).

Waits are written in local-plane seconds; `time_scale` stretches them on slower backends.
"""

from __future__ import annotations

import abc
import json
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import yaml
from kubernetes import client as k8s

from backends.manifests import GROUP, VERSION, Manifest
from backends.mongo import MongoView
from localplane.operator import wait_until
from localplane.pytest_plugin import RESTRICTED_LABELS

# Namespaces enforce Pod Security `restricted`, as the cluster tier's do.
RESTRICTED = RESTRICTED_LABELS
# How a refused command reads in the operator's log and Events (code 13 Unauthorized).
REFUSED = re.compile(r"Unauthorized|not authorized|requires authentication", re.IGNORECASE)


def namespace_name(slug: str) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", slug.lower()).strip("-")[:40].strip("-")
    return f"e2e-{slug}-{uuid.uuid4().hex[:8]}"


class Env(abc.ABC):
    backend: str  # "local" | "kind"
    namespace: str
    api: k8s.ApiClient
    mongo: MongoView
    time_scale: float = 1.0
    # Whether the Prometheus the operator queries has per-container series (cAdvisor).
    container_metrics: bool = False
    # Whether the cluster's CNI enforces NetworkPolicy (kind's Calico; the local plane has no CNI).
    enforces_network_policy: bool = False

    # ---- what each backend provides ----------------------------------------------------------

    @abc.abstractmethod
    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]: ...

    @abc.abstractmethod
    def crash_operator(self) -> None:
        """Kill the operator as a crash would (no graceful shutdown); return once the next one
        runs (the local backend starts a new process, kind's Deployment a new pod)."""

    @abc.abstractmethod
    def prometheus(self, endpoint: str, params: dict[str, Any]) -> dict[str, Any]:
        """GET /api/v1/<endpoint> of the Prometheus the operator uses; the JSON answer."""

    @abc.abstractmethod
    def operator_log(self) -> str:
        """What the operator logged while this Env existed."""

    @abc.abstractmethod
    def client_failures(self) -> list[str]:
        """What each benchmark client that exited non-zero said: its pod, exit code and the
        last lines of its output (a failed step's message names the Job, not the cause)."""

    # ---- shared -----------------------------------------------------------------------------

    def wait(
        self, predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2
    ) -> Any:
        """Polls until `predicate()` is truthy and returns it; `timeout` in local seconds."""
        return wait_until(predicate, timeout * self.time_scale, interval, f"{self.backend}: {what}")

    def apply(self, obj: Manifest) -> None:
        self.kubectl("apply", "-n", self.namespace, "-f", "-", input=yaml.safe_dump(obj))

    def get(self, plural: str, name: str) -> dict[str, Any]:
        custom = k8s.CustomObjectsApi(self.api)
        return dict(
            custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name)
        )

    def names(self, plural: str) -> list[str]:
        custom = k8s.CustomObjectsApi(self.api)
        items = custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, plural)
        return sorted(o["metadata"]["name"] for o in items["items"])

    def delete(self, plural: str, name: str) -> None:
        custom = k8s.CustomObjectsApi(self.api)
        custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name)

    def wait_phase(
        self, name: str, phase: str, timeout: float = 60, plural: str = "mongoclusters"
    ) -> dict[str, Any]:
        """The object once its status has this phase for its current generation."""

        def check() -> dict[str, Any] | None:
            obj = self.get(plural, name)
            status = obj.get("status") or {}
            current = status.get("observedGeneration") == obj["metadata"].get("generation")
            return obj if status.get("phase") == phase and current else None

        return dict(self.wait(check, timeout, f"{plural}/{name} {phase}"))

    def wait_run(self, name: str, timeout: float = 240) -> dict[str, Any]:
        """A BenchmarkRun once it finished (Succeeded or Failed)."""

        def done() -> dict[str, Any] | None:
            obj = self.get("benchmarkruns", name)
            finished = (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            return obj if finished else None

        return dict(self.wait(done, timeout, f"run {name} finished", interval=0.5))

    def events(self, name: str | None = None) -> list[Any]:
        core = k8s.CoreV1Api(self.api)
        selector = f"involvedObject.name={name}" if name else None
        return list(core.list_namespaced_event(self.namespace, field_selector=selector).items)

    def mongodb_errors(self) -> list[str]:
        """Every MongoDB command the operator gave up on (a permanent error: bad document,
        unknown command, refused): its `MongoDBError` Warning Events."""
        return [
            f"{e.involved_object.name}: {e.message}"
            for e in self.events()
            if e.reason == "MongoDBError"
        ]

    def refused_commands(self) -> list[str]:
        """Commands a member refused for want of authentication or privileges, as the
        operator logged them or said in Events."""
        lines = [line for line in self.operator_log().splitlines() if REFUSED.search(line)]
        events = [e.message or "" for e in self.events() if REFUSED.search(e.message or "")]
        return lines + events

    def query(self, promql: str) -> list[dict[str, Any]]:
        body = self.prometheus("query", {"query": promql})
        assert body.get("status") == "success", f"{body.get('error')}: {promql}"
        result: list[dict[str, Any]] = body["data"]["result"]
        return result


def event_time(event: Any) -> datetime:
    stamp = event.last_timestamp or event.event_time or event.first_timestamp
    assert stamp is not None, event
    return stamp


class Backend(abc.ABC):
    name: str

    @abc.abstractmethod
    def env(
        self, slug: str, *, clusters: Sequence[Manifest] = (), clients: bool = False
    ) -> AbstractContextManager[Env]:
        """A fresh namespace (Pod Security `restricted`) with an operator watching it.

        `clusters`: the MongoClusters the scenario will create, each at its largest shape (the
        local backend serves a wire-model peer for every member name before its operator
        starts). `clients`: benchmark client pods will run (the local backend executes them
        against FerretDB)."""

    @abc.abstractmethod
    def collect_open(self) -> None:
        """A test failed: keep what the open Envs' namespaces hold for the post-mortem."""

    @abc.abstractmethod
    def close(self) -> None:
        """End of the session."""


def http_json(url: str, params: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
    """GET with query parameters; the JSON body, also of an error status (Prometheus answers
    a bad query with 400 and a JSON error)."""
    full = f"{url}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(full, timeout=timeout) as resp:
            body: dict[str, Any] = json.load(resp)
    except urllib.error.HTTPError as e:
        body = json.load(e)
    return body
