"""Unit tier: properties of the built objects a user would notice (security, placement,
storage, secrets, names), checked on the builders' output without a cluster."""

from __future__ import annotations

import base64
from typing import Any

import kubernetes_validate
import pytest
import yaml
from cluster_fixtures import FAKE, REPLICA_SET, SHARDED, build, by_kind, pod_specs

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.api.schema import SpecError
from mongobench.mongocluster.build.layout import cluster_layout, connection_uri
from mongobench.mongocluster.build.objects import build_workload_objects
from mongobench.mongocluster.build.platform import GENERIC, PRESETS, PlatformFacts, preset_for

pytestmark = pytest.mark.unit

BOTH = pytest.mark.parametrize("spec", [REPLICA_SET, SHARDED], ids=["replicaset", "sharded"])

# --- the restricted Pod Security profile, rule by rule ------------------------------------
# https://kubernetes.io/docs/concepts/security/pod-security-standards/ (restricted, v1.30+)
RESTRICTED_VOLUME_TYPES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
    "persistentVolumeClaim", "projected", "secret",
}  # fmt: skip
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}  # fmt: skip


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    out: list[str] = []
    psc = pod.get("securityContext", {})
    containers = [
        *pod.get("initContainers", []),
        *pod.get("containers", []),
        *pod.get("ephemeralContainers", []),
    ]
    # baseline
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            out.append(f"{key} is set")
    if psc.get("windowsOptions", {}).get("hostProcess"):
        out.append("pod hostProcess")
    for sysctl in psc.get("sysctls", []):
        if sysctl["name"] not in SAFE_SYSCTLS:
            out.append(f"unsafe sysctl {sysctl['name']}")
    for vol in pod.get("volumes", []):
        kinds = set(vol) - {"name"}
        if not kinds <= RESTRICTED_VOLUME_TYPES:
            out.append(f"volume {vol['name']} of type {kinds}")
    if psc.get("seLinuxOptions", {}).get("user") or psc.get("seLinuxOptions", {}).get("role"):
        out.append("pod seLinuxOptions user/role")
    if psc.get("appArmorProfile", {}).get("type") == "Unconfined":
        out.append("pod appArmor Unconfined")
    pod_non_root = psc.get("runAsNonRoot") is True
    pod_seccomp = psc.get("seccompProfile", {}).get("type")
    if psc.get("runAsUser") == 0:
        out.append("pod runAsUser 0")
    if pod_seccomp not in (None, "RuntimeDefault", "Localhost"):
        out.append(f"pod seccomp {pod_seccomp}")
    for c in containers:
        name = c["name"]
        sc = c.get("securityContext", {})
        if sc.get("privileged"):
            out.append(f"{name}: privileged")
        if sc.get("windowsOptions", {}).get("hostProcess"):
            out.append(f"{name}: hostProcess")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            out.append(f"{name}: hostPort")
        if sc.get("procMount", "Default") != "Default":
            out.append(f"{name}: procMount")
        if sc.get("appArmorProfile", {}).get("type") == "Unconfined":
            out.append(f"{name}: appArmor Unconfined")
        # restricted
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{name}: allowPrivilegeEscalation not false")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            out.append(f"{name}: capabilities not dropping ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            out.append(f"{name}: adds capabilities")
        if sc.get("runAsNonRoot", pod_non_root) is not True:
            out.append(f"{name}: runAsNonRoot not true")
        if sc.get("runAsUser") == 0:
            out.append(f"{name}: runAsUser 0")
        seccomp = sc.get("seccompProfile", {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{name}: seccomp {seccomp}")
    return out


def test_checker_catches_a_violating_pod() -> None:
    bad = {
        "hostNetwork": True,
        "containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}],
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
    }
    assert len(restricted_violations(bad)) == 7


@BOTH
@pytest.mark.parametrize("exporter", [True, False])
def test_every_pod_template_passes_restricted_profile(spec: dict[str, Any], exporter: bool) -> None:
    pods = pod_specs(build({**spec, "monitoring": {"exporter": exporter}}))
    assert pods
    for pod in pods:
        assert restricted_violations(pod) == []
        assert pod["securityContext"]["runAsUser"] == 999
        assert pod["securityContext"]["fsGroup"] == 999
        assert [c["name"] for c in pod["containers"]][1:] == (["exporter"] if exporter else [])


@BOTH
def test_keyfile_is_mounted_owner_read_only(spec: dict[str, Any]) -> None:
    for pod in pod_specs(build(spec)):
        (vol,) = [v for v in pod["volumes"] if v["name"] == "keyfile"]
        assert vol["secret"]["defaultMode"] == 0o400
        assert vol["secret"]["secretName"] == "demo-keyfile"
        assert "--keyFile" in pod["containers"][0]["args"]


# --- secrets --------------------------------------------------------------------------------
@BOTH
def test_no_secret_value_in_any_non_secret_object(spec: dict[str, Any]) -> None:
    objects = build(spec)
    text = yaml.safe_dump_all([o for o in objects if o["kind"] != "Secret"])
    for value in vars(FAKE).values():
        assert value not in text
        assert base64.b64encode(value.encode()).decode() not in text


@BOTH
def test_exporter_credentials_come_from_the_secret(spec: dict[str, Any]) -> None:
    for pod in pod_specs(build(spec)):
        (exporter,) = [c for c in pod["containers"] if c["name"] == "exporter"]
        for env in exporter["env"]:
            assert "value" not in env
            assert env["valueFrom"]["secretKeyRef"]["name"] == "demo-exporter"


def test_secrets_round_trip_their_values() -> None:
    secrets = {s["metadata"]["name"]: s["data"] for s in by_kind(build(REPLICA_SET), "Secret")}

    def value(name: str, key: str) -> str:
        return base64.b64decode(secrets[name][key]).decode()

    assert value("demo-keyfile", "keyfile") == FAKE.keyfile
    assert value("demo-admin", "password") == FAKE.admin_password
    assert value("demo-benchmark", "username") == "benchmark"
    assert value("demo-exporter", "password") == FAKE.exporter_password
    assert value("demo-connection", "uri").startswith(
        "mongodb://benchmark:bench-pw-Xy3%2F%2B%40%3A@"
    )


def test_referenced_secrets_are_not_generated_but_mounted() -> None:
    spec = {**REPLICA_SET, "auth": {"keyfileSecretName": "my-key", "adminSecretName": "my-admin"}}
    objects = build(spec)
    names = {s["metadata"]["name"] for s in by_kind(objects, "Secret")}
    assert names == {"demo-operator", "demo-benchmark", "demo-exporter", "demo-connection"}
    (pod,) = pod_specs(objects)
    assert pod["volumes"][0]["secret"]["secretName"] == "my-key"


# --- storage, placement ---------------------------------------------------------------------
def _claim(objects: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = by_kind(objects, "StatefulSet")[0]["spec"]["volumeClaimTemplates"][0][
        "spec"
    ]
    return spec


@pytest.mark.parametrize(
    ("storage_class", "preset", "expected"),
    [
        ("fast-ssd", "eks", "fast-ssd"),  # the spec wins
        (None, "eks", "gp3"),
        (None, "magnum", "cinder"),
        (None, "kind", "standard"),
        (None, "unknown", None),  # omitted: the cluster default StorageClass
    ],
)
def test_storage_class_precedence(
    storage_class: str | None, preset: str, expected: str | None
) -> None:
    storage = {"size": "30Gi", **({"storageClassName": storage_class} if storage_class else {})}
    claim = _claim(build({**REPLICA_SET, "storage": storage}, PRESETS.get(preset, GENERIC)))
    assert claim.get("storageClassName") == expected
    assert claim["resources"]["requests"]["storage"] == "30Gi"


def test_anti_affinity_modes() -> None:
    def affinity(mode: str) -> dict[str, Any] | None:
        (pod,) = pod_specs(build({**REPLICA_SET, "placement": {"antiAffinity": mode}}))
        return pod.get("affinity")

    required = affinity("Required")
    assert required is not None
    (term,) = required["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"]["mongobench.io/replset"] == "demo-rs0"
    preferred = affinity("Preferred")
    assert preferred is not None
    (weighted,) = preferred["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert weighted["weight"] == 100
    assert weighted["podAffinityTerm"] == term
    assert affinity("None") is None


@pytest.mark.parametrize(
    ("explicit", "preset", "spread"),
    [(None, "eks", True), (None, "kind", False), (False, "eks", False), (True, "kind", True)],
)
def test_zone_spread_follows_spec_then_preset(
    explicit: bool | None, preset: str, spread: bool
) -> None:
    placement = {} if explicit is None else {"spreadAcrossZones": explicit}
    for pod in pod_specs(build({**SHARDED, "placement": placement}, PRESETS[preset])):
        constraints = pod.get("topologySpreadConstraints", [])
        assert bool(constraints) == spread
        for c in constraints:
            assert c["topologyKey"] == "topology.kubernetes.io/zone"
            assert c["whenUnsatisfiable"] == "ScheduleAnyway"


def test_preset_for_auto_uses_detected_provider() -> None:
    assert preset_for("auto", PlatformFacts("eks")) is PRESETS["eks"]
    assert preset_for("auto", None) is GENERIC
    assert preset_for("kind", PlatformFacts("eks")) is PRESETS["kind"]


# --- arguments, image, names ------------------------------------------------------------------
def test_mongod_and_mongos_arguments() -> None:
    objects = build(SHARDED)
    args = {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]["containers"][0]["args"]
        for o in objects
        if "template" in o.get("spec", {})
    }
    cfg, shard, mongos = args["demo-cfg"], args["demo-shard1"], args["demo-mongos"]
    assert "--configsvr" in cfg and "--wiredTigerCacheSizeGB" not in cfg
    assert shard[shard.index("--replSet") + 1] == "demo-shard1"
    assert "--shardsvr" in shard and shard[shard.index("--wiredTigerCacheSizeGB") + 1] == "2"
    assert mongos[mongos.index("--configdb") + 1] == (
        "demo-cfg/demo-cfg-0.demo-cfg-hl.bench.svc.cluster.local:27017,"
        "demo-cfg-1.demo-cfg-hl.bench.svc.cluster.local:27017,"
        "demo-cfg-2.demo-cfg-hl.bench.svc.cluster.local:27017"
    )
    for a in args.values():
        assert a[:5] == [
            "--port",
            "27017",
            "--bind_ip_all",
            "--keyFile",
            "/etc/mongodb-keyfile/keyfile",
        ]


def test_image_from_version_unless_overridden() -> None:
    (pod,) = pod_specs(build(REPLICA_SET))
    assert pod["containers"][0]["image"] == "mongo:7.0.14"
    (pod,) = pod_specs(build({**REPLICA_SET, "image": "registry.local/mongo:7.0.14-custom"}))
    assert pod["containers"][0]["image"] == "registry.local/mongo:7.0.14-custom"


def test_sharded_object_inventory() -> None:
    objects = build(SHARDED, with_secrets=False)
    names = [(o["kind"], o["metadata"]["name"]) for o in objects]
    for rs in ("demo-cfg", "demo-shard0", "demo-shard1"):
        assert ("Service", f"{rs}-hl") in names and ("StatefulSet", rs) in names
        assert ("PodDisruptionBudget", f"{rs}-pdb") in names
    assert ("Deployment", "demo-mongos") in names and ("Service", "demo-mongos") in names
    assert ("PodMonitor", "demo") in names
    for svc in by_kind(objects, "Service"):
        if svc["metadata"]["name"].endswith("-hl"):
            assert svc["spec"]["clusterIP"] == "None"
            assert svc["spec"]["publishNotReadyAddresses"] is True


def test_no_pod_monitor_without_exporter() -> None:
    objects = build({**REPLICA_SET, "monitoring": {"exporter": False}})
    assert not by_kind(objects, "PodMonitor")
    assert "demo-exporter" not in {s["metadata"]["name"] for s in by_kind(objects, "Secret")}


@pytest.mark.parametrize("name", ["x" * 49, "1cluster"])
def test_unusable_cluster_names_are_refused(name: str) -> None:
    with pytest.raises(SpecError, match=r"metadata\.name"):
        cluster_layout(name, "bench", MongoClusterSpec.parse(REPLICA_SET))


# --- connection URIs ------------------------------------------------------------------------
def test_replica_set_uri_lists_members_and_names_the_set() -> None:
    layout = cluster_layout("demo", "bench", MongoClusterSpec.parse(REPLICA_SET))
    assert connection_uri(layout, "u", "p@ss/:", "ycsb") == (
        "mongodb://u:p%40ss%2F%3A@demo-rs0-0.demo-rs0-hl.bench.svc.cluster.local:27017,"
        "demo-rs0-1.demo-rs0-hl.bench.svc.cluster.local:27017,"
        "demo-rs0-2.demo-rs0-hl.bench.svc.cluster.local:27017/ycsb"
        "?authSource=admin&replicaSet=demo-rs0"
    )


def test_sharded_uri_goes_through_the_mongos_service() -> None:
    layout = cluster_layout("demo", "bench", MongoClusterSpec.parse(SHARDED))
    assert connection_uri(layout, "u", "p", "ycsb", tls=True) == (
        "mongodb://u:p@demo-mongos.bench.svc.cluster.local:27017/ycsb?authSource=admin&tls=true"
    )


# --- offline schema validation --------------------------------------------------------------
@BOTH
def test_objects_validate_against_kubernetes_schemas(spec: dict[str, Any]) -> None:
    for obj in build(spec):
        if obj["kind"] == "PodMonitor":  # a CRD, not in the Kubernetes schemas
            continue
        kubernetes_validate.validate(obj, "1.33", strict=True)


# --- PodMonitor labels: what a Prometheus selects monitors by ---------------------------------
STACK = {"release": "kube-prometheus-stack"}


def test_pod_monitor_carries_the_operators_monitor_labels_when_the_spec_names_none() -> None:
    layout = cluster_layout("demo", "bench", MongoClusterSpec.parse(REPLICA_SET))
    objects = build_workload_objects(
        MongoClusterSpec.parse(REPLICA_SET), layout, PRESETS["kind"], STACK
    )
    (monitor,) = by_kind(objects, "PodMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    # The pod selector stays the cluster's own labels: the release label is for Prometheus only.
    assert "release" not in monitor["spec"]["selector"]["matchLabels"]


def test_spec_pod_monitor_labels_replace_the_operators_defaults() -> None:
    spec = MongoClusterSpec.parse(
        {**REPLICA_SET, "monitoring": {"podMonitorLabels": {"prometheus": "team-a"}}}
    )
    layout = cluster_layout("demo", "bench", spec)
    (monitor,) = by_kind(build_workload_objects(spec, layout, PRESETS["kind"], STACK), "PodMonitor")
    assert monitor["metadata"]["labels"]["prometheus"] == "team-a"
    assert "release" not in monitor["metadata"]["labels"]
