"""Unit tier: the BenchmarkRun controller's I/O half (benchmarkrun.act.orchestrate, and the archive
upload of benchmarkrun.act.archive) against an in-memory Kubernetes API (fake_kube) and a recording
DataOps: what it creates, writes into status and tells in Events on each path a user can meet."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fake_kube import FakeKube, unit_clock

from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.benchmarkrun.act import archive, orchestrate
from mongobench.benchmarkrun.act.orchestrate import DataOps
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.benchmarkrun.telemetry.cpu import CpuUnavailable
from mongobench.clock import parse_rfc3339, rfc3339
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.k8s.client import ApiError
from mongobench.k8s.conditions import get_condition
from mongobench.mongo.errors import PermanentMongoError, TransientMongoError
from mongobench_results import configmaps, hdr
from mongobench_results.document import OpResult, Window, build_document, utc_now
from mongobench_results.validity import advice

pytestmark = pytest.mark.unit

NS = "ns"
CONFIG = OperatorConfig()
RUN_KIND = "BenchmarkRun"
SCENARIOS = "study"


def mongocluster(phase: str = cond.PHASE_READY, database: str = "ycsb") -> dict[str, Any]:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "MongoCluster",
        "metadata": {"namespace": NS, "name": "c"},
        "spec": {"auth": {"benchmarkDatabase": database}},
        "status": {"phase": phase},
    }


def benchmarkrun(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": RUN_KIND,
        "metadata": {"namespace": NS, "name": "r"},
        "spec": {"clusterRef": {"name": "c"}, "workloads": [{"name": "a"}], **spec},
    }


def locust(**spec: Any) -> dict[str, Any]:
    ref = {"configMapRef": {"name": SCENARIOS, "key": "find.py"}}
    return benchmarkrun(
        driver="locust",
        load={"scenario": ref},
        workloads=[{"name": "find", "scenario": ref}],
        **spec,
    )


class Data(DataOps):
    """The MongoDB side, recorded; `fails` is raised by the next prepare."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fails: Exception | None = None

    def prepare(self, spec: BenchmarkRunSpec, cluster: Any) -> str:
        self.calls.append("prepare")
        if self.fails is not None:
            raise self.fails
        return "collection ycsb.usertable recreated"

    def drop(self, spec: BenchmarkRunSpec, cluster: Any) -> str:
        self.calls.append("drop")
        return "collection ycsb.usertable dropped"


def advance(kube: FakeKube, data: Data | None = None) -> orchestrate.Outcome | None:
    return orchestrate.advance(kube, NS, "r", CONFIG, data or Data(), clock=unit_clock)


def status(kube: FakeKube) -> dict[str, Any]:
    run = kube.get(RUN_KIND, NS, "r")
    assert run is not None
    return dict(run.get("status") or {})


def step_phases(kube: FakeKube) -> list[str]:
    return [s["phase"] for s in status(kube)["steps"]]


def condition(kube: FakeKube, type_: str) -> tuple[str, str]:
    found = get_condition(status(kube).get("conditions"), type_)
    assert found is not None, type_
    return str(found["status"]), str(found["reason"])


def job_name(kube: FakeKube, index: int) -> str:
    run = kube.get(RUN_KIND, NS, "r")
    assert run is not None
    spec = BenchmarkRunSpec.parse(run["spec"])
    return make_plan(spec)[index].job_name("r")


def finish_job(kube: FakeKube, index: int, outcome: str = "Complete", message: str = "") -> None:
    name = job_name(kube, index)
    job = kube.objects[("Job", NS, name)]
    job["status"] = {
        "conditions": [{"type": outcome, "status": "True", "message": message}],
        "completionTime": rfc3339(unit_clock()),
    }


def report(
    kube: FakeKube, index: int, phase: str = "load", workload: str = "a", window_us: int = 3_000
) -> None:
    """The step's only client writes its result document, as the runner does: 3 operations of
    ~1 ms by one thread in `window_us` (the default 3 ms keeps Little's law: a valid trial)."""
    histogram = hdr.new_histogram()
    for value in (900, 1000, 1100):
        histogram.record_value(value)
    start = utc_now()
    document = build_document(
        driver="ycsb",
        driver_version="test",
        phase=phase,
        workload=workload,
        properties={},
        labels={},
        client_index=0,
        clients=1,
        threads=1,
        start=start,
        end=start,
        window=Window(1_700_000_000_000_000, 1_700_000_000_000_000 + window_us),
        operations={"INSERT": OpResult(histogram, {"OK": 3})},
        transactions=3,
        cpu_user_s=1.0,
        cpu_system_s=0.5,
        error=None,
        expected_ops=None,
        throttled=False,
    )
    # What the runner's ConfigMap sink writes.
    for configmap in configmaps.manifests(document, NS, f"{job_name(kube, index)}-c0"):
        kube.put(configmap)


@pytest.fixture
def kube() -> FakeKube:
    return FakeKube(mongocluster(), benchmarkrun())


def started(kube: FakeKube) -> None:
    """The run started, prepared its collection and, in the same pass, applied its load's Job."""
    advance(kube)
    assert step_phases(kube)[:2] == [cond.STEP_SUCCEEDED, cond.STEP_RUNNING]


# --- waiting and starting ----------------------------------------------------------------------


def test_a_run_waits_for_its_cluster_then_starts_by_preparing_the_collection() -> None:
    kube = FakeKube(benchmarkrun())
    data = Data()
    outcome = advance(kube, data)
    assert outcome is not None and outcome.phase == cond.PHASE_PENDING
    assert condition(kube, cond.CLUSTER_READY) == (cond.FALSE, cond.CLUSTER_NOT_FOUND)
    assert kube.events == [] and data.calls == []

    kube.put(mongocluster(cond.PHASE_PROVISIONING))
    advance(kube, data)
    assert condition(kube, cond.CLUSTER_READY) == (cond.FALSE, cond.CLUSTER_NOT_READY)
    assert "startTime" not in status(kube)

    kube.objects[("MongoCluster", NS, "c")]["status"]["phase"] = cond.PHASE_READY
    outcome = advance(kube, data)
    # Prepared, and the load's Job applied in the same pass (one status write for both).
    assert outcome is not None and outcome.phase == cond.RUN_LOADING
    assert data.calls == ["prepare"]
    now = status(kube)
    assert now["clusterSnapshot"]["name"] == "c" and "startTime" in now
    assert now["progress"]["summary"] == "2/6"
    assert kube.reasons() == [cond.EVENT_STARTED, cond.EVENT_PREPARED, cond.EVENT_STEP_STARTED]
    assert kube.verbs("patch_status", RUN_KIND) == ["r"] * 3
    assert {e[1] for e in kube.events} == {"r"}  # on the run


def test_a_database_the_clusters_user_may_not_write_refuses_the_run() -> None:
    kube = FakeKube(mongocluster(database="other"), benchmarkrun())
    outcome = advance(kube)
    assert outcome is not None and outcome.phase == cond.RUN_FAILED
    assert condition(kube, cond.CLUSTER_READY) == (cond.FALSE, cond.DATABASE_NOT_WRITABLE)
    assert condition(kube, cond.SUCCEEDED) == (cond.FALSE, cond.RUN_FAILED)
    assert kube.reasons() == [cond.RUN_FAILED]  # the run failed, no step did
    assert advance(kube) is None  # over: nothing more happens


def test_a_finished_deleted_or_absent_run_is_left_alone(kube: FakeKube) -> None:
    assert orchestrate.advance(kube, NS, "other", CONFIG, Data(), clock=unit_clock) is None
    kube.objects[(RUN_KIND, NS, "r")]["metadata"]["deletionTimestamp"] = rfc3339(unit_clock())
    assert advance(kube) is None
    assert kube.writes == []


# --- steps and their Jobs ----------------------------------------------------------------------


def test_a_step_creates_its_job_once_and_waits_for_it(kube: FakeKube) -> None:
    started(kube)
    outcome = advance(kube)
    load = job_name(kube, 1)
    assert outcome is not None and outcome.phase == cond.RUN_LOADING
    assert kube.verbs("apply", "Job") == [load]
    assert {"ServiceAccount", "Role", "RoleBinding"} <= {k for v, k, _ in kube.writes}
    assert step_phases(kube)[1] == cond.STEP_RUNNING
    assert kube.reasons()[-1] == cond.EVENT_STEP_STARTED
    writes = len(kube.writes)
    advance(kube)  # the Job runs: nothing to do, nothing to write
    assert len(kube.writes) == writes


def test_a_completed_job_is_collected_and_the_next_steps_job_applied_in_one_pass(
    kube: FakeKube,
) -> None:
    started(kube)
    report(kube, 1)
    finish_job(kube, 1)
    status_writes = len(kube.verbs("patch_status", RUN_KIND))
    outcome = advance(kube)
    assert outcome is not None and outcome.phase == cond.RUN_RUNNING
    load, run = status(kube)["steps"][1:3]
    assert load["phase"] == cond.STEP_SUCCEEDED and load["clientsReported"] == 1
    assert load["result"]["operationsTotal"] == 3
    assert condition(kube, cond.CPU_COLLECTED) == (cond.FALSE, cond.CPU_NOT_CONFIGURED)
    assert run["phase"] == cond.STEP_RUNNING and run["job"] == job_name(kube, 2)
    assert kube.verbs("apply", "Job") == [job_name(kube, 1), job_name(kube, 2)]
    assert len(kube.verbs("patch_status", RUN_KIND)) == status_writes + 1
    assert kube.reasons().count(cond.EVENT_STEP_STARTED) == 2


def test_the_clients_grants_go_with_the_first_job_and_with_every_job_of_a_growing_plan() -> None:
    kube = FakeKube(mongocluster(), benchmarkrun(repetitions=2))
    advance(kube)  # the load's Job, and the grants for every planned step's barrier
    for index, phase in ((1, "load"), (2, "run")):
        report(kube, index, phase)
        finish_job(kube, index)
        outcome = advance(kube)  # collected, the next Job applied
    assert kube.verbs("apply", "Job") == [job_name(kube, i) for i in (1, 2, 3)]
    assert kube.verbs("apply", "Role") == ["r-client"]  # once, for the run
    assert outcome is not None and outcome.status["phase"] == outcome.phase == cond.RUN_RUNNING
    assert outcome.status["steps"] == status(kube)["steps"]  # as written: nothing read again
    # Re-runs of invalid trials add steps (and barriers) as the run goes: every Job grants.
    kube = FakeKube(mongocluster(), benchmarkrun(repetitions=1, validity={"rerunInvalid": 1}))
    advance(kube)
    report(kube, 1)
    finish_job(kube, 1)
    advance(kube)
    assert kube.verbs("apply", "Role") == ["r-client"] * 2


def test_a_collect_that_fails_leaves_the_step_to_retry_and_applies_no_job(
    kube: FakeKube,
) -> None:
    started(kube)
    report(kube, 1)
    finish_job(kube, 1)
    kube.refuse("list", "ConfigMap", 500, "etcd timeout")
    with pytest.raises(ApiError):
        advance(kube)
    assert step_phases(kube)[1:3] == [cond.STEP_RUNNING, cond.STEP_PENDING]
    assert kube.verbs("apply", "Job") == [job_name(kube, 1)]
    del kube.refusals[("list", "ConfigMap")]
    advance(kube)  # the retry collects it, then starts the next step
    assert step_phases(kube)[1:3] == [cond.STEP_SUCCEEDED, cond.STEP_RUNNING]


def test_a_next_job_the_apiserver_refuses_in_the_same_pass_keeps_the_collected_step(
    kube: FakeKube,
) -> None:
    started(kube)
    report(kube, 1)
    finish_job(kube, 1)
    kube.refuse("apply", "Job", 500, "etcd timeout")
    advance(kube)
    assert step_phases(kube)[1:3] == [cond.STEP_SUCCEEDED, cond.STEP_PENDING]
    assert kube.reasons().count(cond.EVENT_STEP_STARTED) == 1  # the load's only
    del kube.refusals[("apply", "Job")]
    outcome = advance(kube)  # the next pass applies it
    assert outcome is not None and outcome.phase == cond.RUN_RUNNING
    assert kube.verbs("apply", "Job") == [job_name(kube, 1), job_name(kube, 2)]


def test_a_failed_job_fails_its_step_and_the_run_and_keeps_what_was_reported(
    kube: FakeKube,
) -> None:
    started(kube)
    advance(kube)
    report(kube, 1)
    finish_job(kube, 1, "Failed", "BackoffLimitExceeded")
    outcome = advance(kube)
    assert outcome is not None and outcome.phase == cond.RUN_FAILED
    load = status(kube)["steps"][1]
    assert load["phase"] == cond.STEP_FAILED and "BackoffLimitExceeded" in load["message"]
    assert load["result"]["operationsTotal"] == 3  # kept
    assert kube.reasons()[-2:] == [cond.EVENT_STEP_FAILED, cond.RUN_FAILED]
    assert condition(kube, cond.SUCCEEDED) == (cond.FALSE, cond.RUN_FAILED)
    assert kube.verbs("delete", "Job") == []  # cleanup.jobs OnSuccess: kept to look at


def test_a_job_without_any_result_fails_its_step(kube: FakeKube) -> None:
    started(kube)
    advance(kube)
    finish_job(kube, 1)
    advance(kube)
    assert step_phases(kube)[1] == cond.STEP_FAILED
    assert "no client reported a result" in status(kube)["steps"][1]["message"]


def test_a_job_lost_while_running_fails_its_step(kube: FakeKube) -> None:
    started(kube)
    advance(kube)
    kube.delete("Job", NS, job_name(kube, 1))
    outcome = advance(kube)
    assert outcome is not None and outcome.phase == cond.RUN_FAILED
    assert "disappeared before finishing" in status(kube)["steps"][1]["message"]


def test_a_job_created_just_before_a_restart_is_adopted_not_created_again(
    kube: FakeKube,
) -> None:
    started(kube)
    advance(kube)
    run = kube.objects[(RUN_KIND, NS, "r")]
    run["status"]["steps"][1] = {**run["status"]["steps"][1], "phase": cond.STEP_PENDING}
    applies = len(kube.verbs("apply", "Job"))
    advance(kube)
    assert len(kube.verbs("apply", "Job")) == applies
    assert step_phases(kube)[1] == cond.STEP_RUNNING


def test_the_last_step_cleans_up_and_the_run_succeeds() -> None:
    kube = FakeKube(mongocluster(), benchmarkrun(repetitions=1, cleanup={"data": "OnSuccess"}))
    data = Data()
    advance(kube, data)  # prepared, the load's Job applied
    for index, phase in ((1, "load"), (2, "run")):
        report(kube, index, phase)
        finish_job(kube, index)
        outcome = advance(kube, data)  # collected, then the next Job or the cleanup
    assert outcome is not None and outcome.phase == cond.RUN_SUCCEEDED
    assert step_phases(kube) == [cond.STEP_SUCCEEDED] * 4
    assert data.calls == ["prepare", "drop"]
    assert sorted(kube.verbs("delete", "Job")) == sorted([job_name(kube, 1), job_name(kube, 2)])
    assert condition(kube, cond.SUCCEEDED) == (cond.TRUE, cond.RUN_SUCCEEDED)
    assert cond.EVENT_STEP_SUCCEEDED in kube.reasons()
    assert kube.reasons()[-2:] == [cond.EVENT_DATA_DROPPED, cond.RUN_SUCCEEDED]
    # The load is a result too: summarised first, as workload `load`.
    assert [e["workload"] for e in status(kube)["summary"]] == ["load", "a"]


def test_load_repetitions_reload_from_empty_and_each_load_is_a_result() -> None:
    kube = FakeKube(mongocluster(), benchmarkrun(repetitions=1, load={"repetitions": 2}))
    data = Data()
    advance(kube, data)  # prepare, the first load's Job
    for index, phase in ((1, "load"), (2, "load"), (3, "run")):
        report(kube, index, phase)
        finish_job(kube, index)
        outcome = advance(kube, data)
    assert outcome is not None and outcome.phase == cond.RUN_SUCCEEDED
    # prepare's drop, then the second load's own drop and recreate before its inserts.
    assert data.calls == ["prepare", "prepare"]
    labels = [s["label"] for s in status(kube)["steps"]]
    assert labels == ["prepare", "load #1", "load #2", "run a #1", "cleanup"]
    load = status(kube)["summary"][0]
    assert load["workload"] == "load" and load["n"] == 2 and load["seconds"]["n"] == 2


# --- failures: the step or the run -------------------------------------------------------------


def test_a_cluster_deleted_during_a_step_fails_the_run_not_by_a_step_failure(
    kube: FakeKube,
) -> None:
    started(kube)
    advance(kube)
    kube.delete("MongoCluster", NS, "c")
    outcome = advance(kube)
    assert outcome is not None and outcome.phase == cond.RUN_FAILED
    assert condition(kube, cond.CLUSTER_READY) == (cond.FALSE, cond.CLUSTER_DELETED)
    load = status(kube)["steps"][1]
    assert load["phase"] == cond.STEP_FAILED and "deleted during this step" in load["message"]
    assert kube.reasons()[-1] == cond.RUN_FAILED
    assert cond.EVENT_STEP_FAILED not in kube.reasons()
    assert "results so far kept" in kube.events[-1][4]


def test_a_scenario_missing_for_a_minute_before_the_start_fails_the_run() -> None:
    kube = FakeKube(mongocluster(), locust())
    outcome = advance(kube)  # created long ago (fake_kube.CREATED): no more waiting
    assert outcome is not None and outcome.phase == cond.RUN_FAILED
    assert condition(kube, cond.SCENARIO_READY) == (
        cond.FALSE,
        cond.SCENARIO_CONFIGMAP_NOT_FOUND,
    )
    assert kube.reasons() == [cond.RUN_FAILED]
    assert "steps" not in status(kube)


def test_a_scenario_missing_just_after_creation_is_waited_for() -> None:
    run = locust()
    run["metadata"]["creationTimestamp"] = rfc3339(unit_clock())
    kube = FakeKube(mongocluster(), run)
    outcome = advance(kube)
    assert outcome is not None and outcome.phase == cond.PHASE_PENDING
    assert condition(kube, cond.SCENARIO_READY)[0] == cond.FALSE
    assert kube.events == []


def test_a_scenario_gone_before_its_step_fails_that_step() -> None:
    scenarios = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": NS, "name": SCENARIOS},
        "data": {"find.py": "class Find: ..."},
    }
    kube = FakeKube(mongocluster(), locust(), scenarios)
    advance(kube)  # started: every scenario found; the load's Job applied
    assert condition(kube, cond.SCENARIO_READY) == (cond.TRUE, cond.SCENARIO_FOUND)
    kube.objects[("ConfigMap", NS, SCENARIOS)]["data"] = {"other.py": ""}
    report(kube, 1)
    finish_job(kube, 1)
    advance(kube)  # the load collected: the next step's failure is the next pass's to decide
    outcome = advance(kube)
    assert outcome is not None and outcome.phase == cond.RUN_FAILED
    assert condition(kube, cond.SCENARIO_READY) == (cond.FALSE, cond.SCENARIO_KEY_NOT_FOUND)
    assert step_phases(kube)[1:3] == [cond.STEP_SUCCEEDED, cond.STEP_FAILED]
    assert kube.reasons()[-2:] == [cond.EVENT_STEP_FAILED, cond.RUN_FAILED]
    assert kube.verbs("apply", "Job") == [job_name(kube, 1)]


def test_mongodb_unreachable_is_retried_and_refusing_fails_the_step(kube: FakeKube) -> None:
    data = Data()
    data.fails = TransientMongoError("drop", "c-rs0-0", "no primary yet")
    outcome = advance(kube, data)
    assert outcome is not None and outcome.phase == cond.RUN_PREPARING
    assert condition(kube, cond.PROGRESSING) == (cond.FALSE, cond.MONGODB_UNAVAILABLE)
    data.fails = PermanentMongoError("drop", "c-rs0-0", "not authorized on ycsb")
    outcome = advance(kube, data)
    assert outcome is not None and outcome.phase == cond.RUN_FAILED
    assert step_phases(kube)[0] == cond.STEP_FAILED
    assert "not authorized" in status(kube)["steps"][0]["message"]


# --- the archive -------------------------------------------------------------------------------


def finished_run(kube: FakeKube) -> None:
    """A run that ended after its load step (its client's documents are in ConfigMaps)."""
    started(kube)
    advance(kube)
    report(kube, 1)
    finish_job(kube, 1, "Failed", "BackoffLimitExceeded")
    advance(kube)
    assert status(kube)["phase"] == cond.RUN_FAILED


def sync_archive(kube: FakeKube, config: OperatorConfig) -> list[Any]:
    return archive.sync(
        kube,
        NS,
        "r",
        config,
        upload_lock=threading.Lock(),
        run_lock=threading.Lock(),
        clock=unit_clock,
    )


def test_a_finished_steps_documents_are_archived_and_the_run_says_so(
    kube: FakeKube, tmp_path: Path
) -> None:
    config = replace(CONFIG, archive_url=str(tmp_path))
    finished_run(kube)
    run = kube.get(RUN_KIND, NS, "r")
    assert run is not None and archive.pending(run["spec"], run["status"], config)
    events = sync_archive(kube, config)
    assert [reason for _, reason, _ in events] == [cond.EVENT_ARCHIVED]
    assert kube.reasons()[-1] == cond.EVENT_ARCHIVED
    record = status(kube)["archive"]
    assert record["uploadedSteps"] == [1] and record["complete"] is True
    assert condition(kube, cond.ARCHIVED) == (cond.TRUE, cond.ARCHIVE_COMPLETE)
    assert any(p.name == "manifest.json" for p in tmp_path.rglob("*"))
    # What ran, listed by the manifest, and its summary in status.
    [manifest] = [json.loads(p.read_text()) for p in tmp_path.rglob("manifest.json")]
    assert "provenance.json" in {o["key"] for o in manifest["objects"]}
    [doc] = [json.loads(p.read_text()) for p in tmp_path.rglob("provenance.json")]
    assert doc["specs"]["benchmarkRun"]["spec"] == kube.objects[(RUN_KIND, NS, "r")]["spec"]
    assert doc["kubernetes"]["gitVersion"] == status(kube)["provenance"]["kubernetesVersion"]
    run = kube.get(RUN_KIND, NS, "r")
    assert run is not None and not archive.pending(run["spec"], run["status"], config)


class CountingKube(FakeKube):
    """FakeKube that counts GETs by kind (and GET /version as "Version")."""

    def __init__(self, *objects: Any) -> None:
        super().__init__(*objects)
        self.gets: dict[str, int] = {}

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        self.gets[kind] = self.gets.get(kind, 0) + 1
        return super().get(kind, namespace, name)

    def version(self) -> dict[str, Any]:
        self.gets["Version"] = self.gets.get("Version", 0) + 1
        return super().version()


def pod(name: str, labels: dict[str, str], node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": NS, "name": name, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "img:1"}]},
        "status": {"containerStatuses": [{"name": "main", "image": "img:1", "imageID": "sha"}]},
    }


def test_the_provenance_asks_for_the_apiserver_version_and_each_node_once_per_run(
    tmp_path: Path,
) -> None:
    config = replace(CONFIG, archive_url=str(tmp_path))
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    member = pod("c-rs0-0", {"mongobench.io/cluster": "c"}, "n1")
    kube = CountingKube(mongocluster(), benchmarkrun(repetitions=1), node, member)
    advance(kube)  # started, prepared, the load's Job applied
    report(kube, 1)
    finish_job(kube, 1)
    advance(kube)  # the load collected, the run's Job applied
    kube.gets.clear()  # the run's cluster snapshot read the node at the start
    sync_archive(kube, config)
    kube.put(pod("r-client", {"mongobench.io/run": "r"}, "n1"))  # the run step's client
    report(kube, 2, "run")
    finish_job(kube, 2)
    advance(kube)  # collected, cleaned up
    sync_archive(kube, config)
    assert status(kube)["archive"]["uploadedSteps"] == [1, 2]
    assert kube.gets["Version"] == 1 and kube.gets["Node"] == 1  # two uploads
    [doc] = [json.loads(p.read_text()) for p in tmp_path.rglob("provenance.json")]
    assert doc["kubernetes"]["gitVersion"] == "v1.32.2"
    assert [(n["name"], n["roles"]) for n in doc["nodes"]] == [("n1", ["client", "database"])]


def test_an_archive_that_cannot_be_written_is_retried_later(kube: FakeKube, tmp_path: Path) -> None:
    config = replace(CONFIG, archive_url=str(tmp_path))
    kube.objects[(RUN_KIND, NS, "r")]["spec"]["archive"] = {"credentialsSecret": "missing"}
    finished_run(kube)
    events = sync_archive(kube, config)
    assert [reason for _, reason, _ in events] == [cond.EVENT_ARCHIVE_FAILED]
    record = status(kube)["archive"]
    assert record["attempts"] == 1 and record["nextAttempt"]
    assert condition(kube, cond.ARCHIVED) == (cond.FALSE, cond.ARCHIVE_UPLOAD_FAILED)
    assert "credentials Secret missing" in kube.events[-1][4]
    due_at = parse_rfc3339(record["nextAttempt"])
    assert not archive.due(status(kube), due_at - timedelta(seconds=1))
    assert archive.due(status(kube), due_at)


# --- the step's resource profile ---------------------------------------------------------------


def collected_with(kube: FakeKube, cpu: Any) -> dict[str, Any]:
    """The load step collected with `cpu` as the Prometheus query; its status entry."""
    orchestrate.advance(kube, NS, "r", CONFIG, Data(), cpu=cpu, clock=unit_clock)
    orchestrate.advance(kube, NS, "r", CONFIG, Data(), cpu=cpu, clock=unit_clock)
    report(kube, 1)
    finish_job(kube, 1)
    orchestrate.advance(kube, NS, "r", CONFIG, Data(), cpu=cpu, clock=unit_clock)
    return dict(status(kube)["steps"][1])


def test_a_steps_cpu_is_kept_with_it_and_a_gap_is_said_once_seen(kube: FakeKube) -> None:
    windows: list[tuple[str, str]] = []

    def cpu(run: Any, step: Any, start: str, end: str) -> dict[str, Any]:
        windows.append((start, end))
        return {"cpu": {"nodes": []}, "resources": {"missing": ["disk of node n1"]}}

    load = collected_with(kube, cpu)
    assert load["cpu"] == {"nodes": []} and len(windows) == 1
    assert condition(kube, cond.CPU_COLLECTED) == (cond.TRUE, cond.CPU_COLLECTED_ALL)
    assert condition(kube, cond.RESOURCES_COMPLETE) == (cond.FALSE, cond.METRICS_MISSING)


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (CpuUnavailable("Prometheus refused: 503"), cond.PROMETHEUS_UNAVAILABLE),
        (ValueError("a window of no length"), cond.WINDOW_INVALID),
    ],
)
def test_a_step_whose_cpu_cannot_be_read_still_succeeds_and_says_why(
    kube: FakeKube, error: Exception, reason: str
) -> None:
    def cpu(*_: Any) -> dict[str, Any]:
        raise error

    load = collected_with(kube, cpu)
    assert load["phase"] == cond.STEP_SUCCEEDED and load["cpu"] is None
    assert condition(kube, cond.CPU_COLLECTED) == (cond.FALSE, reason)
    assert cond.EVENT_CPU_MISSING in kube.reasons()


def test_an_invalid_trial_is_judged_said_and_re_run_as_a_new_step() -> None:
    from mongobench.benchmarkrun.decide.reruns import with_reruns

    kube = FakeKube(mongocluster(), benchmarkrun(repetitions=1, validity={"rerunInvalid": 1}))
    started(kube)
    advance(kube)  # the load's Job
    report(kube, 1)
    finish_job(kube, 1)
    advance(kube)
    advance(kube)  # run a #1's Job
    # 3 operations in 10 s on 1 thread: Little's law fails
    report(kube, 2, phase="run", window_us=10_000_000)
    finish_job(kube, 2)
    outcome = advance(kube)
    assert outcome is not None
    trial = status(kube)["steps"][2]
    assert trial["phase"] == cond.STEP_SUCCEEDED and trial["attempt"] == 1
    assert trial["validity"]["valid"] is False
    assert [r["reason"] for r in trial["validity"]["reasons"]] == ["LittlesLaw"]
    assert condition(kube, cond.TRIALS_VALID) == (cond.FALSE, cond.TRIALS_SOME_INVALID)
    warned = [m for _, reason, m in outcome.events if reason == cond.EVENT_TRIAL_INVALID]
    assert warned == [
        f"run a #1: LittlesLaw: {trial['validity']['reasons'][0]['message']}; "
        "re-running (attempt 2 of 2); to change: LittlesLaw: " + advice("LittlesLaw")
    ]
    advance(kube)  # the re-run is the next step: its own Job
    steps = status(kube)["steps"]
    assert [s["label"] for s in steps] == [
        "prepare", "load", "run a #1", "run a #1 (attempt 2)", "cleanup",
    ]  # fmt: skip
    assert steps[3]["phase"] == cond.STEP_RUNNING and steps[3]["attempt"] == 2
    run = kube.get(RUN_KIND, NS, "r")
    assert run is not None
    plan = with_reruns(
        BenchmarkRunSpec.parse(run["spec"]),
        make_plan(BenchmarkRunSpec.parse(run["spec"])),
        run["status"],
    )
    assert ("Job", NS, plan[3].job_name("r")) in kube.objects
    assert plan[3].job_name("r").endswith("-run-a-r1-a2")
    assert status(kube)["progress"]["steps"] == 5
