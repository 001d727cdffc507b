"""The parts of the backends that only the kind backend runs, as far as they run without a kind
cluster (unit tier: a member's DNS name as a port-forward target, kubectl's answer parsed, the
port-forward processes with a stand-in kubectl; cluster tier: the backend refusing a cluster
without the chart), the namespace names both use, and that both implement the whole interface."""

from __future__ import annotations

import inspect
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from backends.base import Backend, Env, namespace_name
from backends.kind import (
    CLIENT_SELECTOR,
    KindBackend,
    KindEnv,
    PortForwards,
    forward_target,
    forwarded_port,
)
from backends.local import LocalBackend, LocalEnv
from localplane.plane import Plane


@pytest.mark.unit
def test_member_and_mongos_names_become_port_forward_targets() -> None:
    assert forward_target("rs3-rs0-1.rs3-rs0-hl.e2e-a-1.svc.cluster.local:27017") == (
        "e2e-a-1",
        "pod/rs3-rs0-1",
        27017,
    )
    assert forward_target("sh-mongos.e2e-b-2.svc.cluster.local:27017") == (
        "e2e-b-2",
        "svc/sh-mongos",
        27017,
    )


@pytest.mark.unit
def test_forwarded_port_is_read_from_kubectls_line() -> None:
    assert forwarded_port(b"Forwarding from 127.0.0.1:41231 -> 27017\n") == 41231
    assert forwarded_port(b"Handling connection for 41231\n") is None
    assert forwarded_port(b"Forwarding from [::1]:41231 -> 27017\n") is None


@pytest.mark.unit
def test_namespace_names_are_valid_and_distinct() -> None:
    names = {namespace_name("Delete-Retain / rs_ready " * 3) for _ in range(50)}
    assert len(names) == 50
    for name in names:
        assert len(name) <= 63 and name.startswith("e2e-")
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name  # a DNS-1123 label


@pytest.mark.unit
@pytest.mark.parametrize(("impl", "base"), [(LocalBackend, Backend), (KindBackend, Backend),
                                             (LocalEnv, Env), (KindEnv, Env)])  # fmt: skip
def test_both_backends_implement_the_whole_interface(impl: type, base: type) -> None:
    assert not inspect.isabstract(impl), getattr(impl, "__abstractmethods__", None)
    assert issubclass(impl, base)


@pytest.mark.unit
def test_kind_says_what_each_failed_client_printed() -> None:
    """A failed step names its Job; the kind backend's post-mortem adds the clients' own words:
    the logs of the failed client pods, asked of kubectl by the clients' label."""
    asked: list[tuple[str, ...]] = []

    def kubectl(*args: str, input: str | None = None, check: bool = True) -> Any:
        asked.append(args)
        out = "pod/af-03-run-a-0-x1\n" if args[0] == "get" else "YCSB: connection refused\n"
        return subprocess.CompletedProcess(args, 0, stdout=out, stderr="")

    backend = SimpleNamespace(api=None, forwards=None, kubectl=kubectl)
    env = KindEnv(backend, "e2e-b-1")  # type: ignore[arg-type]
    assert env.client_failures() == ["pod/af-03-run-a-0-x1:\nYCSB: connection refused\n"]
    assert CLIENT_SELECTOR in asked[0] and "--field-selector=status.phase=Failed" in asked[0]
    assert asked[1][:4] == ("logs", "-n", "e2e-b-1", "pod/af-03-run-a-0-x1")


@pytest.mark.unit
def test_port_forwards_start_reuse_and_restart_kubectl(tmp_path: Path) -> None:
    # A stand-in for kubectl: prints what `kubectl port-forward` prints, then keeps running.
    calls = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{calls}"\n'
        'case "$*" in *pod/gone*) echo "error: pods \\"gone\\" not found" >&2; exit 1;; esac\n'
        "echo 'Forwarding from 127.0.0.1:41231 -> 27017'\n"
        "exec sleep 30\n"
    )
    fake.chmod(0o755)
    forwards = PortForwards([str(fake)])
    try:
        first = forwards.address("ns", "pod/rs-0", 27017)
        assert first == "127.0.0.1:41231"
        assert forwards.address("ns", "pod/rs-0", 27017) == first  # reused while it runs
        forwards.forget("ns", "pod/rs-0", 27017)
        assert forwards.address("ns", "pod/rs-0", 27017) == first  # started again
        started = calls.read_text().splitlines()
        assert started == ["port-forward -n ns --address 127.0.0.1 pod/rs-0 :27017"] * 2
        with pytest.raises(RuntimeError, match='pods "gone" not found'):
            forwards.address("ns", "pod/gone", 27017, timeout=5)
    finally:
        forwards.close()
    assert not forwards._procs


@pytest.mark.cluster
def test_the_kind_backend_refuses_a_cluster_without_the_chart(plane: Plane, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="no mongobench operator is ready in mongobench"):
        KindBackend(str(plane.kubeconfig), tmp_path)
