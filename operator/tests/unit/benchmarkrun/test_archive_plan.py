"""Unit tier: the pure side of archiving a BenchmarkRun (settings, what is pending, backoff,
documents, the status it leaves). The uploads themselves are proven on the cluster tier."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mongobench.benchmarkrun.act import archive
from mongobench.benchmarkrun.act.archive import NotConfigured, Result, Settings
from mongobench.config import OperatorConfig

pytestmark = pytest.mark.unit

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
NONE = OperatorConfig()
S3 = replace(
    NONE,
    archive_url="s3://runs/lab",
    archive_endpoint="http://minio:9000",
    archive_region="eu-1",
    archive_retry_base=5,
    archive_retry_max=60,
)


def step(index: int, kind: str = "run", phase: str = "Succeeded", **kw: Any) -> dict[str, Any]:
    return {"index": index, "kind": kind, "phase": phase, **kw}


def test_no_archive_anywhere_means_none() -> None:
    assert archive.resolve({}, NONE) is None


def test_operator_default_applies_to_runs_without_spec_archive() -> None:
    assert archive.resolve({}, S3) == Settings("s3://runs/lab", "http://minio:9000", "eu-1")


def test_spec_archive_enabled_false_opts_out() -> None:
    assert archive.resolve({"archive": {"enabled": False}}, S3) is None


def test_spec_fields_override_the_default_and_keep_its_credentials_for_its_store() -> None:
    s = archive.resolve({"archive": {"prefix": "team-a/2026"}}, S3)
    assert s == Settings("s3://runs/team-a/2026", "http://minio:9000", "eu-1", None, True)


def test_operator_credentials_never_go_to_another_store() -> None:
    other_bucket = archive.resolve({"archive": {"bucket": "mine"}}, S3)
    assert other_bucket is not None and other_bucket.url == "s3://mine/lab"
    assert not other_bucket.operator_credentials
    other_endpoint = archive.resolve(
        {"archive": {"bucket": "runs", "endpoint": "https://evil.example"}}, S3
    )
    assert other_endpoint is not None and not other_endpoint.operator_credentials
    with_secret = archive.resolve(
        {"archive": {"bucket": "mine", "endpoint": "https://s3.eu", "credentialsSecret": "s3"}},
        NONE,
    )
    assert with_secret == Settings("s3://mine", "https://s3.eu", None, "s3", False)


def test_spec_archive_without_bucket_or_default_is_not_configured() -> None:
    with pytest.raises(NotConfigured, match="names no bucket"):
        archive.resolve({"archive": {"prefix": "x"}}, NONE)
    status = {"conditions": [{"type": "Archived", "reason": "NotConfigured"}]}
    assert archive.pending({"archive": {}}, {}, NONE)  # said once ...
    assert not archive.pending({"archive": {}}, status, NONE)  # ... not again every tick


def test_folder_default_takes_a_prefix_as_subfolder() -> None:
    cfg = replace(NONE, archive_url="/var/archive")
    assert archive.resolve({"archive": {"prefix": "a/b"}}, cfg) == Settings("/var/archive/a/b")


def test_pending_follows_finished_steps_and_the_final_manifest() -> None:
    spec: dict[str, Any] = {}
    running = {
        "phase": "Running",
        "steps": [step(0, "prepare"), step(1, "load"), step(2, phase="Running")],
    }
    assert archive.finished_steps(running) == [1]
    assert archive.pending(spec, running, S3)
    assert not archive.pending(spec, running, NONE)
    uploaded = {**running, "archive": {"uploadedSteps": [1]}}
    assert not archive.pending(spec, uploaded, S3)
    done = {**uploaded, "phase": "Succeeded", "steps": [*running["steps"][:2], step(2)]}
    assert archive.pending(spec, done, S3)
    final = {**done, "archive": {"uploadedSteps": [1, 2], "complete": True}}
    assert not archive.pending(spec, final, S3)
    # A run that failed before any step still gets its run.json and manifest.
    assert archive.pending(spec, {"phase": "Failed"}, S3)


def test_backoff_doubles_up_to_the_maximum_and_due_waits_it_out() -> None:
    assert [archive.backoff(n, S3) for n in (1, 2, 3, 4, 5, 9)] == [5, 10, 20, 40, 60, 60]
    later = {"archive": {"nextAttempt": "2026-03-04T05:06:17Z"}}
    assert not archive.due(later, NOW)
    assert archive.due(later, NOW + timedelta(seconds=10))
    assert archive.due({}, NOW)


def test_describe_steps() -> None:
    assert archive.describe_steps([]) == "no steps"
    assert archive.describe_steps([4]) == "step 4"
    assert archive.describe_steps([5, 1, 2, 3, 7, 8]) == "steps 1-3, 5, 7-8"


def test_failure_status_says_what_is_missing_and_when_it_retries() -> None:
    steps = [{"index": i, "kind": k, "phase": "Succeeded"} for i, k in
             enumerate(["prepare", "load", "run", "run", "cleanup"])]  # fmt: skip
    status = {"phase": "Succeeded", "steps": steps, "archive": {"uploadedSteps": [1]}}
    result = Result("s3://runs/lab/ns/r/u", error="cannot reach http://minio:9000")
    patch, events = archive.status_patch(status, result, NOW, S3)
    assert patch["archive"]["attempts"] == 1
    assert patch["archive"]["nextAttempt"] == "2026-03-04T05:06:12Z"
    assert patch["archive"]["uploadedSteps"] == [1]  # what was uploaded stays recorded
    [cond] = patch["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Archived", "False", "UploadFailed")
    assert cond["message"] == (
        "cannot reach http://minio:9000; not archived: steps 2-3 and the final manifest; "
        "next attempt in 5s"
    )
    assert [e[1] for e in events] == ["ArchiveFailed"]
    # The next failure backs off further and does not repeat the Event.
    again, events = archive.status_patch({**status, **patch}, result, NOW, S3)
    assert (
        again["archive"]["attempts"] == 2
        and "next attempt in 10s" in again["conditions"][0]["message"]
    )
    assert events == []


def test_a_failure_names_what_the_status_it_is_written_against_lacks() -> None:
    """The sync read the run while its last run step was still going; by the time it records
    its failure the run has Succeeded: the message names that step too, not the snapshot's."""
    steps = [{"index": i, "kind": k, "phase": "Succeeded"} for i, k in
             enumerate(["prepare", "load", "run", "cleanup"])]  # fmt: skip
    fresh = {"phase": "Succeeded", "steps": steps}
    patch, _ = archive.status_patch(fresh, Result("s3://b/ns/r/u", error="down"), NOW, S3)
    assert "not archived: steps 1-2 and the final manifest" in patch["conditions"][0]["message"]
    running = {"phase": "Running", "steps": [*steps[:2], {**steps[2], "phase": "Running"}]}
    patch, _ = archive.status_patch(running, Result("s3://b/ns/r/u", error="down"), NOW, S3)
    assert "not archived: step 1; next attempt" in patch["conditions"][0]["message"]


def test_success_status_in_progress_then_complete() -> None:
    failed_before = {"phase": "Running", "archive": {"attempts": 3, "nextAttempt": "x"}}
    patch, events = archive.status_patch(
        failed_before, Result("s3://b/ns/r/u", uploaded=[1, 2]), NOW, S3
    )
    assert patch["archive"] == {
        "url": "s3://b/ns/r/u",
        "uploadedSteps": [1, 2],
        "complete": False,
        "lastUpload": "2026-03-04T05:06:07Z",
        "attempts": 0,
        "nextAttempt": None,
    }
    assert patch["conditions"][0]["reason"] == "InProgress" and events == []
    patch, events = archive.status_patch(
        {"phase": "Succeeded"}, Result("s3://b/ns/r/u", uploaded=[1, 2, 3], complete=True), NOW, S3
    )
    cond = patch["conditions"][0]
    assert (cond["status"], cond["reason"]) == ("True", "Complete")
    assert cond["message"] == "steps 1-3 and the final manifest at s3://b/ns/r/u"
    assert events == [("Normal", "Archived", cond["message"])]


def test_documents() -> None:
    entry = step(
        3,
        job="r-03-run-a-r1",
        cpu={"cluster": {"busy": 12.5}},
        resources={"cluster": {"disk": {"writeIops": 200.0}}},
        result={"x": 1},
    )
    doc = archive.resources_document(entry)
    assert doc["step"] == {"index": 3, "kind": "run", "phase": "Succeeded", "job": "r-03-run-a-r1"}
    assert doc["cpu"] == {"cluster": {"busy": 12.5}}
    assert doc["resources"] == {"cluster": {"disk": {"writeIops": 200.0}}}
    assert archive.resources_document(step(4))["resources"] is None
    cluster = {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "MongoCluster",
        "metadata": {"name": "c", "uid": "1", "managedFields": [], "resourceVersion": "9"},
        "spec": {"auth": {"keyfileSecret": "c-keyfile"}},
        "status": {"connectionSecret": "c-connection"},
    }
    doc = archive.cluster_document({"clusterSnapshot": {"name": "c"}}, cluster)
    assert doc["snapshot"] == {"name": "c"}
    assert doc["mongoCluster"]["metadata"] == {"name": "c", "uid": "1"}
    assert archive.cluster_document({}, None) == {"snapshot": None}
    listed = {
        "steps/001/client-0.json": {},
        "steps/001/resources.json": {},
        "steps/002/client-0.json": {},
    }
    assert archive.archived_steps(listed) == {1}  # step 2's upload stopped before its last object


def test_operator_archive_settings_from_the_environment() -> None:
    env = {
        "MONGOBENCH_ARCHIVE_URL": "s3://runs/lab",
        "MONGOBENCH_ARCHIVE_ENDPOINT": "http://minio:9000",
        "MONGOBENCH_ARCHIVE_RETRY_MAX": "60",
    }
    cfg = OperatorConfig.from_env(env)
    assert (cfg.archive_url, cfg.archive_endpoint, cfg.archive_region) == (
        "s3://runs/lab",
        "http://minio:9000",
        None,
    )
    assert (cfg.archive_retry_base, cfg.archive_retry_max) == (5.0, 60.0)
    assert OperatorConfig.from_env({}).archive_url is None
    with pytest.raises(SystemExit, match="MONGOBENCH_ARCHIVE_URL: gs://x: unsupported"):
        OperatorConfig.from_env({"MONGOBENCH_ARCHIVE_URL": "gs://x"})
