"""Unit tier: grouping runs into configurations, comparability, flags and benchstat-style
verdicts, on finished runs made by the code that writes them (finished_runs.py)."""

from __future__ import annotations

import pytest
from finished_runs import FinishedRun, benchmark_run

from mongobench_results import compare, records, summary

pytestmark = pytest.mark.unit


def inputs(*runs: FinishedRun) -> list[compare.RunInput]:
    return [compare.RunInput(r.key, r.run) for r in runs]


def row(result: compare.Comparison, workload: str, metric: str, config: str) -> compare.Row:
    return next(
        r
        for r in result.rows
        if (r.workload, r.metric.id, r.configuration) == (workload, metric, config)
    )


def test_a_real_difference_is_shown_and_no_difference_is_a_tilde() -> None:
    base = benchmark_run("rs", throughput={"a": 1000, "c": 2000}, seed=1)
    new = benchmark_run("sharded", throughput={"a": 1300, "c": 2000}, shards=3, seed=2)
    result = compare.compare(inputs(base, new), metrics=("throughput",))
    a = row(result, "a", "throughput", "sharded")
    assert a.significant and a.verdict.startswith("+") and a.verdict.endswith("better")
    assert a.difference is not None and a.difference.welch_p is not None
    assert a.difference.ci_low is not None and a.difference.ci_low > 0  # excludes "no change"
    c = row(result, "c", "throughput", "sharded")
    assert c.verdict == "~" and c.significant is False
    assert row(result, "a", "throughput", "rs").verdict == "baseline"
    assert result.baseline == "rs"


def test_lower_latency_and_less_cpu_are_better_and_cpu_changes_in_points() -> None:
    base = benchmark_run("slow", throughput=1000, cpu=(60, 20), seed=3)
    new = benchmark_run("fast", throughput=2000, cpu=(40, 20), seed=4)
    result = compare.compare(inputs(base, new), metrics=("avg", "cpu"))
    read = row(result, "a", "READ avg", "fast")
    assert read.significant and read.verdict.startswith("-") and read.verdict.endswith("better")
    cpu = row(result, "a", "cpu database", "fast")
    assert cpu.metric.points and "pp" in cpu.verdict and cpu.verdict.endswith("better")
    assert cpu.difference is not None and cpu.difference.delta == pytest.approx(-20, abs=3)


def test_mongos_cpu_compares_per_role_in_cores_and_a_run_without_it_is_missing() -> None:
    base = benchmark_run("two", shards=2, mongos_cores=1.0, seed=3)
    new = benchmark_run("four", shards=4, mongos_cores=2.0, seed=4)
    result = compare.compare(inputs(base, new), metrics=("cpu:mongos", "cpu:mongod"))
    mongos = row(result, "a", "cpu:mongos", "four")
    assert mongos.metric.unit == "cores" and not mongos.metric.points
    assert (
        mongos.significant and mongos.verdict.startswith("+") and mongos.verdict.endswith("worse")
    )
    assert mongos.difference is not None and mongos.difference.delta == pytest.approx(1.0, abs=0.1)
    assert row(result, "a", "cpu:mongos", "two").summary.mean == pytest.approx(1.0, abs=0.05)
    assert row(result, "a", "cpu:mongod", "four").summary.mean == pytest.approx(4.0, abs=0.2)
    # A replica set has no routers: no row for it, rather than 0 cores to compare with.
    rs = benchmark_run("rs", seed=5)
    result = compare.compare(inputs(rs, new), metrics=("cpu:mongos",))
    assert [(r.configuration, r.verdict) for r in result.rows] == [("four", "no baseline")] * 2


def test_an_unknown_role_metric_is_refused_with_the_choices() -> None:
    with pytest.raises(compare.ComparisonError, match="cpu:mongos"):
        compare.compare(inputs(benchmark_run("x")), metrics=("cpu:router",))


def test_flags_small_samples_noise_and_littles_law() -> None:
    base = benchmark_run("base", repetitions=2, seed=5)
    noisy = benchmark_run("noisy", repetitions=3, sd=250, seed=6, little_broken=("a#1", "a#3"))
    result = compare.compare(inputs(base, noisy), metrics=("throughput",))
    assert any("n=2 < 3" in f for f in row(result, "a", "throughput", "base").flags)
    flags = row(result, "a", "throughput", "noisy").flags
    assert any(f.startswith("CV") and "> 10%" in f for f in flags)
    assert "Little's law fails in 2 of 3 steps" in flags


def test_runs_with_different_workload_parameters_are_not_comparable_and_say_why() -> None:
    base = benchmark_run("t4", threads=4)
    other = benchmark_run(
        "t8", threads=8, spec={"mongo": {"writeConcern": "majority"}, "database": "elsewhere"}
    )
    result = compare.compare(inputs(base, other), metrics=("throughput",))
    assert result.incomparable
    assert all("mongo.writeConcern acknowledged vs majority" in r for r in result.incomparable)
    # Where the data lives is no workload parameter, and the clients' concurrency is a
    # dimension users compare on purpose: said in a note, not refused.
    assert not [r for r in result.incomparable if "database" in r or "threads" in r]
    assert any("run.threads 4 vs 8" in n for n in result.notes)
    r = row(result, "a", "throughput", "t8")
    assert r.verdict == "not comparable" and r.significant is None


def test_a_parameter_varied_by_design_is_compared_not_refused() -> None:
    """An experiment's run dimension (the write-concern study's mongo.writeConcern) is what it
    compares: the cells differ in it on purpose; any other difference still refuses."""
    acked = benchmark_run("acked", seed=7)
    journaled = benchmark_run(
        "journaled", spec={"mongo": {"writeConcern": "journaled"}}, throughput=800, seed=8
    )
    result = compare.compare(
        inputs(acked, journaled), metrics=("throughput",), varied=["mongo.writeConcern"]
    )
    assert not result.incomparable
    assert row(result, "a", "throughput", "journaled").verdict.endswith("worse")
    elsewhere = benchmark_run(
        "upsert", spec={"mongo": {"writeConcern": "journaled", "upsert": True}}
    )
    refused = compare.compare(
        inputs(acked, elsewhere), metrics=("throughput",), varied=["mongo.writeConcern"]
    )
    assert [r for r in refused.incomparable if "mongo.upsert" in r]
    assert not [r for r in refused.incomparable if "writeConcern" in r]
    # The study's processes (client pods) likewise: no note that the cells differ in them.
    one = benchmark_run("p1", spec={"clients": {"parallelism": 1}}, seed=3)
    two = benchmark_run("p2", spec={"clients": {"parallelism": 2}}, seed=4)
    assert compare.compare(inputs(one, two), metrics=("throughput",)).notes
    varied = compare.compare(inputs(one, two), metrics=("throughput",), varied=["clients"])
    assert varied.notes == []


def test_a_property_varied_by_design_inside_run_properties_is_compared_not_refused() -> None:
    """Study 4's bucketed write test varies run.properties.bucketsize: the cells' properties
    differ in it on purpose; another property that differs still refuses."""
    per_doc = benchmark_run("doc", spec={"run": {"properties": {"bucketsize": "0"}}}, seed=7)
    bucketed = benchmark_run("bucket", spec={"run": {"properties": {"bucketsize": "60"}}}, seed=8)
    varied = ["run.properties.bucketsize"]
    assert compare.compare(inputs(per_doc, bucketed), metrics=("throughput",)).incomparable
    result = compare.compare(inputs(per_doc, bucketed), metrics=("throughput",), varied=varied)
    assert not result.incomparable
    other = benchmark_run(
        "other", spec={"run": {"properties": {"bucketsize": "60", "sensors": "5"}}}, seed=9
    )
    refused = compare.compare(inputs(per_doc, other), metrics=("throughput",), varied=varied)
    assert [r for r in refused.incomparable if "run.properties" in r]


def test_one_client_against_two_is_a_comparison_not_a_refusal() -> None:
    one = benchmark_run("c1", spec={"clients": {"parallelism": 1}}, seed=3)
    two = benchmark_run("c2", spec={"clients": {"parallelism": 2}}, throughput=1500, seed=4)
    result = compare.compare(inputs(one, two), metrics=("throughput",))
    assert not result.incomparable
    assert result.notes == ["c2 differs from c1 in clients.parallelism 1 vs 2"]
    assert row(result, "a", "throughput", "c2").verdict.endswith("better")


def test_group_by_a_label_pools_the_repetitions_of_several_runs() -> None:
    runs = [
        benchmark_run("aws-1", labels={"cloud": "aws"}, repetitions=2, seed=7),
        benchmark_run("aws-2", labels={"cloud": "aws"}, repetitions=2, seed=8),
        benchmark_run("os-1", labels={"cloud": "openstack"}, repetitions=3, throughput=800, seed=9),
    ]
    result = compare.compare(inputs(*runs), group_by="cloud", baseline="openstack")
    assert [c.name for c in result.configurations] == ["openstack", "aws"]
    aws = row(result, "a", "throughput", "aws")
    assert aws.summary.n == 4 and aws.verdict.endswith("better")


def test_group_by_a_target_dimension_and_baseline_by_run_name() -> None:
    runs = [
        benchmark_run("three", shards=3, seed=10),
        benchmark_run("five", shards=5, throughput=1500, seed=11),
    ]
    result = compare.compare(inputs(*runs), group_by="shards", baseline="three")
    assert [c.name for c in result.configurations] == ["shards=3", "shards=5"]
    assert row(result, "a", "throughput", "shards=5").significant


def test_bad_input_is_a_comparison_error_with_one_line() -> None:
    runs = inputs(benchmark_run("x"), benchmark_run("y", seed=2))
    with pytest.raises(compare.ComparisonError, match="baseline 'z' is none of"):
        compare.compare(runs, baseline="z")
    with pytest.raises(compare.ComparisonError, match="no run has a label 'nope'"):
        compare.compare(runs, group_by="nope")
    with pytest.raises(compare.ComparisonError, match="unknown metric 'p42'"):
        compare.compare(runs, metrics=("p42",))
    with pytest.raises(compare.ComparisonError, match="nothing to compare"):
        compare.compare([])
    empty = benchmark_run("empty", workloads=())
    with pytest.raises(compare.ComparisonError, match="no measured step"):
        compare.compare(inputs(empty))


def test_the_rank_test_with_three_repetitions_cannot_decide_and_says_so() -> None:
    base = benchmark_run("u1", throughput=1000, seed=12)
    new = benchmark_run("u2", throughput=2000, seed=13)
    welch = compare.compare(inputs(base, new), metrics=("throughput",))
    rank = compare.compare(inputs(base, new), metrics=("throughput",), test="utest")
    assert row(welch, "a", "throughput", "u2").significant
    r = row(rank, "a", "throughput", "u2")
    assert r.p == pytest.approx(0.1) and r.verdict == "~"
    assert any("rank test needs n >= 4" in f for f in r.flags)
    assert any("fewer than 4 repetitions" in n for n in rank.notes)


def test_json_shape_carries_every_figure() -> None:
    base, new = benchmark_run("j1", seed=14), benchmark_run("j2", throughput=1200, seed=15)
    doc = compare.compare(inputs(base, new)).to_dict()
    assert doc["baseline"] == "j1" and doc["test"] == "welch"
    assert doc["configurations"][1]["shape"]["topology"] == "ReplicaSet"
    r = next(x for x in doc["rows"] if x["configuration"] == "j2" and x["metric"] == "throughput")
    for key in (
        "mean",
        "sd",
        "n",
        "ciLow",
        "ciHigh",
        "delta",
        "deltaCiLow",
        "deltaCiHigh",
        "relative",
        "welchP",
        "rankP",
        "hedgesG",
        "verdict",
        "flags",
        "values",
    ):
        assert key in r
    assert len(r["values"]) == 3


def test_one_table_is_one_family_and_holm_keeps_a_chance_finding_out() -> None:
    """Four workloads, only A really changed (+4.5%). Workload B differs by chance at p = 0.023;
    unadjusted that is a verdict, with Holm across the table's four comparisons it is not."""
    four = ("a", "b", "c", "d")
    base = benchmark_run("base", workloads=four, seed=5)
    new = benchmark_run(
        "new", workloads=four, throughput={"a": 1045, "b": 1000, "c": 1000, "d": 1000}, seed=105
    )
    runs = inputs(base, new)
    raw = compare.compare(runs, metrics=("throughput",), adjust="none")
    holm = compare.compare(runs, metrics=("throughput",))
    assert holm.adjust == "holm" and holm.family == 4
    chance = row(raw, "b", "throughput", "new")
    assert chance.p is not None and chance.p < 0.05 and chance.verdict.endswith("better")
    held = row(holm, "b", "throughput", "new")
    assert held.p == chance.p and held.verdict == "~" and held.significant is False
    # Holm by hand: sorted p-values times 4, 3, 2, 1, made monotone.
    ps = sorted((r.p, r.workload) for r in holm.rows if r.p is not None)
    running = 0.0
    for k, (p, w) in enumerate(ps):
        running = max(running, min(1.0, (4 - k) * p))
        assert row(holm, w, "throughput", "new").p_adjusted == pytest.approx(running)
    for r in holm.rows:
        if r.p_adjusted is not None:
            assert r.significant == (r.p_adjusted < 0.05)
    assert holm.adjustment_text() == "Holm across the 4 comparisons of this table"
    bh = compare.compare(runs, metrics=("throughput",), adjust="bh")
    assert bh.adjustment_text().startswith("Benjamini-Hochberg across the 4")
    assert compare.significance(
        [(row(raw, w, "throughput", "base").values, row(raw, w, "throughput", "new").values)
         for w in four]
    ) == [r.significant for r in holm.rows if not r.baseline]  # fmt: skip
    with pytest.raises(compare.ComparisonError, match="unknown adjustment 'bonf'"):
        compare.compare(runs, adjust="bonf")  # type: ignore[arg-type]


def test_invalid_trials_are_left_out_and_counted_with_their_reasons() -> None:
    base = benchmark_run("base", workloads=("a",), repetitions=4, seed=20, invalid={})
    new = benchmark_run(
        "new",
        workloads=("a",),
        repetitions=4,
        throughput=1200,
        seed=21,
        invalid={"a#2": ("NoisyNode",), "a#4": ("NoisyNode", "ClientBound")},
    )
    result = compare.compare(inputs(base, new), metrics=("throughput",))
    r = row(result, "a", "throughput", "new")
    valid = [s for s in new.run["status"]["steps"] if s.get("label") in ("run a #1", "run a #3")]
    assert r.values == pytest.approx([s["result"]["throughput"] for s in valid], abs=1e-3)
    assert r.validity.text() == "2/4 valid (ClientBound 1, NoisyNode 2)"
    # Two valid trials are fewer than the test needs: the figures stay, no verdict.
    assert r.verdict == "too few valid trials (2 < 3)" and r.significant is None and r.p is None
    assert row(result, "a", "throughput", "base").validity.text() == "4/4 valid"
    kept = compare.compare(inputs(base, new), metrics=("throughput",), include_invalid=True)
    k = row(kept, "a", "throughput", "new")
    assert k.summary.n == 4 and k.verdict.endswith("better")
    assert "includes 2 invalid trials" in k.flags
    assert k.to_dict()["validity"] == {
        "valid": 2,
        "trials": 4,
        "judged": 4,
        "reasons": {"ClientBound": 1, "NoisyNode": 2},
        "includedInvalid": True,
    }
    # Runs from before validity existed were never judged: they count, and say so.
    old = compare.compare(inputs(benchmark_run("x"), benchmark_run("y", seed=2)))
    assert row(old, "a", "throughput", "y").validity.text() == "unjudged"


def test_accepted_reasons_count_the_trial_and_are_said_in_the_cell() -> None:
    base = benchmark_run("base", workloads=("a",), repetitions=4, seed=22, invalid={})
    new = benchmark_run(
        "new", workloads=("a",), repetitions=4, seed=23, invalid={"a#4": ("NoisyNode",)}
    )
    bound = {"reason": "ClientBound", "message": "client CPU 104% of its limit", "accepted": True}
    for s in new.run["status"]["steps"]:
        if s.get("kind") == "run":
            verdict = s.setdefault("validity", {"valid": True, "reasons": [], "attempt": 1})
            verdict["reasons"] = [bound, *verdict["reasons"]]
    result = compare.compare(inputs(base, new), metrics=("throughput",))
    r = row(result, "a", "throughput", "new")
    assert r.summary.n == 3  # the accepted reason excludes nothing; NoisyNode still does
    assert r.validity.text() == "3/4 valid (NoisyNode 1; accepted: ClientBound 4)"
    assert r.validity.to_dict()["accepted"] == {"ClientBound": 4}
    assert row(result, "a", "throughput", "base").validity.text() == "4/4 valid"
    assert "accepted" not in row(result, "a", "throughput", "base").validity.to_dict()


def test_a_cell_whose_every_trial_is_invalid_is_a_row_that_says_why() -> None:
    """Nothing is lost: the workload stays in the table, without figures, with the reasons."""
    bad = {f"a#{i}": ("ClientBound",) for i in (1, 2, 3)}
    base = benchmark_run("base", workloads=("a",), repetitions=3, seed=40, invalid=bad)
    new = benchmark_run("new", workloads=("a",), repetitions=3, seed=41, invalid=bad)
    result = compare.compare(inputs(base, new), metrics=("throughput",))
    for name in ("base", "new"):
        r = row(result, "a", "throughput", name)
        assert r.summary.n == 0 and r.values == ()
        assert r.verdict == "no valid trials: 0/3 valid (ClientBound 3)"
        assert r.significant is None


def test_the_cv_flag_prints_the_value_it_tests() -> None:
    assert compare.cv_text(0.1048) == "10.5%"
    assert compare.cv_text(0.1004) == "10.04%"
    assert compare.cv_text(0.29) == "29%"
    base = benchmark_run("base", workloads=("a",), sd=105, seed=30)
    r = row(compare.compare(inputs(base), metrics=("throughput",)), "a", "throughput", "base")
    cv = r.summary.cv
    assert cv is not None and cv > 0.1
    flag = next(f for f in r.flags if f.startswith("CV "))
    shown = float(flag.split()[1].rstrip("%"))
    assert shown > 10 and flag == f"CV {compare.cv_text(cv)} > 10%"


def test_the_bootstrap_interval_is_named_and_the_verdict_does_not_depend_on_it() -> None:
    base = benchmark_run("base", workloads=("a",), repetitions=6, seed=40)
    new = benchmark_run("new", workloads=("a",), repetitions=6, throughput=1100, seed=41)
    parametric = compare.compare(inputs(base, new), metrics=("throughput",))
    booted = compare.compare(inputs(base, new), metrics=("throughput",), ci="bootstrap")
    p, b = row(parametric, "a", "throughput", "new"), row(booted, "a", "throughput", "new")
    assert p.verdict == b.verdict and p.p == b.p
    assert p.to_dict()["intervalMethod"].startswith("Welch-Satterthwaite")
    assert b.to_dict()["intervalMethod"] == "percentile bootstrap (2000 resamples, seed 25)"
    assert booted.to_dict()["intervalMethod"] == b.to_dict()["intervalMethod"]
    assert p.difference is not None and b.difference is not None
    assert p.difference.relative_ci != b.difference.relative_ci


def test_the_experiments_status_rows_keep_the_adjusted_p_and_the_validity() -> None:
    base = benchmark_run("base", workloads=("a",), repetitions=4, seed=50, invalid={})
    new = benchmark_run(
        "new", workloads=("a",), repetitions=4, throughput=1300, seed=51, invalid={}
    )
    doc = compare.compare(inputs(base, new), metrics=("throughput",)).to_dict()
    assert (doc["adjust"], doc["family"]) == ("holm", 1)
    kept = summary.compact_rows(doc["rows"])
    changed = next(r for r in kept if not r["baseline"])
    assert changed["pAdjusted"] == pytest.approx(changed["p"])  # a family of one
    assert changed["validity"]["valid"] == 4 and changed["verdict"].endswith("better")


def test_loads_are_a_workload_of_their_own_with_time_to_load_first() -> None:
    """Unit tier: every measured load (load.repetitions) is a trial of workload `load`."""
    slow = benchmark_run("slow", loads=3, load_throughput=1000, sd=10, seed=40)
    fast = benchmark_run("fast", loads=3, load_throughput=2000, sd=10, seed=41)
    result = compare.compare(inputs(slow, fast), baseline="slow", metrics=("throughput", "p99"))
    load_rows = [r for r in result.rows if r.workload == "load"]
    assert [r.metric.id for r in load_rows if r.configuration == "fast"] == [
        "time to load",
        "throughput",
        "INSERT p99",
    ]
    seconds = row(result, "load", "time to load", "fast")
    assert seconds.summary.n == 3 and seconds.metric.unit == "s"
    # 1000 records at ~2000/s load in ~0.5 s, against ~1 s: faster is better.
    assert seconds.summary.mean is not None and 0.4 < seconds.summary.mean < 0.6
    assert seconds.verdict.endswith("better") and seconds.verdict.startswith("-")
    assert row(result, "load", "throughput", "fast").verdict.endswith("better")
    # The run phase's workloads keep their rows, after the load.
    assert result.rows[0].workload == "load" and {"a", "c"} <= {r.workload for r in result.rows}


def test_loads_differing_in_what_they_insert_are_not_comparable() -> None:
    """Unit tier: a load's parameters are its own (record count, batch, write concern)."""
    small = benchmark_run("small", loads=3, seed=42)
    batched = benchmark_run("batched", loads=3, seed=43, spec={"load": {"batchSize": 100}})
    result = compare.compare(inputs(small, batched), baseline="small", metrics=("throughput",))
    assert any("workload load" in i and "load.batchSize 1 vs 100" in i for i in result.incomparable)
    # A run-phase parameter does not make the loads incomparable.
    longer = benchmark_run("longer", loads=3, seed=44, spec={"run": {"operationCount": 800}})
    result = compare.compare(inputs(small, longer), baseline="small", metrics=("throughput",))
    assert not any("workload load" in i for i in result.incomparable)


def test_group_by_two_keys_pools_by_their_combination() -> None:
    """Unit tier: a label and a target dimension together; one-key naming is unchanged."""
    runs = [
        benchmark_run("aws-3", labels={"cloud": "aws"}, shards=3, seed=50),
        benchmark_run("aws-5", labels={"cloud": "aws"}, shards=5, throughput=1500, seed=51),
        benchmark_run("os-3", labels={"cloud": "os"}, shards=3, throughput=800, seed=52),
        benchmark_run("os-3b", labels={"cloud": "os"}, shards=3, throughput=800, seed=53),
    ]
    result = compare.compare(inputs(*runs), group_by="cloud,shards", baseline="cloud=os,shards=3")
    names = [c.name for c in result.configurations]
    assert names == ["cloud=os,shards=3", "cloud=aws,shards=3", "cloud=aws,shards=5"]
    assert result.configurations[0].group == (("cloud", "os"), ("shards", "3"))
    assert row(result, "a", "throughput", "cloud=os,shards=3").summary.n == 6
    assert result.to_dict()["groupBy"] == ["cloud", "shards"]
    one_shape = inputs(runs[0], runs[2], runs[3])
    assert compare.compare(one_shape, group_by="cloud").configurations[0].name == "aws"
    with pytest.raises(compare.ComparisonError, match="no run has a label 'region'"):
        compare.compare(inputs(*runs), group_by="cloud,region")


def test_group_by_refuses_to_pool_targets_of_different_shapes() -> None:
    """Unit tier (issue 35): study 1's `--group-by platform,shards` put its "production" 3
    shards x 3 members in one configuration with the 3 shards x 1, one mean over both. Pooling
    targets that differ in a dimension no key names is refused, naming the key to add."""
    runs = [
        benchmark_run("node3", platform="eks", shards=3, members=1, seed=60),
        benchmark_run("prod", platform="eks", shards=3, members=3, throughput=800, seed=61),
        benchmark_run("node5", platform="eks", shards=5, members=1, throughput=1500, seed=62),
    ]
    with pytest.raises(compare.ComparisonError) as refused:
        compare.compare(inputs(*runs), group_by="platform,shards")
    assert str(refused.value) == (
        "--group-by platform,shards pools runs whose targets differ in members 1, 3 into "
        "configuration platform=eks,shards=3: add members to --group-by"
    )
    # A label pools them just as well: the check is on the targets, not the key's kind.
    with pytest.raises(compare.ComparisonError, match="differ in shards 3, 5"):
        compare.compare(inputs(runs[0], runs[2]), group_by="platform")
    result = compare.compare(inputs(*runs), group_by="platform,shards,members")
    assert [c.name for c in result.configurations] == [
        "platform=eks,shards=3,members=1",
        "platform=eks,shards=3,members=3",
        "platform=eks,shards=5,members=1",
    ]
    # Runs without a snapshot (shape unknown) are no evidence of a difference.
    unknown = benchmark_run("unknown", platform="eks", shards=3, members=1, seed=63)
    del unknown.run["status"]["clusterSnapshot"]
    assert compare.mixed_shape(inputs(runs[0], unknown)) is None


def test_a_standalone_is_never_pooled_with_a_one_member_replica_set() -> None:
    """Unit tier (issue 35): study 2's standalone mongod and the one-member replica set that
    stood in for it (oplog writes on every insert) are different targets: pooled by a key that
    does not tell them apart, the comparison is refused naming the topology; `standalone
    mongod` is how a report names the target."""
    one_member = benchmark_run("rs1", members=1, seed=70)
    alone = benchmark_run("sa", members=1, throughput=1100, seed=71)
    alone.run["status"]["clusterSnapshot"]["topology"] = {"type": "Standalone"}
    assert records.shape(alone.run).text() == "standalone mongod"
    with pytest.raises(compare.ComparisonError, match="differ in topology ReplicaSet, Standalone"):
        compare.compare(inputs(one_member, alone), group_by="platform")


def test_one_timed_operation_reads_as_its_run_time_in_seconds() -> None:
    """Unit tier: `--metric seconds` gives each workload's run time (one query from one thread:
    that query's own time, as study 3 timed it) and a load's time to load; shorter is better."""

    def timed(name: str, ops_per_second: float, seed: int) -> FinishedRun:
        return benchmark_run(
            name, workloads=("find",), operations=1, threads=1, throughput=ops_per_second,
            sd=0.01, loads=3, load_throughput=1000, seed=seed,
        )  # fmt: skip

    slow, fast = timed("slow", 1.0, 60), timed("fast", 2.0, 61)
    result = compare.compare(inputs(slow, fast), baseline="slow", metrics=("seconds",))
    assert {(r.workload, r.metric.id) for r in result.rows} == {
        ("load", "time to load"),
        ("find", "run time"),
    }
    base, query = row(result, "find", "run time", "slow"), row(result, "find", "run time", "fast")
    assert query.metric.unit == "s" and query.summary.n == 3
    assert base.summary.mean == pytest.approx(1.0, rel=0.05)  # one operation at 1 op/s
    assert query.summary.mean == pytest.approx(0.5, rel=0.05)
    assert query.outcome() == compare.FASTER and query.verdict.startswith("-")


def test_a_shard_key_difference_reads_as_the_key_mongodb_writes() -> None:
    """Unit tier: study 4's shard-key test names what differs between two cells as the keys
    (`{sensor: 1, ts: 1}` vs `{_id: hashed}`), not a block whose defaults its fields override."""
    base = benchmark_run("hashed", shards=2, seed=80)
    other = benchmark_run("sensor-ts", shards=2, seed=81)
    base.run["spec"]["sharding"] = {"key": "_id", "hashed": True}
    other.run["spec"]["sharding"] = {
        "key": "_id", "hashed": True,
        "fields": [{"field": "sensor", "type": "Ranged"}, {"field": "ts", "type": "Ranged"}],
    }  # fmt: skip
    result = compare.compare(inputs(base, other), baseline="hashed")
    configs = {c.name: c for c in result.configurations}
    assert compare.what_differs(configs["hashed"], configs["sensor-ts"]) == [
        "sharding {sensor: 1, ts: 1} vs {_id: hashed}"
    ]
