"""E2E scenarios, MongoCluster: written once, run on the local backend (`make test`) and on kind
(`make e2e-kind`).

Scenarios taking `version` run once per supported MongoDB release series on kind (5.0, 6.0, 7.0,
8.0) and once on local, where the model answers alike for every version; scenarios taking
`release` run per series on both (see conftest.py).

What each backend proves: on `local`, the operator against a real kube-apiserver, with the
in-memory wire model (localplane.mongomodel, its own rules) answering for every mongod and mongos;
on `kind`, the same bodies against real mongod 5.0 to 8.0: every command document the operator
builds is accepted (no `MongoDBError` Event), its user's roles cover every command (nothing
refused), the keyfile bootstrap as `__system` works from the operator pod (off the members'
loopback), real elections, a real drain of a shard holding chunks.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from kubernetes import client as k8s

from backends.base import Backend, Env, event_time
from backends.manifests import (
    CACHE_GB,
    mongocluster,
    replica_set,
    sharded,
    standalone,
)

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

OPERATOR_ROLES = [
    "clusterAdmin",
    "dbAdminAnyDatabase",
    "readWriteAnyDatabase",
    "userAdminAnyDatabase",
]
USERS = ["benchmark", "mongobench-admin", "mongobench-exporter", "mongobench-operator"]
# The database containers of a sharded cluster's pods (members and routers).
MONGO_NAMES = ("mongod", "mongos")
# replSetStepDown's own bound: secondaryCatchUpPeriodSecs (10) + electionTimeoutMillis (10 s).
ELECTION_BOUND_S = 30.0


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in obj["status"]["conditions"]}


def owned_by(obj: Any, uid: str) -> bool:
    return any(r.uid == uid for r in (obj.metadata.owner_references or []))


def hosts_of(env: Env, cluster: str, rs: str) -> list[str]:
    return list(next(s.hosts for s in env.mongo.layout(cluster).replica_sets if s.name == rs))


def assert_mongodb_happy(env: Env) -> None:
    """Every command accepted as sent, and by the operator's own user."""
    assert not env.mongodb_errors(), env.mongodb_errors()
    assert not env.refused_commands(), env.refused_commands()[:5]


def test_replica_set_is_ready_with_real_wiring_and_elects_after_a_step_down(
    backend: Backend, version: str, record_property: Any
) -> None:
    manifest = mongocluster("rs3", replica_set(3), version)
    with backend.env("rs-ready", clusters=[manifest]) as env:
        env.apply(manifest)
        obj = env.wait_phase("rs3", "Ready", timeout=60)
        status, uid = obj["status"], obj["metadata"]["uid"]

        (rs,) = status["replicaSets"]
        assert rs["name"] == "rs3-rs0" and rs["role"] == "replica" and rs["initialized"]
        # What the primary's serverStatus says runs there: the spec's version and cache.
        assert rs["server"] == {
            "version": version,
            "process": "mongod",
            "storageEngine": "wiredTiger",
            "cacheConfiguredBytes": int(CACHE_GB * 2**30),
        }
        assert sorted(m["state"] for m in rs["memberStates"]) == [
            "PRIMARY",
            "SECONDARY",
            "SECONDARY",
        ]
        assert status["members"] == status["readyMembers"] == 3
        t = status["timings"]
        assert 0 <= t["provisionedSeconds"] <= t["configuredSeconds"] <= t["readySeconds"]
        assert status["platform"]["provider"] == "kind"
        assert conditions(obj) == {
            "Provisioned": "True",
            "Configured": "True",
            "Ready": "True",
            "Updated": "True",
            "StorageResized": "True",
        }

        # Owned objects, one claim per member.
        apps, core = k8s.AppsV1Api(env.api), k8s.CoreV1Api(env.api)
        ns = env.namespace
        sts = apps.read_namespaced_stateful_set("rs3-rs0", ns)
        assert owned_by(sts, uid) and sts.spec.replicas == 3
        assert owned_by(core.read_namespaced_service("rs3-rs0-hl", ns), uid)
        pdb = k8s.PolicyV1Api(env.api).read_namespaced_pod_disruption_budget("rs3-rs0-pdb", ns)
        assert owned_by(pdb, uid)
        pvcs = core.list_namespaced_persistent_volume_claim(ns).items
        assert sorted(p.metadata.name for p in pvcs) == [f"data-rs3-rs0-{i}" for i in range(3)]

        # The connection Secret: the seed list and the benchmark user; no secret leaked.
        hosts = hosts_of(env, "rs3", "rs3-rs0")
        conn = core.read_namespaced_secret(status["connectionSecret"], ns)
        uri = base64.b64decode(conn.data["uri"]).decode()
        assert uri.startswith("mongodb://benchmark:") and "replicaSet=rs3-rs0" in uri
        assert all(h in uri for h in hosts)
        admin = core.read_namespaced_secret("rs3-admin", ns)
        password = base64.b64decode(admin.data["password"]).decode()
        events = " ".join(e.message or "" for e in env.events())
        assert password not in str(status) and password not in events
        assert password not in env.operator_log()

        # MongoDB itself: the members by their DNS names, the users with their roles (the
        # operator's own clusterAdmin user, made first as __system with the keyfile).
        assert [m["host"] for m in env.mongo.config("rs3", "rs3-rs0")["members"]] == hosts
        assert sorted(env.mongo.states("rs3", "rs3-rs0").values()) == [
            "PRIMARY",
            "SECONDARY",
            "SECONDARY",
        ]
        users = env.mongo.users("rs3", "rs3-rs0", USERS)
        assert sorted(users) == USERS
        assert users["mongobench-operator"] == OPERATOR_ROLES
        assert users["mongobench-admin"] == ["root"]
        assert_mongodb_happy(env)

        # A step-down as the rolling restart sends it elects another member; the old primary
        # comes back as a secondary.
        old = env.mongo.step_down("rs3", "rs3-rs0")
        elected = env.mongo.elected_after("rs3", "rs3-rs0", old, timeout=ELECTION_BOUND_S)
        assert elected, f"no new primary within {ELECTION_BOUND_S}s of stepping {old} down"
        record_property("election_seconds", round(elected[1], 2))
        env.wait(
            lambda: env.mongo.states("rs3", "rs3-rs0").get(old) == "SECONDARY",
            30,
            f"{old} SECONDARY",
        )


def test_standalone_is_ready_with_users_and_no_replica_set(backend: Backend, version: str) -> None:
    """One mongod without --replSet (issue 35): wired by hello and users alone. On kind, real
    mongod of each series takes the keyfile bootstrap as __system with no replica set."""
    manifest = mongocluster("sa", standalone(), version)
    with backend.env("standalone", clusters=[manifest]) as env:
        env.apply(manifest)
        obj = env.wait_phase("sa", "Ready", timeout=60)
        status = obj["status"]
        (rs,) = status["replicaSets"]
        (host,) = hosts_of(env, "sa", "sa-mongod")
        assert (rs["name"], rs["role"], rs["initialized"]) == ("sa-mongod", "standalone", True)
        assert rs["memberStates"] == [{"host": host, "state": "STANDALONE", "health": 1}]
        assert rs["server"]["version"] == version and rs["server"]["process"] == "mongod"
        assert status["members"] == status["readyMembers"] == 1

        apps, core = k8s.AppsV1Api(env.api), k8s.CoreV1Api(env.api)
        sts = apps.read_namespaced_stateful_set("sa-mongod", env.namespace)
        assert (
            sts.spec.replicas == 1 and "--replSet" not in sts.spec.template.spec.containers[0].args
        )
        pdbs = k8s.PolicyV1Api(env.api).list_namespaced_pod_disruption_budget(env.namespace)
        assert pdbs.items == []
        conn = core.read_namespaced_secret(status["connectionSecret"], env.namespace)
        uri = base64.b64decode(conn.data["uri"]).decode()
        assert host in uri and "replicaSet" not in uri

        # MongoDB itself: a standalone (no setName), with the operator's users and roles.
        hello = env.mongo.command(host, {"hello": 1}, env.mongo.layout("sa"))
        assert "setName" not in hello and hello["isWritablePrimary"] is True
        users = env.mongo.users("sa", "sa-mongod", USERS)
        assert sorted(users) == USERS and users["mongobench-operator"] == OPERATOR_ROLES
        assert_mongodb_happy(env)


def test_sharded_cluster_is_ready_with_real_wiring_and_scales_its_routers(
    backend: Backend, version: str
) -> None:
    manifest = mongocluster(
        "sh", sharded(2, members_per_shard=3, config_servers=3, mongos=2), version
    )
    with backend.env("sharded-ready", clusters=[manifest]) as env:
        env.apply(manifest)
        obj = env.wait_phase("sh", "Ready", timeout=90)
        status = obj["status"]
        assert [rs["name"] for rs in status["replicaSets"]] == ["sh-cfg", "sh-shard0", "sh-shard1"]
        assert [rs.get("addedAsShard") for rs in status["replicaSets"]] == [None, True, True]
        assert status["mongos"] == {
            "desired": 2,
            "ready": 2,
            "server": {"version": version, "process": "mongos"},
        }
        # MongoDB itself: the config servers' set, both shards through mongos, cluster users.
        cfg = env.mongo.config("sh", "sh-cfg")
        assert cfg.get("configsvr") is True and len(cfg["members"]) == 3
        assert env.mongo.shards("sh") == ["sh-shard0", "sh-shard1"]
        users = env.mongo.users("sh", "sh-cfg", USERS)
        assert users["mongobench-operator"] == OPERATOR_ROLES
        for shard in ("sh-shard0", "sh-shard1"):
            assert sorted(env.mongo.states("sh", shard).values()) == [
                "PRIMARY",
                "SECONDARY",
                "SECONDARY",
            ]

        # Routers scale with the spec; status follows the Deployment.
        apps = k8s.AppsV1Api(env.api)
        for routers in (3, 1):
            topology = sharded(2, members_per_shard=3, config_servers=3, mongos=routers)
            env.apply(mongocluster("sh", topology, version))

            def scaled(n: int = routers) -> bool:
                s = env.get("mongoclusters", "sh")["status"]
                return (
                    s["phase"] == "Ready"
                    and s["mongos"].items()
                    >= {
                        "desired": n,
                        "ready": n,
                    }.items()
                )

            env.wait(scaled, 60, f"{routers} mongos ready")
            assert (
                apps.read_namespaced_deployment("sh-mongos", env.namespace).spec.replicas == routers
            )
        assert_mongodb_happy(env)


def previous_series(version: str) -> str:
    """The FCV a release's binaries also run: the release series before it (4.4 before 5.0)."""
    major = int(version.split(".", 1)[0])
    return "4.4" if major == 5 else f"{major - 1}.0"


def test_fcv_is_lowered_then_raised_in_the_form_each_release_takes(
    backend: Backend, release: str
) -> None:
    # Per release series on both backends: setFeatureCompatibilityVersion takes `confirm: true`
    # from 7.0 and refuses it as an unknown field before, in either direction. Lowering the FCV
    # is the first step of MongoDB's downgrade; the binaries themselves are never rolled back.
    series, lowered = ".".join(release.split(".")[:2]), previous_series(release)
    low = mongocluster("fcv", replica_set(1), release, featureCompatibilityVersion=lowered)
    high = mongocluster("fcv", replica_set(1), release, featureCompatibilityVersion=series)
    with backend.env(f"fcv-{series.replace('.', '-')}", clusters=[low]) as env:
        env.apply(low)
        env.wait_phase("fcv", "Ready", timeout=60)

        def status_fcv(wanted: str) -> bool:
            return (
                env.get("mongoclusters", "fcv")["status"].get("featureCompatibilityVersion")
                == wanted
            )

        env.wait(lambda: status_fcv(lowered), 30, f"featureCompatibilityVersion {lowered}")
        assert env.mongo.fcv("fcv", "fcv-rs0") == lowered
        env.apply(high)
        env.wait(lambda: status_fcv(series), 30, f"featureCompatibilityVersion {series}")
        assert env.mongo.fcv("fcv", "fcv-rs0") == series
        told = [
            e.message for e in env.events("fcv") if e.reason == "FeatureCompatibilityVersionSet"
        ]
        assert sorted(told) == sorted(
            f"featureCompatibilityVersion set to {v}" for v in (lowered, series)
        )
        assert_mongodb_happy(env)


def test_members_scale_up_then_down_leaving_the_set_before_their_pods_go(
    backend: Backend, version: str
) -> None:
    three = mongocluster("sc", replica_set(3), version)
    five = mongocluster("sc", replica_set(5), version)
    with backend.env("scale", clusters=[five]) as env:
        env.apply(three)
        env.wait_phase("sc", "Ready")
        env.apply(five)
        obj = env.wait_phase("sc", "Ready", timeout=90)
        assert obj["status"]["readyMembers"] == 5
        assert len(env.mongo.config("sc", "sc-rs0")["members"]) == 5
        assert sorted(env.mongo.states("sc", "sc-rs0").values()) == ["PRIMARY"] + ["SECONDARY"] * 4

        env.apply(three)
        # Invariant while scaling down: the StatefulSet never has fewer pods than the replica
        # set has members (a member's pod goes only after a reconfig removed it).
        apps = k8s.AppsV1Api(env.api)
        samples: list[tuple[int, int]] = []

        def sample() -> bool:
            pods = apps.read_namespaced_stateful_set("sc-rs0", env.namespace).spec.replicas
            try:
                in_config = len(env.mongo.config("sc", "sc-rs0")["members"])
            except LookupError:
                return False  # no primary at this instant (a reconfig may elect)
            samples.append((pods, in_config))
            phase = (env.get("mongoclusters", "sc").get("status") or {}).get("phase")
            return pods == 3 and in_config == 3 and phase == "Ready"

        env.wait(sample, 60, "scale-down to 3", interval=0.05)
        assert all(pods >= in_config for pods, in_config in samples), samples
        hosts = hosts_of(env, "sc", "sc-rs0")
        assert [m["host"] for m in env.mongo.config("sc", "sc-rs0")["members"]] == hosts
        assert_mongodb_happy(env)


def test_a_shard_added_then_removed_holding_data_drains_before_its_statefulset_goes(
    backend: Backend, version: str
) -> None:
    two, three = mongocluster("rm", sharded(2), version), mongocluster("rm", sharded(3), version)
    apps_api = k8s.AppsV1Api
    with backend.env("shards", clusters=[three]) as env:
        apps, core = apps_api(env.api), k8s.CoreV1Api(env.api)
        env.apply(two)
        env.wait_phase("rm", "Ready", timeout=90)
        env.apply(three)
        obj = env.wait_phase("rm", "Ready", timeout=90)
        added = {rs["name"]: rs.get("addedAsShard") for rs in obj["status"]["replicaSets"]}
        assert added == {"rm-cfg": None, "rm-shard0": True, "rm-shard1": True, "rm-shard2": True}
        assert env.mongo.shards("rm") == ["rm-shard0", "rm-shard1", "rm-shard2"]

        # Data on the new shard: a hashed collection whose database the shard is primary of.
        env.mongo.shard_collection("rm", "e2e.items", primary_shard="rm-shard2")
        env.mongo.insert("rm", "e2e.items", 1000)
        assert env.mongo.chunks("rm", "e2e.items").get("rm-shard2", 0) > 0

        env.apply(two)
        samples: list[tuple[bool, bool, list[dict[str, Any]] | None]] = []

        def sample() -> bool:
            names = {
                s.metadata.name for s in apps.list_namespaced_stateful_set(env.namespace).items
            }
            listed = "rm-shard2" in env.mongo.shards("rm")  # read after the StatefulSets
            obj = env.get("mongoclusters", "rm")
            status = obj.get("status") or {}
            samples.append(("rm-shard2" in names, listed, status.get("draining")))
            return (
                not listed
                and "rm-shard2" not in names
                and status.get("phase") == "Ready"
                and status.get("observedGeneration") == obj["metadata"]["generation"]
            )

        env.wait(sample, 90, "shard rm-shard2 drained and removed", interval=0.1)
        status = env.get("mongoclusters", "rm")["status"]
        env.wait(
            lambda: {"ShardDraining", "ShardRemoved"} <= {e.reason for e in env.events("rm")},
            20,
            "ShardDraining and ShardRemoved events",
        )
        # While it drained, status said so and with what was left; its members stayed up.
        drained = [d for sts, _, d in samples if d and d[0]["state"] == "Draining"]
        assert drained and all(d[0]["shard"] == "rm-shard2" for d in drained)
        assert any("remainingChunks" in d[0] for d in drained), drained
        assert any(sts for sts, _, d in samples if d and d[0]["state"] == "Draining"), samples
        # Never deleted while MongoDB still listed the shard (its data lived there) ...
        assert all(sts or not listed for sts, listed, _ in samples), samples
        # ... and no document was lost: the chunks moved to the shards that stay.
        assert env.mongo.shards("rm") == ["rm-shard0", "rm-shard1"]
        assert env.mongo.count("rm", "e2e.items") == 1000
        assert set(env.mongo.chunks("rm", "e2e.items")) <= {"rm-shard0", "rm-shard1"}
        assert "draining" not in status
        assert [rs["name"] for rs in status["replicaSets"]] == ["rm-cfg", "rm-shard0", "rm-shard1"]
        assert conditions({"status": status})["Updated"] == "True"
        # Service and PodDisruptionBudget went with it; the claim stays (deletionPolicy Retain).
        ns = env.namespace
        assert "rm-shard2-hl" not in {
            s.metadata.name for s in core.list_namespaced_service(ns).items
        }
        pdbs = k8s.PolicyV1Api(env.api).list_namespaced_pod_disruption_budget(ns).items
        assert "rm-shard2-pdb" not in {p.metadata.name for p in pdbs}
        claims = {p.metadata.name for p in core.list_namespaced_persistent_volume_claim(ns).items}
        assert "data-rm-shard2-0" in claims
        assert_mongodb_happy(env)


def test_rolling_upgrade_by_one_major_restarts_the_primary_last_then_sets_fcv(
    backend: Backend, upgrade: tuple[str, str]
) -> None:
    # kind: every step of the range (5.0 -> 6.0, 6.0 -> 7.0 where `confirm` starts, 7.0 -> 8.0);
    # local: 7.0 -> 8.0 (the model answers as one release throughout, see conftest.py).
    old_version, new_version = upgrade
    new_fcv = ".".join(new_version.split(".")[:2])
    old = mongocluster("up", replica_set(3), old_version)
    # Asked for in the same apply: set once every member runs the new version, never before.
    new = mongocluster("up", replica_set(3), new_version, featureCompatibilityVersion=new_fcv)
    with backend.env("upgrade", clusters=[old]) as env:
        core = k8s.CoreV1Api(env.api)
        env.apply(old)
        obj = env.wait_phase("up", "Ready")
        assert "featureCompatibilityVersion" not in obj["status"]
        old_fcv = env.mongo.fcv("up", "up-rs0")
        assert old_fcv == ".".join(old_version.split(".")[:2])
        primary_before = env.mongo.primary("up", "up-rs0")
        assert primary_before
        uids = {
            p.metadata.name: p.metadata.uid for p in core.list_namespaced_pod(env.namespace).items
        }

        env.apply(new)
        new_image = f"mongo:{new_version}"
        restart_order: list[str] = []
        # (FCV, then the mongod images): read in this order, a new FCV in a sample means every
        # pod read after it must already run the new image.
        samples: list[tuple[str | None, set[str]]] = []

        def upgraded() -> bool:
            fcv = env.mongo.fcv("up", "up-rs0")
            pods = core.list_namespaced_pod(
                env.namespace, label_selector="mongobench.io/cluster=up"
            ).items
            for p in pods:  # a new uid under the same name: that member was restarted
                if (
                    p.metadata.uid != uids.get(p.metadata.name)
                    and p.metadata.name not in restart_order
                ):
                    restart_order.append(p.metadata.name)
            images = {c.image for p in pods for c in p.spec.containers if c.name == "mongod"}
            samples.append((fcv, images))
            updated = conditions(env.get("mongoclusters", "up")).get("Updated")
            return len(pods) == 3 and images == {new_image} and updated == "True"

        env.wait(upgraded, 90, f"every member on {new_image}", interval=0.05)
        env.wait(
            lambda: (
                env.get("mongoclusters", "up")["status"].get("featureCompatibilityVersion")
                == new_fcv
            ),
            30,
            f"featureCompatibilityVersion {new_fcv} in status",
        )
        assert env.mongo.fcv("up", "up-rs0") == new_fcv
        assert sorted(restart_order) == ["up-rs0-0", "up-rs0-1", "up-rs0-2"]  # every member
        assert restart_order[-1] == primary_before.split(".", 1)[0], restart_order  # primary last
        assert env.mongo.primary("up", "up-rs0") != primary_before  # stepped down first
        # The old FCV while binaries rolled (also once some members ran the new one) ...
        assert all(images == {new_image} for fcv, images in samples if fcv == new_fcv), samples
        assert any(fcv == old_fcv and new_image in images for fcv, images in samples), samples
        # ... and the new one set once, after the last restart.
        (fcv_set,) = [e for e in env.events("up") if e.reason == "FeatureCompatibilityVersionSet"]
        assert (fcv_set.count or 1) == 1
        restarted = [
            p
            for p in core.list_namespaced_pod(env.namespace).items
            if p.metadata.name in restart_order
        ]
        assert all(event_time(fcv_set) >= p.metadata.creation_timestamp for p in restarted)
        assert_mongodb_happy(env)


def test_a_sharded_cluster_raises_an_fcv_left_behind_then_upgrades_by_one_major(
    backend: Backend, upgrade: tuple[str, str]
) -> None:
    """Issue 39: a sharded cluster's FCV is read on its config servers' and shards' primaries,
    not through mongos (a 5.0 router refuses the parameter; 6.0-8.2 routers answer with their
    own series, which hid an FCV left behind), and set through mongos. An FCV an earlier upgrade
    left behind is raised to the running series before any member restarts, then every member
    and router rolls to the next major and the FCV stays (unset in the spec: MongoDB's policy).
    kind: each one-major step on real mongod and mongos; local: 7.0 -> 8.0 (conftest.py)."""
    old_version, new_version = upgrade
    running = ".".join(old_version.split(".")[:2])
    behind = previous_series(old_version)
    lowered = mongocluster("shup", sharded(1), old_version, featureCompatibilityVersion=behind)
    old, new = (
        mongocluster("shup", sharded(1), old_version),
        mongocluster("shup", sharded(1), new_version),
    )
    sets = ("shup-cfg", "shup-shard0")
    with backend.env("sharded-upgrade", clusters=[old]) as env:
        core = k8s.CoreV1Api(env.api)
        env.apply(lowered)
        env.wait_phase("shup", "Ready", timeout=90)
        env.wait(
            lambda: all(env.mongo.fcv("shup", rs) == behind for rs in sets),
            30,
            f"featureCompatibilityVersion {behind} on every set",
        )
        env.apply(old)  # unset again: MongoDB keeps it, as after an earlier upgrade
        env.apply(new)
        new_image = f"mongo:{new_version}"

        def upgraded() -> bool:
            pods = core.list_namespaced_pod(
                env.namespace, label_selector="mongobench.io/cluster=shup"
            ).items
            images = {c.image for p in pods for c in p.spec.containers if c.name in MONGO_NAMES}
            updated = conditions(env.get("mongoclusters", "shup")).get("Updated")
            return images == {new_image} and updated == "True"

        env.wait(upgraded, 240, f"every mongod and mongos on {new_image}", interval=0.2)
        assert [env.mongo.fcv("shup", rs) for rs in sets] == [running, running]
        assert env.get("mongoclusters", "shup")["status"]["featureCompatibilityVersion"] == running
        told = [
            e.message for e in env.events("shup") if e.reason == "FeatureCompatibilityVersionSet"
        ]
        assert f"featureCompatibilityVersion set to {running}" in told, told
        assert_mongodb_happy(env)


@pytest.mark.parametrize("policy", ["Retain", "Delete"])
def test_deleting_a_cluster_honours_its_deletion_policy(backend: Backend, policy: str) -> None:
    manifest = mongocluster("del", replica_set(1), deletionPolicy=policy)
    with backend.env(f"delete-{policy}", clusters=[manifest]) as env:
        core, ns = k8s.CoreV1Api(env.api), env.namespace
        env.apply(manifest)
        env.wait_phase("del", "Ready")
        assert len(core.list_namespaced_persistent_volume_claim(ns).items) == 1
        env.delete("mongoclusters", "del")
        env.wait(lambda: not env.names("mongoclusters"), 30, "MongoCluster gone")
        env.wait(
            lambda: not k8s.AppsV1Api(env.api).list_namespaced_stateful_set(ns).items,
            30,
            "StatefulSet collected",
        )

        def secrets() -> set[str]:
            return {s.metadata.name for s in core.list_namespaced_secret(ns).items}

        if policy == "Retain":
            pvcs = core.list_namespaced_persistent_volume_claim(ns).items
            assert [p.metadata.name for p in pvcs] == ["data-del-rs0-0"]
            assert {"del-keyfile", "del-admin", "del-benchmark"} <= secrets()
        else:
            env.wait(
                lambda: not core.list_namespaced_persistent_volume_claim(ns).items,
                30,
                "claims deleted",
            )
            env.wait(lambda: not {"del-keyfile", "del-admin"} & secrets(), 30, "secrets gone")
        assert_mongodb_happy(env)
