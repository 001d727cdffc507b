"""Unit tier: one side of a duet (spec.duet, set by a BenchmarkExperiment of order Duet) as its
step Jobs carry it: the step barrier shared with the partner run (B's keys after A's), the
client pods paired by index on one node, the clients' Role allowed that barrier, and the other
side's pods kept out of the noisy-neighbour check."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mongobench.api import BenchmarkRunSpec
from mongobench.api.benchmarkrun import Duet
from mongobench.benchmarkrun.build import jobs
from mongobench.benchmarkrun.decide.plan import Step, make_plan
from mongobench.benchmarkrun.telemetry.cpu_status import duet_selectors

pytestmark = pytest.mark.unit

REF = jobs.RunRef("x-c1-r1", "ns", "uid-1", "k1-connection", "uri", "x-k1", "ycsb:test")


def side(parallelism: int, duet: dict[str, Any] | None) -> tuple[BenchmarkRunSpec, jobs.RunRef]:
    body: dict[str, Any] = {
        "clusterRef": {"name": "x-k1"},
        "workloads": [{"name": "a"}],
        "clients": {"parallelism": parallelism},
    }
    if duet:
        body["duet"] = duet
    spec = BenchmarkRunSpec.parse(body)
    return spec, replace(REF, duet=spec.duet)


def run_step(spec: BenchmarkRunSpec) -> Step:
    return next(s for s in make_plan(spec) if s.kind == "run")


def _arg(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_side_b_meets_side_a_at_the_pairs_barrier_after_as_keys() -> None:
    spec, ref = side(1, {"name": "x-r1", "side": 1, "peerParallelism": 2})
    step = run_step(spec)
    job = jobs.build_job(spec, step, ref)
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    # One client, yet a barrier: the partner's two clients start with it.
    assert jobs.uses_barrier(spec, ref, step)
    assert _arg(args, "--barrier") == f"configmap:ns/{step.job_name('x-r1')}-barrier"
    assert (_arg(args, "--barrier-offset"), _arg(args, "--barrier-clients")) == ("2", "3")
    # Side A of the same pair names the same ConfigMap, keys from 0.
    spec_a, ref_a = side(2, {"name": "x-r1", "side": 0, "peerParallelism": 1})
    args_a = jobs.runner_args(spec_a, run_step(spec_a), replace(ref_a, name="x-c0-r1"))
    assert _arg(args_a, "--barrier") == _arg(args, "--barrier")
    assert (_arg(args_a, "--barrier-offset"), _arg(args_a, "--barrier-clients")) == ("0", "3")
    # The clients' Role may read and patch it; the operator creates it with the Job.
    role = jobs.build_client_rbac(ref, [step])[1]
    assert f"{step.job_name('x-r1')}-barrier" in role["rules"][1]["resourceNames"]
    assert jobs.build_barrier(spec, step, ref)["metadata"]["name"] == (
        f"{step.job_name('x-r1')}-barrier"
    )


def test_each_client_pod_joins_the_node_of_the_partners_client_of_its_index() -> None:
    spec, ref = side(2, {"name": "x-r1", "side": 1, "peerParallelism": 2})
    step = run_step(spec)
    template = jobs.build_job(spec, step, ref)["spec"]["template"]
    assert template["metadata"]["labels"][jobs.DUET_LABEL] == "x-r1"
    terms = template["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms == [
        {
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {
                "matchLabels": {jobs.DUET_LABEL: "x-r1", jobs.STEP_LABEL: str(step.index)}
            },
            "matchLabelKeys": ["batch.kubernetes.io/job-completion-index"],
        }
    ]


def test_a_rerun_attempt_has_no_partner_and_a_run_without_duet_is_unchanged() -> None:
    spec, ref = side(1, {"name": "x-r1", "side": 0, "peerParallelism": 1})
    rerun = replace(run_step(spec), attempt=2)
    assert not jobs.uses_barrier(spec, ref, rerun)  # one client, its own start
    assert (
        jobs.DUET_LABEL
        not in jobs.build_job(spec, rerun, ref)["spec"]["template"]["metadata"]["labels"]
    )
    plain, plain_ref = side(1, None)
    assert plain.duet is None
    assert not jobs.uses_barrier(plain, plain_ref, run_step(plain))
    assert spec.duet == Duet("x-r1", 0, 1) and spec.duet.offset == 0


def test_the_other_sides_pods_are_no_noisy_neighbours_of_a_duet_run() -> None:
    # The neighbour check leaves out the pods these select: the pair's clients and the pods of
    # the duet the run's own cluster is in (both sides' database pods carry its name).
    own_cluster = [{"metadata": {"name": "x-k1-rs0-0", "labels": {jobs.DUET_LABEL: "x"}}}]
    run = {"spec": {"duet": {"name": "x-r2", "side": 1, "peerParallelism": 1}}}
    assert duet_selectors(run, own_cluster) == [
        "mongobench.io/duet=x-r2",
        "mongobench.io/duet=x",
    ]
    assert duet_selectors({"spec": {}}, own_cluster) == []  # alone: every other pod counts
