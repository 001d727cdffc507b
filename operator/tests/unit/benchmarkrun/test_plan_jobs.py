"""Unit tier: the BenchmarkRun plan (order, reloads, names) and the step Job builder.

The Jobs of a run with user scenarios are also kept byte for byte in golden/; regenerate after an
intended change, then review the diff:
    UPDATE_GOLDEN=1 .venv/bin/pytest operator/tests/unit/benchmarkrun/test_plan_jobs.py
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from rendered import to_yaml

from mongobench.api import BenchmarkRunSpec
from mongobench.benchmarkrun.build.jobs import (
    RunRef,
    build_barrier,
    build_client_rbac,
    build_job,
    cluster_ca_secret,
    runner_args,
    uses_barrier,
    ycsb_properties,
)
from mongobench.benchmarkrun.decide.plan import make_plan

pytestmark = pytest.mark.unit


def spec(**overrides: Any) -> BenchmarkRunSpec:
    base: dict[str, Any] = {
        "clusterRef": {"name": "c"},
        "workloads": [{"name": w} for w in "abcdef"],
        "repetitions": 2,
    }
    base.update(overrides)
    return BenchmarkRunSpec.parse(base)


def labels(s: BenchmarkRunSpec) -> list[str]:
    return [step.label for step in make_plan(s)]


def test_default_plan_loads_once_and_runs_inserting_workloads_last() -> None:
    assert labels(spec()) == [
        "prepare", "load",
        "run a #1", "run a #2", "run b #1", "run b #2", "run c #1", "run c #2",
        "run f #1", "run f #2", "run d #1", "run d #2", "run e #1", "run e #2",
        "cleanup",
    ]  # fmt: skip


def test_reload_between_repetitions_and_as_written_order() -> None:
    s = spec(
        workloads=[{"name": "d"}, {"name": "a"}],
        dataReset={"between": "Repetitions", "insertingWorkloads": "AsWritten"},
    )
    assert labels(s) == [
        "prepare", "load", "run d #1", "reload", "run d #2",
        "reload", "run a #1", "reload", "run a #2", "cleanup",
    ]  # fmt: skip


def test_load_repetitions_reload_from_empty_and_the_run_phase_follows_the_last() -> None:
    s = spec(workloads=[{"name": "a"}], repetitions=1, load={"repetitions": 3})
    plan = make_plan(s)
    assert labels(s) == ["prepare", "load #1", "load #2", "load #3", "run a #1", "cleanup"]
    loads = [st for st in plan if st.kind == "load"]
    # The first load follows prepare's drop; each later one drops and recreates first.
    assert [st.reset for st in loads] == [False, True, True]
    assert len({st.job_name("r") for st in plan}) == len(plan)


def test_load_properties_reach_the_load_step_only() -> None:
    s = spec(
        driver="locust",
        workloads=[{"name": "c"}],
        load={
            "batchSize": 1,
            "scenario": {"configMapRef": {"name": STUDY, "key": "bulk_insert.py"}},
            "properties": {"processes": "128", "batchsize": "1000"},
        },
    )
    plan = make_plan(s)
    load = runner_args(s, next(st for st in plan if st.kind == "load"), REF)
    assert "processes=128" in load and "batchsize=1000" in load
    # The spec's batchSize comes first; the user's property overrides it (last -p wins).
    assert load.index("batchsize=1000") > load.index("batchsize=1")
    run = runner_args(s, next(st for st in plan if st.kind == "run"), REF)
    assert "processes=128" not in run


def test_reload_policy_reloads_around_inserting_workloads_only() -> None:
    s = spec(
        workloads=[{"name": "a"}, {"name": "e"}, {"name": "b"}],
        repetitions=1,
        dataReset={"insertingWorkloads": "Reload"},
    )
    assert labels(s) == [
        "prepare",
        "load",
        "run a #1",
        "reload",
        "run e #1",
        "reload",
        "run b #1",
        "cleanup",
    ]


def test_custom_workload_with_inserts_counts_as_inserting_and_warmup_precedes_first_rep() -> None:
    s = spec(
        workloads=[
            {"name": "mixed", "base": "a", "properties": {"insertproportion": "0.1"}},
            {"name": "c"},
        ],
        repetitions=1,
        warmup={"operationCount": 100},
    )
    assert labels(s) == [
        "prepare", "load", "warmup c", "run c #1", "warmup mixed", "run mixed #1", "cleanup",
    ]  # fmt: skip


def test_plan_is_deterministic_and_job_names_fit() -> None:
    long_name = "a-very-long-benchmark-run-name-that-goes-on-and-on-and-on"
    names = [step.job_name(long_name) for step in make_plan(spec()) if step.runs_job]
    assert names == [step.job_name(long_name) for step in make_plan(spec()) if step.runs_job]
    assert len(set(names)) == len(names)
    assert all(len(n) <= 52 for n in names)


REF = RunRef("r1", "ns", "uid-1", "c-connection", "uri", "c", "ghcr.io/mongobench/ycsb:0.1.0")


def test_job_splits_clients_by_index_and_carries_no_secret() -> None:
    s = spec(clients={"parallelism": 3}, run={"operationCount": 3000, "threads": 8})
    step = next(st for st in make_plan(s) if st.kind == "run")
    job = build_job(s, step, REF)
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 3
    (container,) = job["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    assert args[:2] == ["ycsb", "--phase"]
    assert "$(JOB_COMPLETION_INDEX)" in args[args.index("--client-index") + 1]
    assert (
        args[args.index("--output") + 1]
        == f"configmap:ns/{step.job_name('r1')}-c$(JOB_COMPLETION_INDEX)"
    )
    assert "operationcount=3000" in args
    uri_env = next(e for e in container["env"] if e["name"] == "MONGOBENCH_URI")
    assert uri_env["valueFrom"]["secretKeyRef"] == {"name": "c-connection", "key": "uri"}
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert labels["mongobench.io/component"] == "benchmark-client"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "BenchmarkRun"


def test_connection_per_thread_reaches_every_step_of_both_drivers_and_is_off_by_default() -> None:
    prop = "mongobench.connectionPerThread=true"
    for driver in ("ycsb", "locust"):
        s = spec(driver=driver, clients={"connectionPerThread": True})
        steps = [st for st in make_plan(s) if st.kind in ("load", "run")]
        assert all(prop in runner_args(s, st, REF) for st in steps)
    default = spec()
    steps = [st for st in make_plan(default) if st.kind in ("load", "run")]
    assert not any(prop in runner_args(default, st, REF) for st in steps)


def test_job_builder_takes_128_clients_and_the_crd_admits_up_to_256() -> None:
    s = spec(clients={"parallelism": 128}, run={"operationCount": 12800})
    step = next(st for st in make_plan(s) if st.kind == "run")
    job = build_job(s, step, REF)
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 128
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["args"][container["args"].index("--clients") + 1] == "128"
    # the last client's pod (<job>-127-xxxxx) and result ConfigMap names still fit
    assert len(f"{step.job_name('r1')}-127-abcde") <= 63
    crd = yaml.safe_load(
        (Path(__file__).parents[4] / "crds" / "mongobench.io_benchmarkruns.yaml").read_text()
    )
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert schema["properties"]["clients"]["properties"]["parallelism"]["maximum"] == 256


def test_job_pod_is_restricted_profile_compliant() -> None:
    s = spec()
    job = build_job(s, make_plan(s)[1], REF)
    pod = job["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (c,) = pod["containers"]
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_duration_only_run_and_passthrough_properties() -> None:
    s = spec(
        workloads=[{"name": "scan", "base": "e", "properties": {"scanproportion": "0.9"}}],
        run={"durationSeconds": 600, "properties": {"hotspotdatafraction": "0.3"}},
        mongo={"writeConcern": "majority"},
    )
    step = next(st for st in make_plan(s) if st.kind == "run")
    args = runner_args(s, step, REF)
    assert "maxexecutiontime=600" in args and "operationcount=0" in args
    assert "scanproportion=0.9" in args and "hotspotdatafraction=0.3" in args
    assert "mongodb.writeConcern=majority" in args
    assert args[args.index("--workload") + 1] == "e"


def test_client_role_may_only_write_configmaps() -> None:
    _, role, binding = build_client_rbac(REF)
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "update"]}
    ]
    assert binding["subjects"][0]["name"] == REF.service_account


def test_parallel_clients_meet_at_their_steps_barrier_and_may_touch_only_the_barriers() -> None:
    s = spec(clients={"parallelism": 3, "startTimeoutSeconds": 90})
    plan = make_plan(s)
    job_steps = [st for st in plan if st.runs_job]
    step = next(st for st in plan if st.kind == "run")
    args = runner_args(s, step, REF)
    assert args[args.index("--barrier") + 1] == f"configmap:ns/{step.job_name('r1')}-barrier"
    assert args[args.index("--barrier-timeout") + 1] == "90"
    barrier = build_barrier(s, step, REF)
    assert barrier["metadata"]["name"] == f"{step.job_name('r1')}-barrier"
    assert "data" not in barrier  # the clients own its keys
    assert barrier["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    _, role, _ = build_client_rbac(REF, job_steps)
    assert role["rules"][1] == {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "verbs": ["get", "patch"],
        "resourceNames": [f"{st.job_name('r1')}-barrier" for st in job_steps],
    }


def test_one_client_or_the_diagnostic_switch_means_no_barrier() -> None:
    one = spec()
    step = next(st for st in make_plan(one) if st.kind == "run")
    assert "--barrier" not in runner_args(one, step, REF)
    three = spec(clients={"parallelism": 3})
    off = replace(REF, start_barrier=False)
    assert not uses_barrier(three, off, step)
    assert "--barrier" not in runner_args(three, step, off)


def test_every_inserting_step_gets_an_insert_range_of_its_own() -> None:
    s = spec(clients={"parallelism": 3})
    offsets: dict[str, str] = {}
    for step in make_plan(s):
        if step.kind != "run":
            continue
        props = dict(ycsb_properties(s, step))
        if step.workload in ("d", "e"):
            offsets[step.label] = props["mongobench.insertoffset"]
        else:
            assert "mongobench.insertoffset" not in props
        # Inserts are inserts: no upsert is forced on the user to hide collisions.
        assert props["mongodb.upsert"] == "false"
        # The clients use the database prepare and cleanup work on, not the URI's.
        assert props["mongodb.database"] == s.database
    assert sorted(offsets) == ["run d #1", "run d #2", "run e #1", "run e #2"]
    assert len(set(offsets.values())) == 4


STUDY = "bench-jobs-scenarios"


def scenario_spec(**overrides: Any) -> BenchmarkRunSpec:
    def ref(key: str) -> dict[str, Any]:
        return {"configMapRef": {"name": STUDY, "key": key}}

    return spec(
        driver="locust",
        load={"recordCount": 1000, "batchSize": 100, "scenario": ref("bulk_insert.py")},
        workloads=[
            {"name": "find", "scenario": ref("scatter_gather_find.py")},
            {"name": "bulk", "scenario": ref("bulk_insert.py"), "properties": {"batchsize": "500"}},
            {"name": "c"},
        ],
        **overrides,
    )


def test_scenario_steps_mount_their_configmap_and_name_the_file() -> None:
    s = scenario_spec()
    plan = make_plan(s)
    by_label = {st.label: st for st in plan}
    load = build_job(s, by_label["load"], REF)
    pod = load["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["volumes"] == [
        {"name": "scenario", "configMap": {"name": STUDY, "defaultMode": 0o444}}
    ]
    assert container["volumeMounts"] == [
        {"name": "scenario", "mountPath": "/etc/mongobench/scenario", "readOnly": True}
    ]
    args = container["args"]
    assert args[:2] == ["locust", "--phase"]
    assert args[args.index("--scenario") + 1] == "/etc/mongobench/scenario/bulk_insert.py"
    assert args[args.index("--workload") + 1] == "bulk_insert"
    assert "batchsize=100" in args

    run = runner_args(s, by_label["run bulk #1"], REF)
    assert run[run.index("--scenario") + 1] == "/etc/mongobench/scenario/bulk_insert.py"
    assert run[run.index("--workload") + 1] == "bulk"  # the document names the workload
    assert "batchsize=500" in run  # a scenario's parameters are its workload's properties
    # Whether a scenario inserts is its own business: every scenario step gets a key range.
    offsets = {
        st.label: dict(ycsb_properties(s, st)).get("mongobench.insertoffset")
        for st in plan
        if st.kind == "run"
    }
    assert offsets["run find #1"] and offsets["run bulk #1"] and offsets["run c #1"] is None

    # YCSB's own workloads of the same run mount nothing.
    plain = build_job(s, by_label["run c #1"], REF)["spec"]["template"]["spec"]
    assert "volumes" not in plain and "volumeMounts" not in plain["containers"][0]
    assert "--scenario" not in plain["containers"][0]["args"]


def test_scenario_workloads_keep_their_written_order() -> None:
    # RunLast moves inserting workloads last; it cannot tell whether a scenario inserts.
    assert labels(scenario_spec(repetitions=1)) == [
        "prepare", "load", "run find #1", "run bulk #1", "run c #1", "cleanup",
    ]  # fmt: skip
    assert scenario_spec().scenarios()[0][0] == "load"


def test_scenario_jobs_match_golden() -> None:
    s = scenario_spec(repetitions=1, clients={"parallelism": 2})
    ref = replace(REF, image="ghcr.io/mongobench/locust:0.1.0", cluster=None)
    rendered = to_yaml([build_job(s, st, ref) for st in make_plan(s) if st.runs_job])
    path = Path(__file__).parent / "golden" / "jobs-locust-scenarios.yaml"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(rendered)
    assert path.read_text() == rendered, "jobs changed; see the module docstring to regenerate"


def test_clients_of_a_tls_cluster_get_its_ca_and_nothing_else_of_its_secret() -> None:
    cluster = {"metadata": {"name": "c"}, "spec": {"tls": {"enabled": True}}}
    ref = replace(REF, tls_ca_secret=cluster_ca_secret(cluster))
    s = scenario_spec()
    load = {st.label: st for st in make_plan(s)}["load"]
    pod = build_job(s, load, ref)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert {"name": "MONGOBENCH_TLS_CA_FILE", "value": "/etc/mongobench-tls/ca.crt"} in container[
        "env"
    ]
    ca = next(v for v in pod["volumes"] if v["name"] == "cluster-ca")
    # The client certificate's Secret also holds the operator's key: only ca.crt is projected.
    assert ca["secret"]["secretName"] == "c-client-tls"
    assert ca["secret"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}]
    assert {v["name"] for v in pod["volumes"]} == {"cluster-ca", "scenario"}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts == {"cluster-ca": "/etc/mongobench-tls", "scenario": "/etc/mongobench/scenario"}

    assert cluster_ca_secret({**cluster, "spec": {"tls": {"enabled": False}}}) is None
    assert cluster_ca_secret(None) is None


def test_jvm_options_reach_the_ycsb_client_after_the_images_own() -> None:
    s = spec(clients={"jvmOptions": ["-XX:TieredStopAtLevel=1", "-Xmx512m"]})
    step = next(st for st in make_plan(s) if st.kind == "run")
    args = runner_args(s, step, REF)
    assert "--java-opts=-XX:TieredStopAtLevel=1 -Xmx512m" in args
    # The runner reads it as the value it is (a separate "-XX:..." word would be an option):
    # the contract with the client image's runner, parsed by the runner itself.
    from mongobench_runner.__main__ import parser as runner_parser

    # (the kubelet expands $(JOB_COMPLETION_INDEX) before the runner sees it)
    expanded = [a.replace("$(JOB_COMPLETION_INDEX)", "0") for a in args]
    parsed = runner_parser().parse_args(expanded)
    assert parsed.java_opts == "-XX:TieredStopAtLevel=1 -Xmx512m"
    # None given: the image's JAVA_OPTS alone, as before.
    assert not any(a.startswith("--java-opts") for a in runner_args(spec(), step, REF))


def test_the_client_warm_up_reaches_the_measured_steps_only() -> None:
    s = spec(run={"durationSeconds": 25, "warmupSeconds": 5})
    plan = make_plan(s)
    run = next(st for st in plan if st.kind == "run")
    load = next(st for st in plan if st.kind == "load")
    assert "mongobench.warmupseconds=5" in runner_args(s, run, REF)
    assert not any("warmupseconds" in a for a in runner_args(s, load, REF))
    assert not any("warmupseconds" in a for a in runner_args(spec(), run, REF))
