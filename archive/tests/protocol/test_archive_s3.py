"""Protocol tier: the archive against a real S3-compatible server (moto, HTTP on loopback),
through the same MinIO client the operator and the CLI use."""

from __future__ import annotations

import io
from typing import Any

import pytest

from localplane.net import free_port
from localplane.s3server import S3Server
from mongobench_archive import ArchiveError, layout, open_root

pytestmark = pytest.mark.protocol

BUCKET = "mongobench"
RUN: dict[str, Any] = {
    "apiVersion": "mongobench.io/v1alpha1",
    "kind": "BenchmarkRun",
    "metadata": {"name": "ycsb-a", "namespace": "bench", "uid": "u-1"},
    "spec": {"driver": "ycsb"},
    "status": {"phase": "Succeeded"},
}


def root(s3: S3Server, url: str = f"s3://{BUCKET}/lab", **kw: Any) -> Any:
    kw.setdefault("endpoint_url", s3.endpoint)
    return open_root(
        url,
        region="us-east-1",
        access_key_id="mongobench-test",
        secret_access_key="mongobench-test-secret-key",
        **kw,
    )


def write_run(s3: S3Server, name: str = "ycsb-a", uid: str = "u-1", steps: int = 2) -> None:
    w = root(s3).writer("bench", name, uid)
    w.put_json(layout.CLUSTER, {"snapshot": {"version": "7.0"}})
    for s in range(steps):
        for c in range(2):
            w.put_json(layout.client_key(s, c), {"client": c, "step": s})
        w.put_json(layout.merged_key(s), {"step": s})
        w.put_json(layout.resources_key(s), {"cpu": {}})
    w.put_manifest(
        {**RUN, "metadata": {**RUN["metadata"], "name": name, "uid": uid}}, "Succeeded", True
    )


def test_round_trip_under_a_prefix(s3server: S3Server) -> None:
    write_run(s3server)
    keys = s3server.keys(BUCKET)
    assert "lab/bench/ycsb-a/u-1/manifest.json" in keys
    assert "lab/bench/ycsb-a/u-1/steps/001/client-1.json" in keys
    [run] = root(s3server).runs()
    assert run.location == "s3://mongobench/lab/bench/ycsb-a/u-1"
    assert run.step_documents(1) == [{"client": 0, "step": 1}, {"client": 1, "step": 1}]
    assert run.merged(0) == {"step": 0} and run.cluster == {"snapshot": {"version": "7.0"}}
    # URLs at the bucket, the namespace and the run folder find the same run.
    for url in (
        "s3://mongobench",
        "s3://mongobench/lab/bench",
        "s3://mongobench/lab/bench/ycsb-a/u-1/",
    ):
        [same] = root(s3server, url).runs()
        assert same.uid == "u-1" and same.merged(1) == {"step": 1}


def test_credentials_from_the_environment(
    s3server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_run(s3server)
    for k, v in s3server.env().items():
        monkeypatch.setenv(k, v)
    [run] = open_root("s3://mongobench/lab").runs()  # endpoint and keys from AWS_* variables
    assert run.name == "ycsb-a"


def test_a_run_is_invisible_until_its_manifest(s3server: S3Server) -> None:
    w = root(s3server).writer("bench", "half", "u-2")
    w.put_json(layout.client_key(0, 0), {"client": 0})
    with pytest.raises(ArchiveError, match=r"no manifest\.json") as e:
        root(s3server).runs()
    assert "\n" not in str(e.value)
    write_run(s3server)
    assert [r.name for r in root(s3server).runs()] == ["ycsb-a"]
    w.put_manifest(
        {**RUN, "metadata": {"name": "half", "namespace": "bench", "uid": "u-2"}}, "Running", False
    )
    assert sorted(r.name for r in root(s3server).runs()) == ["half", "ycsb-a"]


def test_restarted_writer_uploads_only_what_changed(s3server: S3Server) -> None:
    write_run(s3server, steps=1)
    w = root(s3server).writer("bench", "ycsb-a", "u-1")
    w.put_json(layout.client_key(0, 0), {"client": 0, "step": 0})  # unchanged: skipped
    w.put_json(layout.client_key(1, 0), {"client": 0, "step": 1})
    m = w.put_manifest(RUN, "Succeeded", True)
    assert w.written == ["steps/001/client-0.json"]  # run.json identical too
    assert "steps/000/merged.json" in {o["key"] for o in m["objects"]}


def test_changed_object_is_refused(s3server: S3Server) -> None:
    write_run(s3server)
    data = b'{"step": 42}\n'
    s3server.client().put_object(
        BUCKET, "lab/bench/ycsb-a/u-1/steps/000/merged.json", io.BytesIO(data), len(data)
    )
    [run] = root(s3server).runs()
    with pytest.raises(ArchiveError, match="differs from its manifest"):
        run.merged(0)


def test_missing_bucket_is_a_one_line_error(s3server: S3Server) -> None:
    with pytest.raises(ArchiveError, match="bucket 'nope' does not exist") as e:
        root(s3server, "s3://nope/x").runs()
    assert "\n" not in str(e.value)
    with pytest.raises(ArchiveError, match="does not exist"):
        root(s3server, "s3://nope/x").writer("a", "b", "c").put_json("x.json", {})


def test_empty_prefix_is_a_one_line_error(s3server: S3Server) -> None:
    with pytest.raises(ArchiveError, match="no archived run here"):
        root(s3server, "s3://mongobench/nothing-here").runs()


def test_unreachable_endpoint_is_a_one_line_error() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    r = open_root(
        "s3://mongobench/x",
        endpoint_url=dead,
        region="us-east-1",
        access_key_id="k",
        secret_access_key="secret-k",
        connect_timeout=1,
        max_attempts=1,
    )
    with pytest.raises(ArchiveError, match="cannot reach") as e:
        r.runs()
    assert "\n" not in str(e.value) and dead in str(e.value)


def test_store_down_then_back(s3server: S3Server) -> None:
    """The writer's errors while the store is down are ArchiveErrors; after it is back (empty:
    moto keeps state in memory) a rewrite from scratch succeeds."""
    s3server.stop()
    with pytest.raises(ArchiveError, match="cannot reach"):
        write_run(s3server)
    s3server.start(buckets=[BUCKET])
    write_run(s3server)
    assert [r.complete for r in root(s3server).runs()] == [True]


def test_bad_endpoint_is_a_one_line_error() -> None:
    with pytest.raises(ArchiveError, match="S3 endpoint"):
        open_root("s3://b/p", endpoint_url="ftp://host/x")


def test_an_upload_stopped_before_its_manifest_leaves_no_run(s3server: S3Server) -> None:
    """The writer's order, seen from the store: everything else first, the manifest last. With
    the manifest's PUT held by a proxy, the objects are there and the run is not."""
    from localplane.s3server import StallingProxy

    proxy = StallingProxy(s3server.port)
    try:
        proxy.stall(r"^PUT .*/manifest\.json")
        r = root(s3server, endpoint_url=proxy.endpoint, read_timeout=1, max_attempts=1)
        w = r.writer("bench", "cut", "u-9")
        w.put_json(layout.client_key(0, 0), {"client": 0})
        w.put_json(layout.resources_key(0), {"cpu": None})
        with pytest.raises(ArchiveError, match="cannot reach"):
            w.put_manifest(RUN, "Running", False)
        assert proxy.stalled_paths == ["/mongobench/lab/bench/cut/u-9/manifest.json"]
        assert proxy.access_keys == {"mongobench-test"}
        keys = s3server.keys(BUCKET)
        assert "lab/bench/cut/u-9/run.json" in keys
        assert "lab/bench/cut/u-9/manifest.json" not in keys
        with pytest.raises(ArchiveError, match=r"no manifest\.json"):
            root(s3server).runs()
    finally:
        proxy.close()
