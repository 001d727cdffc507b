"""The start barrier of a step's parallel clients: they begin their measured phase together.

Like k6-operator's synchronised start, but without a coordinator: each client, once connected and
initialised, records its ready instant under its own key in the step's barrier (one ConfigMap,
created by the operator with the Job; or a folder for local runs). When every client of the step
is ready, each computes the same start instant, the latest ready instant plus a margin that
covers the others' polling, and starts then. A client that fails before the start says so in the
barrier, and the others give up at once; a client that never becomes ready fails the step after
the timeout, with the indexes of the clients that were missing.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mongobench_results.document import iso_us
from mongobench_runner.sinks import KubeApi

MARGIN_US = 1_000_000  # the start is this long after the last client was ready
FAILED_PREFIX = "failed:"


class BarrierError(RuntimeError):
    """The step cannot start together: a one-line reason for the result document."""


class Store(Protocol):
    def announce(self, index: int, value: str) -> None:
        """Records this client's entry: its ready instant (epoch microseconds) or a failure."""
        ...

    def entries(self) -> dict[int, str]:
        """Every client's entry so far."""
        ...


@dataclass(frozen=True)
class Opening:
    start_us: int  # the common start instant, epoch microseconds
    ready_us: dict[int, int]  # each client's ready instant
    waited_s: float  # how long this client waited at the barrier


def start_instant(ready_us: Mapping[int, int], margin_us: int = MARGIN_US) -> int:
    """Pure: every client computes this from the same entries, so they agree on the start."""
    return max(ready_us.values()) + margin_us


def poll_interval(clients: int) -> float:
    """Seconds between barrier reads: the step's clients together read about 80 times a
    second, however many they are (0.1 s up to 8 clients, 3.2 s at 256)."""
    return 0.1 * max(1.0, clients / 8)


def start_margin_us(poll_s: float) -> int:
    """The start's margin covers a client that sees the last entry a whole poll late, plus a
    quarter poll for the read itself, so no client starts late: 1 s at least (up to 64
    clients, as before), 4 s at 256."""
    return max(MARGIN_US, round(1.25 * poll_s * 1e6))


def wait(
    store: Store,
    index: int,
    clients: int,
    ready_us: int,
    *,
    timeout_s: float,
    poll_s: float | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Opening:
    """Announces this client ready and blocks until every client is; BarrierError otherwise."""
    store.announce(index, str(ready_us))
    poll = poll_s if poll_s is not None else poll_interval(clients)
    begun = monotonic()
    while True:
        entries = store.entries()
        failed = {i: v for i, v in entries.items() if v.startswith(FAILED_PREFIX)}
        if failed:
            i, why = min(failed.items())
            raise BarrierError(
                f"client {i} failed before the common start: "
                f"{why.removeprefix(FAILED_PREFIX).strip()}"
            )
        ready = {i: int(v) for i, v in entries.items() if i < clients and v.isdigit()}
        if len(ready) == clients:
            return Opening(start_instant(ready, start_margin_us(poll)), ready, monotonic() - begun)
        if monotonic() - begun > timeout_s:
            missing = sorted(set(range(clients)) - set(ready))
            raise BarrierError(
                f"start barrier: clients {missing} of {clients} were not ready within "
                f"{timeout_s:g} s (pods not scheduled or started, or not connecting)"
            )
        sleep(poll)


def fail(store: Store, index: int, reason: str) -> None:
    """Tells the other clients this one will not start (best effort)."""
    with contextlib.suppress(OSError, BarrierError):
        store.announce(index, f"{FAILED_PREFIX} {reason}"[:1000])


@dataclass
class DirStore:
    """Local processes: one file per client in a shared folder."""

    path: Path

    def announce(self, index: int, value: str) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.path / f".c{index}.tmp"
        tmp.write_text(value)
        tmp.replace(self.path / f"c{index}")

    def entries(self) -> dict[int, str]:
        if not self.path.is_dir():
            return {}
        out = {}
        for f in self.path.glob("c*"):
            if f.name[1:].isdigit():
                out[int(f.name[1:])] = f.read_text().strip()
        return out


@dataclass
class ConfigMapStore:
    """In a cluster: the step's barrier ConfigMap, one data key per client (merge patches never
    conflict). The client Role allows get and patch on exactly the run's barrier ConfigMaps."""

    namespace: str
    name: str
    api: KubeApi

    @property
    def path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/configmaps/{self.name}"

    def announce(self, index: int, value: str) -> None:
        status, body = self.api.request(
            "PATCH",
            self.path,
            {"data": {f"c{index}": value}},
            content_type="application/merge-patch+json",
        )
        if status != 200:
            raise BarrierError(
                f"start barrier ConfigMap {self.namespace}/{self.name}: HTTP {status}: "
                f"{body.get('message', body)}"
            )

    def entries(self) -> dict[int, str]:
        status, body = self.api.request("GET", self.path)
        if status != 200:
            raise BarrierError(
                f"start barrier ConfigMap {self.namespace}/{self.name}: HTTP {status}: "
                f"{body.get('message', body)}"
            )
        data = body.get("data") or {}
        return {int(k[1:]): str(v) for k, v in data.items() if k[:1] == "c" and k[1:].isdigit()}


def parse_barrier(spec: str) -> Store:
    """`--barrier dir:PATH` or `--barrier configmap:NAMESPACE/NAME`."""
    kind, sep, rest = spec.partition(":")
    if kind == "dir" and sep and rest:
        return DirStore(Path(rest))
    if kind == "configmap" and sep:
        namespace, slash, name = rest.partition("/")
        if slash and namespace and name:
            return ConfigMapStore(namespace, name, KubeApi.in_cluster())
    raise ValueError(f"--barrier {spec!r}: expected dir:PATH or configmap:NAMESPACE/NAME")


def describe(opening: Opening) -> dict[str, object]:
    """What the result document keeps of the barrier."""
    return {
        "startAt": iso_us(opening.start_us),
        "clientsReadyAt": {str(i): iso_us(us) for i, us in sorted(opening.ready_us.items())},
        "waitedSeconds": round(opening.waited_s, 3),
    }


@dataclass
class ClientGate:
    """One client's use of the barrier: `open` when its process is ready, `abandon` when it
    fails before the start."""

    store: Store
    index: int
    clients: int
    timeout_s: float
    opening: Opening | None = None

    @classmethod
    def of(cls, args: argparse.Namespace) -> ClientGate:
        """The gate `--barrier` and its options describe. A barrier shared with another run
        (a duet) keys this client at offset + index and waits for every client of both."""
        offset = getattr(args, "barrier_offset", 0) or 0
        total = getattr(args, "barrier_clients", None) or args.clients
        if not 0 <= offset <= total - args.clients:
            raise ValueError(
                f"--barrier-offset {offset} with --barrier-clients {total}: this run's "
                f"{args.clients} clients must fit in the barrier"
            )
        store = parse_barrier(args.barrier)
        return cls(store, offset + args.client_index, total, args.barrier_timeout)

    def open(self, ready_us: int) -> int:
        self.opening = wait(
            self.store, self.index, self.clients, ready_us, timeout_s=self.timeout_s
        )
        return self.opening.start_us

    def abandon(self, reason: str) -> None:
        fail(self.store, self.index, reason)
