"""Cluster tier, against a real kube-apiserver (v1.32): the operator reads one step's results,
not every run's. The ConfigMaps are made by the runner's own sink (the labels it writes) and
listed through the operator's client, so the label selector is the apiserver's to judge.

With 200 runs in a namespace, listing every result ConfigMap on each collection made the
operator decode megabytes per step (make bench-scale)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from localplane.plane import Plane
from mongobench.benchmarkrun.act.orchestrate import result_configmaps
from mongobench.benchmarkrun.build import results
from mongobench.k8s import client as kube
from mongobench.k8s.api import KubeClient
from mongobench.k8s.credentials import from_kubeconfig
from mongobench_results.configmaps import assemble
from mongobench_runner.sinks import ConfigMapSink

pytestmark = pytest.mark.cluster

DOC = {"status": "Succeeded", "operationsTotal": 10}


@pytest.fixture
def operator_api(bare_plane: Plane) -> Iterator[KubeClient]:
    """The operator's own client, as the operator's state builds it at start-up."""
    api = kube.ApiClient(from_kubeconfig([bare_plane.kubeconfig]))
    try:
        yield KubeClient(api)
    finally:
        api.close()


def write(api: KubeClient, namespace: str, name: str, *, old_runner: bool = False) -> None:
    """A client's result as the runner's ConfigMap sink writes it; `old_runner`: as a runner
    image from before the result-set label wrote it (still running under an upgraded operator)."""
    for cm in ConfigMapSink(namespace, name, api=None).manifests(DOC):  # type: ignore[arg-type]
        if old_runner:
            del cm["metadata"]["labels"][results.RESULT_SET]
        api.create(cm)


def names(configmaps: list[dict[str, Any]]) -> set[str]:
    return {cm["metadata"]["name"] for cm in configmaps}


def test_a_step_reads_its_own_results_and_an_older_runners_too(
    operator_api: KubeClient, namespace: str
) -> None:
    api = operator_api
    for client in (0, 1):
        write(api, namespace, f"r1-0-load-c{client}")
        write(api, namespace, f"r1-1-run-a-c{client}")
        write(api, namespace, f"r2-0-load-c{client}")
    write(api, namespace, "r3-0-load-c0", old_runner=True)
    write(api, namespace, "r3-0-load-c1")

    # One step, and two steps in one request (the archive's upload): nothing of other runs.
    assert names(result_configmaps(api, namespace, ["r1-0-load"], 2)) == {
        "r1-0-load-c0-p0",
        "r1-0-load-c1-p0",
    }
    both = result_configmaps(api, namespace, ["r1-0-load", "r1-1-run-a"], 2)
    assert names(both) == {f"r1-{s}-c{c}-p0" for s in ("0-load", "1-run-a") for c in (0, 1)}
    assert len(assemble(both, "r1-1-run-a", 2).documents) == 2

    # A client of an older runner has no result-set label: it is still found, not lost.
    got = assemble(result_configmaps(api, namespace, ["r3-0-load"], 2), "r3-0-load", 2)
    assert got.missing == [] and got.documents == [DOC, DOC]

    # A client that never reported stays missing (and costs the wider read, nothing more).
    got = assemble(result_configmaps(api, namespace, ["r1-0-load"], 3), "r1-0-load", 3)
    assert got.missing == [2] and len(got.documents) == 2
