"""Unit tier: a BenchmarkExperiment's matrix expansion, the order of its repetitions, the objects
it creates and the scheduling decision (a pure function from observed state to next actions)."""

from __future__ import annotations

from typing import Any

import pytest

from mongobench.api import BenchmarkExperimentSpec, SpecError
from mongobench.experiment.build import objects
from mongobench.experiment.decide import matrix as mx
from mongobench.experiment.decide import schedule as sched
from mongobench.experiment.decide.matrix import Slot

pytestmark = pytest.mark.unit

SHARDED = {"type": "Sharded", "sharded": {"shards": 1, "membersPerShard": 1}}


def spec(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "cluster": {"version": "7.0.14", "topology": SHARDED},
        "run": {"workloads": [{"name": "a"}, {"name": "c"}]},
        "dimensions": [
            {
                "name": "shards",
                "target": "cluster",
                "field": "topology.sharded.shards",
                "values": [1, 2],
            },
            {
                "name": "version",
                "target": "cluster",
                "field": "version",
                "values": ["7.0.14", "8.0.4"],
            },
        ],
    }
    return base | extra


def expand(raw: dict[str, Any]) -> mx.Matrix:
    """The matrix of an experiment spec as the apiserver stores it (parsed as the operator does)."""
    return mx.expand(BenchmarkExperimentSpec.parse(raw))


def run_of(body: dict[str, Any], m: mx.Matrix, slot: Slot) -> dict[str, Any]:
    return objects.run(body["metadata"], BenchmarkExperimentSpec.parse(body["spec"]), m, slot)


def cluster_of(body: dict[str, Any], m: mx.Matrix, group: int) -> dict[str, Any]:
    return objects.cluster(body["metadata"], BenchmarkExperimentSpec.parse(body["spec"]), m, group)


def policy_of(**fields: Any) -> sched.Policy:
    """The schedule's policy of an experiment spec with `fields` (as written in the spec)."""
    return sched.Policy.of(BenchmarkExperimentSpec.parse(spec(**fields)))


def test_cells_are_the_product_and_set_the_named_fields() -> None:
    m = expand(spec())
    assert [dict(c.values) for c in m.cells] == [
        {"shards": 1, "version": "7.0.14"},
        {"shards": 1, "version": "8.0.4"},
        {"shards": 2, "version": "7.0.14"},
        {"shards": 2, "version": "8.0.4"},
    ]
    assert m.cells[2].cluster_spec["topology"]["sharded"] == {"shards": 2, "membersPerShard": 1}
    assert m.cells[3].cluster_spec["version"] == "8.0.4"
    assert len(m.groups) == 4  # every cell its own cluster
    assert m.label(3) == "shards=2,version=8.0.4"


def test_run_dimensions_share_the_cluster() -> None:
    m = expand(
        spec(
            dimensions=[
                {
                    "name": "driver",
                    "target": "run",
                    "field": "driver",
                    "values": ["ycsb", "locust"],
                },
                {
                    "name": "shards",
                    "target": "cluster",
                    "field": "topology.sharded.shards",
                    "values": [1, 3],
                },
            ]
        )
    )
    assert [c.group for c in m.cells] == [0, 1, 0, 1]
    assert m.cells[2].run_spec["driver"] == "locust"


def test_exclude_and_include_like_a_ci_matrix() -> None:
    m = expand(
        spec(
            exclude=[{"shards": 2, "version": "8.0.4"}],
            include=[{"shards": 7, "version": "8.0.4"}, {"shards": 1, "version": "7.0.14"}],
        )
    )
    assert [m.label(c.index) for c in m.cells] == [
        "shards=1,version=7.0.14",
        "shards=1,version=8.0.4",
        "shards=2,version=7.0.14",
        "shards=7,version=8.0.4",  # the second include matched an existing cell
    ]


def test_baseline_names_exactly_one_cell() -> None:
    assert expand(spec(baseline={"shards": 2, "version": "7.0.14"})).baseline == 2
    with pytest.raises(SpecError, match="matches 2 cells"):
        expand(spec(baseline={"shards": 2}))


STUDY_3 = [
    {"name": "configServers", "target": "cluster", "field": "topology.sharded.configServers",
     "values": [1, 3]},
    {"name": "mongos", "target": "cluster", "field": "topology.sharded.mongos", "values": [1, 2]},
    {"name": "shards", "target": "cluster", "field": "topology.sharded.shards",
     "values": [1, 3, 5, 7]},
    {"name": "members", "target": "cluster", "field": "topology.sharded.membersPerShard",
     "values": [1, 3]},
    {"name": "version", "target": "cluster", "field": "version", "values": ["7.0.14", "8.0.4"]},
]  # fmt: skip
STUDY_3_BASELINE = {"configServers": 1, "mongos": 1, "shards": 1, "members": 1,
                    "version": "7.0.14"}  # fmt: skip


def test_one_factor_at_a_time_is_the_baseline_and_each_other_value_alone() -> None:
    m = expand(spec(design="OneFactorAtATime", dimensions=STUDY_3, baseline=STUDY_3_BASELINE))
    # 1 + sum(len(values) - 1) cells, not the product's 64.
    assert len(m.cells) == 1 + sum(len(d["values"]) - 1 for d in STUDY_3) == 8
    assert m.baseline == 0 and dict(m.cells[0].values) == STUDY_3_BASELINE
    varied = [{k: v for k, v in c.values.items() if v != STUDY_3_BASELINE[k]} for c in m.cells[1:]]
    assert varied == [
        {"configServers": 3}, {"mongos": 2}, {"shards": 3}, {"shards": 5}, {"shards": 7},
        {"members": 3}, {"version": "8.0.4"},
    ]  # fmt: skip
    assert m.label(4) == "configServers=1,mongos=1,shards=5,members=1,version=7.0.14"
    assert m.cells[4].cluster_spec["topology"]["sharded"] == {
        "shards": 5, "membersPerShard": 1, "configServers": 1, "mongos": 1
    }  # fmt: skip
    assert [c.group for c in m.cells] == list(range(8))  # a cluster each, baseline first


def test_one_factor_at_a_time_needs_a_full_baseline_and_takes_no_include_or_exclude() -> None:
    ofat = spec(design="OneFactorAtATime")
    with pytest.raises(SpecError, match="value for every dimension"):
        expand(ofat)
    with pytest.raises(SpecError, match="value for every dimension"):
        expand(ofat | {"baseline": {"shards": 1}})
    with pytest.raises(SpecError, match="shards=3 is not one of the dimension's values"):
        expand(ofat | {"baseline": {"shards": 3, "version": "7.0.14"}})
    with pytest.raises(SpecError, match="no include or exclude"):
        expand(ofat | {"baseline": {"shards": 1, "version": "7.0.14"},
                          "exclude": [{"shards": 2}]})  # fmt: skip
    # Factorial (the default) is the product, as before.
    assert len(expand(spec(design="Factorial")).cells) == 4


def test_matrix_errors_are_spec_errors() -> None:
    with pytest.raises(SpecError, match="no cell"):
        expand(spec(exclude=[{"shards": 1}, {"shards": 2}]))
    with pytest.raises(SpecError, match="no dimension"):
        expand(spec(exclude=[{"members": 1}]))
    big = spec(
        dimensions=[
            {"name": "a", "target": "run", "field": "x", "values": list(range(15))},
            {"name": "b", "target": "run", "field": "y", "values": list(range(15))},
        ]
    )
    with pytest.raises(SpecError, match="225 cells, more than 200"):
        expand(big)
    with pytest.raises(SpecError, match="not an object"):
        expand(
            spec(
                dimensions=[
                    {"name": "v", "target": "cluster", "field": "version.major", "values": [1]}
                ]
            )
        )


SHARD_KEYS = {
    "hashed-id": {"key": "_id", "hashed": True},
    "sensor-ts": {"fields": [{"field": "sensor"}, {"field": "ts"}]},
    "ts": {"key": "ts", "hashed": False},
}


def shard_key_spec(**extra: Any) -> dict[str, Any]:
    dimension = {
        "name": "shardKey",
        "target": "run",
        "field": "sharding",
        "values": list(SHARD_KEYS.values()),
        "valueNames": list(SHARD_KEYS),
    }
    return spec(dimensions=[dimension], **extra)


def test_named_values_label_the_cells_and_set_the_whole_object() -> None:
    """Study 4's shard-key test: one run dimension over whole `sharding` blocks, each cell
    labelled, matched and compared by its value's name, not by the object's JSON."""
    body = {
        "metadata": {"name": "keys", "namespace": "ns", "uid": "u1"},
        "spec": shard_key_spec(baseline={"shardKey": "sensor-ts"}, exclude=[{"shardKey": "ts"}]),
    }
    m = expand(body["spec"])
    assert [m.label(c.index) for c in m.cells] == ["shardKey=hashed-id", "shardKey=sensor-ts"]
    assert m.baseline == 1
    assert m.cells[1].run_spec["sharding"] == SHARD_KEYS["sensor-ts"]
    assert len(m.groups) == 1  # only a run field differs: one cluster
    run = run_of(body, m, Slot(1, 1))
    assert run["spec"]["sharding"] == SHARD_KEYS["sensor-ts"]
    assert run["spec"]["labels"]["shardKey"] == "sensor-ts"
    assert run["spec"]["labels"][objects.CELL_SPEC_LABEL] == "shardKey=sensor-ts"
    # What the cells differ in by design, for compare from the archive.
    assert run["spec"]["labels"][objects.VARIES_SPEC_LABEL] == "sharding"


def test_value_names_must_name_each_value_once_and_includes_use_them() -> None:
    twice = shard_key_spec()
    twice["dimensions"][0]["valueNames"] = ["a", "a", "b"]
    with pytest.raises(SpecError, match="valueNames must name each value once, 3 distinct"):
        expand(twice)
    short = shard_key_spec()
    short["dimensions"][0]["valueNames"] = ["a"]
    with pytest.raises(SpecError, match="valueNames must name each value once"):
        expand(short)
    with pytest.raises(SpecError, match="shardKey must be one of its valueNames"):
        expand(shard_key_spec(include=[{"shardKey": SHARD_KEYS["ts"]}]))


def test_interleaved_order_is_abab() -> None:
    m = expand(spec())
    order = mx.slots(m, 2, "Interleaved", None)
    assert [(s.cell, s.repetition) for s in order] == [
        (0, 1),
        (1, 1),
        (2, 1),
        (3, 1),
        (0, 2),
        (1, 2),
        (2, 2),
        (3, 2),
    ]


def test_random_order_is_reproducible_from_its_seed() -> None:
    m = expand(spec())
    a = mx.slots(m, 5, "Random", 42)
    assert a == mx.slots(m, 5, "Random", 42)
    assert a != mx.slots(m, 5, "Random", 43)
    assert sorted(a, key=lambda s: (s.repetition, s.cell)) == mx.slots(m, 5, "Interleaved", None)
    assert mx.default_seed("uid-1") == mx.default_seed("uid-1") != mx.default_seed("uid-2")


def test_randomized_rounds_run_every_cell_once_per_round_in_a_fresh_order() -> None:
    m = expand(spec())
    order = mx.slots(m, 6, "RandomizedRounds", 7)
    rounds = [[s.cell for s in order if s.repetition == r] for r in range(1, 7)]
    # Round by round: every slot of round r before any of round r + 1.
    assert [s.repetition for s in order] == sorted(s.repetition for s in order)
    assert all(sorted(r) == [0, 1, 2, 3] for r in rounds)  # each cell once per round
    assert len({tuple(r) for r in rounds}) > 1  # a fresh order per round, not one reused
    assert rounds != [[0, 1, 2, 3]] * 6  # not Interleaved
    assert order == mx.slots(m, 6, "RandomizedRounds", 7)  # replayable from the seed
    assert order != mx.slots(m, 6, "RandomizedRounds", 8)
    # A round added later (adaptive repetitions) leaves the earlier ones as they were.
    assert mx.slots(m, 7, "RandomizedRounds", 7)[: len(order)] == order
    assert (
        mx.slots(m, 7, "RandomizedRounds", 7, first=7)
        == mx.slots(m, 7, "RandomizedRounds", 7)[len(order) :]
    )
    assert mx.seeded("RandomizedRounds") and mx.seeded("Random")
    assert not mx.seeded("Interleaved")


def test_a_calibration_is_two_identical_cells_on_two_clusters() -> None:
    body = spec(calibration=True)
    del body["dimensions"]
    m = expand(body)
    assert [m.label(c.index) for c in m.cells] == ["calibration=a", "calibration=b"]
    assert [c.group for c in m.cells] == [0, 1]  # a cluster each, from one template
    assert m.groups[0] == m.groups[1] == body["cluster"]
    assert m.cells[0].run_spec == m.cells[1].run_spec == body["run"]
    assert m.baseline == 0
    meta = {"name": "aa", "namespace": "ns", "uid": "u"}
    names = {cluster_of({"metadata": meta, "spec": body}, m, g)["metadata"]["name"] for g in (0, 1)}
    assert names == {"aa-k0", "aa-k1"}
    with pytest.raises(SpecError, match="a calibration has no dimensions"):
        expand(spec(calibration=True))


def test_runs_are_single_repetitions_with_cell_labels_and_the_archive_prefix() -> None:
    body = {
        "metadata": {"name": "study", "namespace": "ns", "uid": "u1"},
        "spec": spec(archive={"bucket": "lab", "prefix": "p"}),
    }
    m = expand(body["spec"])
    run = run_of(body, m, Slot(3, 2))
    assert run["metadata"]["name"] == "study-c3-r2"
    assert run["spec"]["clusterRef"] == {"name": "study-k3"}
    assert run["spec"]["repetitions"] == 1
    assert run["spec"]["labels"][objects.CELL_SPEC_LABEL] == "shards=2,version=8.0.4"
    assert run["spec"]["labels"]["shards"] == "2"
    assert objects.VARIES_SPEC_LABEL not in run["spec"]["labels"]  # cluster dimensions only
    assert run["spec"]["archive"] == {"bucket": "lab", "prefix": "p/experiments/study"}
    assert run["metadata"]["ownerReferences"][0]["uid"] == "u1"
    cluster = cluster_of(body, m, 1)
    assert cluster["metadata"]["name"] == "study-k1"
    assert cluster["spec"]["version"] == "8.0.4"


# --- scheduling ---------------------------------------------------------------------------------

ORDER = [Slot(0, 1), Slot(1, 1), Slot(0, 2), Slot(1, 2)]
TWO_CLUSTERS = {0: 0, 1: 1}
READY = sched.ObservedCluster("Ready", False, 10)


def decide(
    clusters: dict[int, sched.ObservedCluster],
    runs: dict[Slot, str | None],
    policy: sched.Policy | None = None,
    group_of: dict[int, int] | None = None,
    **kw: Any,
) -> sched.Decision:
    return sched.decide(
        ORDER,
        group_of or TWO_CLUSTERS,
        sched.Observed(clusters, runs, **kw),
        policy or policy_of(),
    )


def test_first_step_creates_the_first_cells_cluster() -> None:
    d = decide({}, {})
    assert d.actions == [sched.CreateCluster(0)]
    assert d.phase == "Running" and d.current == Slot(0, 1)


def test_run_starts_when_its_cluster_is_ready_and_not_before() -> None:
    assert decide({0: sched.ObservedCluster("Provisioning", False, 5)}, {}).actions == []
    assert decide({0: READY}, {}).actions == [sched.CreateRun(Slot(0, 1))]


def test_one_run_at_a_time_per_cluster() -> None:
    assert decide({0: READY}, {Slot(0, 1): "Running"}).actions == []


def test_next_cell_makes_room_then_creates_its_cluster() -> None:
    # Cell 0 rep 1 done; cell 1 needs its own cluster; the limit is 1: delete cluster 0 first.
    d = decide({0: READY}, {Slot(0, 1): "Succeeded"})
    assert d.actions == [sched.DeleteCluster(0, "room for the next cell's cluster")]
    assert (
        decide({0: sched.ObservedCluster("Ready", True, 30)}, {Slot(0, 1): "Succeeded"}).actions
        == []
    )
    assert decide({}, {Slot(0, 1): "Succeeded"}).actions == [sched.CreateCluster(1)]


def test_a_cluster_whose_cells_are_done_follows_the_policy() -> None:
    runs = {s: "Succeeded" for s in ORDER if s.cell == 0}
    runs[Slot(1, 1)] = "Succeeded"
    d = decide({0: READY, 1: READY}, runs, policy_of(maxClusters=2))
    assert sched.DeleteCluster(0, "its cells are done") in d.actions
    assert sched.CreateRun(Slot(1, 2)) in d.actions
    d = decide({0: READY, 1: READY}, runs, policy_of(maxClusters=2, clusterPolicy="Keep"))
    assert sched.KeepCluster(0) in d.actions


def test_max_clusters_two_runs_both_clusters_at_once() -> None:
    d = decide({0: READY, 1: READY}, {}, policy_of(maxClusters=2))
    assert d.actions == [sched.CreateRun(Slot(0, 1)), sched.CreateRun(Slot(1, 1))]


def test_run_variants_reuse_one_cluster() -> None:
    d = decide({0: READY}, {Slot(0, 1): "Succeeded"}, group_of={0: 0, 1: 0})
    assert d.actions == [sched.CreateRun(Slot(1, 1))]


def test_failed_cluster_fails_its_cells_and_stop_ends_the_experiment() -> None:
    failed = sched.ObservedCluster("Failed", False, 10)
    d = decide({0: failed}, {})
    assert d.actions[0] == sched.FailSlots((Slot(0, 1), Slot(0, 2)), 0, "its cluster failed")
    assert sched.DeleteCluster(0, "its cells are done") in d.actions
    assert d.phase == "Running"  # until the cluster is gone
    done = decide({}, {}, failed=frozenset({Slot(0, 1), Slot(0, 2)}))
    assert done.phase == "Failed" and done.actions == []


def test_continue_goes_on_with_the_other_cells_and_keep_on_failure_keeps_the_cluster() -> None:
    policy = policy_of(onCellFailure="Continue", clusterPolicy="KeepOnFailure")
    d = decide({0: sched.ObservedCluster("Failed", False, 10)}, {}, policy)
    assert sched.KeepCluster(0) in d.actions
    # The kept failed cluster does not count against maxClusters: cell 1's cluster is created.
    d = decide(
        {0: sched.ObservedCluster("Failed", False, 10)},
        {},
        policy,
        failed=frozenset({Slot(0, 1), Slot(0, 2)}),
        kept=frozenset({0}),
    )
    assert d.actions == [sched.CreateCluster(1)]
    runs = {Slot(1, 1): "Succeeded", Slot(1, 2): "Succeeded"}
    d = decide(
        {0: sched.ObservedCluster("Failed", False, 10)},
        runs,
        policy,
        failed=frozenset({Slot(0, 1), Slot(0, 2)}),
        kept=frozenset({0}),
    )
    assert d.phase == "Succeeded"


def test_a_cluster_never_ready_times_out() -> None:
    slow = sched.ObservedCluster("Provisioning", False, 901)
    d = decide({0: slow}, {})
    assert isinstance(d.actions[0], sched.FailSlots)
    assert "not Ready after 900s" in d.actions[0].message


def test_a_failed_run_stops_new_work_but_waits_for_running_ones() -> None:
    policy = policy_of(maxClusters=2)
    d = decide({0: READY, 1: READY}, {Slot(0, 1): "Failed", Slot(1, 1): "Running"}, policy)
    assert not any(isinstance(a, sched.CreateRun) for a in d.actions)
    assert d.phase == "Running"


def test_clusters_reserved_for_a_round_to_come_stay_until_room_is_needed() -> None:
    runs = {s: "Succeeded" for s in ORDER if s.cell == 0}
    runs[Slot(1, 1)] = "Succeeded"
    two = policy_of(maxClusters=2)
    d = decide({0: READY, 1: READY}, runs, two, reserved=frozenset({0, 1}))
    assert d.actions == [sched.CreateRun(Slot(1, 2))]  # cluster 0 kept for the next round
    # With room for one cluster only, a reserved idle cluster still makes room.
    d = decide({0: READY}, {Slot(0, 1): "Succeeded"}, reserved=frozenset({0, 1}))
    assert d.actions == [sched.DeleteCluster(0, "room for the next cell's cluster")]


def test_everything_done_and_deleted_succeeds() -> None:
    d = decide({}, {s: "Succeeded" for s in ORDER})
    assert d.phase == "Succeeded" and d.actions == [] and d.current is None


# --- Duet ---------------------------------------------------------------------------------------

TIMED = {"workloads": [{"name": "a"}], "run": {"durationSeconds": 60}}
RUN_PAIR = {
    "name": "wc",
    "target": "run",
    "field": "mongo.writeConcern",
    "values": ["1", "majority"],
}


def test_a_duet_is_two_cells_each_on_a_cluster_of_its_own() -> None:
    # Only a run field differs, which would share one cluster in any other order: a Duet's two
    # runs go at once, so each has its own.
    m = expand(spec(order="Duet", dimensions=[RUN_PAIR], run=TIMED))
    assert [c.group for c in m.cells] == [0, 1]
    assert m.groups[0] == m.groups[1]
    assert mx.slots(m, 2, "Duet", None) == [Slot(0, 1), Slot(1, 1), Slot(0, 2), Slot(1, 2)]
    assert mx.partner(Slot(0, 2)) == Slot(1, 2) and mx.partner(Slot(1, 2)) == Slot(0, 2)
    aa = spec(order="Duet", calibration=True, run=TIMED)
    del aa["dimensions"]
    assert [c.group for c in expand(aa).cells] == [0, 1]  # an A/A duet


def test_a_duet_of_more_or_fewer_than_two_cells_is_refused() -> None:
    with pytest.raises(SpecError, match=r"order Duet takes exactly two cells.* has 4"):
        expand(spec(order="Duet", run=TIMED))
    with pytest.raises(SpecError, match="has 1"):
        expand(spec(order="Duet", dimensions=[RUN_PAIR], exclude=[{"wc": "1"}], run=TIMED))
    # A window of its own per side would pair second i of A with some other second of B.
    with pytest.raises(SpecError, match=r"order Duet needs run.durationSeconds in every cell"):
        expand(spec(order="Duet", dimensions=[RUN_PAIR]))


def test_a_duet_starts_both_runs_of_a_round_together() -> None:
    duet = policy_of(order="Duet")
    starting = sched.ObservedCluster("Provisioning", False, 10)
    # One cluster Ready, its partner's not yet: neither run starts (an unpaired start would
    # measure A alone).
    d = decide({0: READY, 1: starting}, {}, duet)
    assert not [a for a in d.actions if isinstance(a, sched.CreateRun)]
    d = decide({0: READY, 1: READY}, {}, duet)
    assert d.actions == [sched.CreateRun(Slot(0, 1)), sched.CreateRun(Slot(1, 1))]
    # A finished round 1 first: it waits for B before round 2 starts.
    d = decide({0: READY, 1: READY}, {Slot(0, 1): "Succeeded", Slot(1, 1): "Running"}, duet)
    assert not [a for a in d.actions if isinstance(a, sched.CreateRun)]
    d = decide({0: READY, 1: READY}, {Slot(0, 1): "Succeeded", Slot(1, 1): "Succeeded"}, duet)
    assert d.actions == [sched.CreateRun(Slot(0, 2)), sched.CreateRun(Slot(1, 2))]
    # Restarted between the two creates: the partner of a created run starts alone, at once.
    d = decide({0: READY, 1: READY}, {Slot(0, 1): "Pending"}, duet)
    assert d.actions == [sched.CreateRun(Slot(1, 1))]


def test_a_duets_runs_name_their_pair_side_and_the_partners_clients() -> None:
    body = {
        "metadata": {"name": "d", "namespace": "ns", "uid": "u"},
        "spec": spec(
            order="Duet",
            dimensions=[RUN_PAIR],
            run=TIMED | {"clients": {"parallelism": 2}},
        ),
    }
    m = expand(body["spec"])
    a, b = (run_of(body, m, Slot(c, 3)) for c in (0, 1))
    assert a["spec"]["duet"] == {"name": "d-r3", "side": 0, "peerParallelism": 2}
    assert b["spec"]["duet"] == {"name": "d-r3", "side": 1, "peerParallelism": 2}
    assert a["spec"]["clusterRef"] != b["spec"]["clusterRef"]  # two targets: no queue
    # Both clusters' pods pair by the experiment's name.
    assert {cluster_of(body, m, g)["spec"]["placement"]["duet"] for g in (0, 1)} == {"d"}
    assert "duet" not in run_of(body | {"spec": spec()}, expand(spec()), Slot(0, 1))["spec"]
