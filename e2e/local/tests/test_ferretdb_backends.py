"""Protocol tier: the demo's two databases, FerretDB on SQLite and FerretDB on Debian's PostgreSQL
(a real PostgreSQL server on loopback, started as `make demo` starts it), answer pymongo the same,
and keep their data apart. What makes the demo's question a real one is measured by the demo; this
proves its pieces start, serve and stop on a machine as `make setup` leaves it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pymongo import MongoClient

from localplane.ferretdb import running_ferretdb
from localplane.postgres import bin_dir, running_postgres

pytestmark = pytest.mark.protocol


def test_ferretdb_on_postgresql_and_on_sqlite_serve_the_same_documents(tmp_path: Path) -> None:
    assert bin_dir() is not None, "PostgreSQL's server is missing: `make setup` installs it"
    with (
        running_postgres() as pg,
        running_ferretdb(tmp_path / "pg", postgresql_url=pg.url) as on_pg,
        running_ferretdb(tmp_path / "sqlite") as on_sqlite,
    ):
        seen = {}
        for name, server in (("postgresql", on_pg), ("sqlite", on_sqlite)):
            with MongoClient(server.uri, serverSelectionTimeoutMS=10_000) as client:
                users = client.ycsb.usertable
                users.insert_many([{"_id": f"user{i}", "field0": name} for i in range(50)])
                users.update_one({"_id": "user7"}, {"$set": {"field0": "updated"}})
                seen[name] = (
                    users.count_documents({}),
                    users.find_one({"_id": "user7"}),
                    users.find_one({"_id": "user8"}),
                )
        assert seen["postgresql"][0] == seen["sqlite"][0] == 50
        assert seen["postgresql"][1] == seen["sqlite"][1] == {"_id": "user7", "field0": "updated"}
        # Two databases, not one: each kept its own documents.
        assert seen["postgresql"][2] == {"_id": "user8", "field0": "postgresql"}
        assert seen["sqlite"][2] == {"_id": "user8", "field0": "sqlite"}
    # Stopped with its data directory removed: nothing left listening or on disk.
    assert not pg.data.exists()


def test_the_demo_puts_both_databases_on_a_cpu_the_harness_does_not_use(tmp_path: Path) -> None:
    """`make demo` on a 2-CPU machine: PostgreSQL (its postmaster, its background workers and the
    backend it forks for a new connection later) and FerretDB move to the measured CPU; what this
    process starts afterwards stays on the harness's."""
    import os
    import subprocess

    from localplane import cpusets

    cpus = cpusets.split()
    if cpus is None:
        pytest.skip("one CPU: nothing to split")
    assert cpus.harness.isdisjoint(cpus.measured) and cpus.measured
    with running_postgres() as pg, running_ferretdb(tmp_path, postgresql_url=pg.url) as fdb:
        for pid in (pg.pid, fdb.process.pid):
            cpusets.pin_process_tree(pid, cpus.measured)
        with MongoClient(fdb.uri, serverSelectionTimeoutMS=10_000) as client:
            client.demo.usertable.insert_one({"_id": "user1"})  # a new backend, forked after
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        mine = [p for p in pids if _is_below(p, pg.pid)]
        assert len(mine) >= 3, "the postmaster, its workers and a backend"
        for pid in [*mine, fdb.process.pid]:
            for tid in os.listdir(f"/proc/{pid}/task"):
                assert os.sched_getaffinity(int(tid)) == cpus.measured, (pid, tid)
        harness_child = subprocess.Popen(["sleep", "5"])
        try:
            assert os.sched_getaffinity(harness_child.pid) == os.sched_getaffinity(0)
        finally:
            harness_child.kill()
            harness_child.wait()


def _is_below(pid: int, ancestor: int) -> bool:
    """Is `pid` the ancestor or one of its descendants (a process that ended: no)?"""
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False
