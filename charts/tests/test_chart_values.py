"""Unit tier: the chart rendered by the real helm (built with an official build's version flags)
and checked by kubeconform -strict against the Kubernetes and Prometheus Operator schemas; its
values.schema.json refusing wrong values with a message naming the key."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from localplane.schemas import REPO_CRDS, load_crds, validate
from localplane.tools import REPO, binary, prometheus_operator_crds

pytestmark = pytest.mark.unit

CHART = REPO / "charts" / "mongobench"
MONITORING = ["monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PodMonitor"]


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(binary("helm")), *args], capture_output=True, text=True, check=False, timeout=60
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def template(*sets: str, apis: list[str] | None = None) -> str:
    args = ["template", "mb", str(CHART), "--namespace", "mongobench"]
    args += [f"--set={s}" for s in sets]
    args += [f"--api-versions={a}" for a in apis or []]
    return helm(*args).stdout


def docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


@pytest.fixture(scope="module")
def crds() -> list[dict[str, Any]]:
    promop = prometheus_operator_crds()
    return load_crds(REPO_CRDS) + load_crds(
        promop / "monitoring.coreos.com_servicemonitors.yaml",
        promop / "monitoring.coreos.com_podmonitors.yaml",
        promop / "monitoring.coreos.com_prometheusrules.yaml",
    )


def test_helm_templates_without_kube_version_and_lints_strict() -> None:
    # An official build's default Kubernetes version satisfies kubeVersion >=1.30 (a plain
    # `go install` build assumes 1.20 and fails here).
    assert "v3." in helm("version", "--short").stdout
    template()
    lint = helm("lint", "--strict", str(CHART))
    assert "0 chart(s) failed" in lint.stdout


VARIANTS = {
    "defaults": ([], None),
    "monitors": (["metrics.serviceMonitor.labels.release=kps"], MONITORING),
    "namespaced": (["watchNamespaces={a,b}", "replicaCount=2"], MONITORING),
    "everything": (
        [
            "imagePullSecrets[0].name=regcred",
            "podAnnotations.a=b",
            "podLabels.team=perf",
            "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/x",
            "extraEnv[0].name=MONGOBENCH_PROMETHEUS_NODE_ALIASES",
            "extraEnv[0].value=a=b",
            "tolerations[0].key=k",
            "tolerations[0].operator=Exists",
            "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchExpressions[0].key=role",
            "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
            "priorityClassName=high",
            "image.digest=sha256:" + "a" * 64,
            "metrics.serviceMonitor.scrapeTimeout=10s",
            "fullnameOverride=perf",
        ],
        MONITORING,
    ),
    "adapted": (
        [
            "replicaCount=2",
            "commonLabels.team=perf",
            "commonAnnotations.owner=platform",
            "monitorLabels.prometheus=team-a",
            "alerts.enabled=true",
            "alerts.thresholds.memberDownFor=1h30m",
            "podDisruptionBudget.enabled=true",
            "podDisruptionBudget.minAvailable=1",
            "strategy.type=RollingUpdate",
            "strategy.rollingUpdate.maxUnavailable=0",
            "topologySpreadConstraints[0].maxSkew=1",
            "topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
            "topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
            "extraVolumes[0].name=ca",
            "extraVolumes[0].configMap.name=corp-ca",
            "extraVolumeMounts[0].name=ca",
            "extraVolumeMounts[0].mountPath=/etc/ssl/corp",
            "extraVolumeMounts[0].readOnly=true",
            "extraEnv[0].name=SSL_CERT_DIR",
            "extraEnv[0].value=/etc/ssl/corp",
            "securityContext.seccompProfile.type=RuntimeDefault",
            "podSecurityContext.fsGroup=10001",
        ],
        [*MONITORING, "monitoring.coreos.com/v1/PrometheusRule"],
    ),
    "no-rbac-existing-sa": (["rbac.create=false", "serviceAccount.create=false",
                             "serviceAccount.name=mine", "dashboards.enabled=false",
                             "admissionWarnings.enabled=false"], None),
}  # fmt: skip


@pytest.mark.parametrize("kubernetes", ["1.30.0", "1.32.0"])
def test_rendered_chart_is_valid_for_kubeconform_strict(
    kubernetes: str, crds: list[dict[str, Any]]
) -> None:
    # Every variant in one kubeconform run (a problem names its variant's object).
    text = "\n---\n".join(
        f"# variant {name}\n" + template(*sets, apis=apis)
        for name, (sets, apis) in VARIANTS.items()
    )
    assert validate(text, crds, kubernetes=kubernetes) == []


def test_kubeconform_catches_a_wrong_field(crds: list[dict[str, Any]]) -> None:
    """The validation above can fail: an unknown field in a ServiceMonitor is reported."""
    text = template(apis=MONITORING).replace(
        "honorLabels: true", "honorLabels: true\n      bogus: 1"
    )
    assert any("bogus" in p for p in validate(text, crds))


def test_monitors_render_only_where_the_prometheus_operator_apis_are_served() -> None:
    kinds = {d["kind"] for d in docs(template())}
    assert not kinds & {"ServiceMonitor", "PodMonitor"}
    objs = {d["kind"]: d for d in docs(template(apis=MONITORING))}
    endpoint = objs["ServiceMonitor"]["spec"]["endpoints"][0]
    assert endpoint["honorLabels"] is True and endpoint["port"] == "metrics"
    pod_monitor = objs["PodMonitor"]["spec"]
    assert pod_monitor["selector"]["matchLabels"] == {"mongobench.io/component": "benchmark-client"}
    assert pod_monitor["namespaceSelector"] == {"any": True}
    off = docs(template("metrics.serviceMonitor.enabled=false", "metrics.podMonitor.enabled=false",
                        apis=MONITORING))  # fmt: skip
    assert not {d["kind"] for d in off} & {"ServiceMonitor", "PodMonitor"}


def test_two_releases_share_no_cluster_scoped_name() -> None:
    def cluster_scoped(release: str) -> set[tuple[str, str]]:
        text = helm("template", release, str(CHART), "-n", release).stdout
        return {
            (d["kind"], d["metadata"]["name"])
            for d in docs(text)
            if "namespace" not in d["metadata"]
        }

    one, two = cluster_scoped("perf-a"), cluster_scoped("perf-b")
    assert {k for k, _ in one} >= {"ClusterRole", "ClusterRoleBinding", "ClusterKopfPeering",
                                   "ValidatingAdmissionPolicy"}  # fmt: skip
    assert not one & two


def test_operator_env_follows_the_values() -> None:
    text = template(
        "prometheus.url=http://prom:9090",
        "prometheus.nodeMapping=label",
        "prometheus.nodeLabel=node",
        "extraEnv[0].name=MONGOBENCH_PROMETHEUS_NODE_ALIASES",
        "extraEnv[0].value=n1=h1",
        "benchImages.ycsb.tag=9.9.9",
    )
    deployment = next(d for d in docs(text) if d["kind"] == "Deployment")
    env = {
        e["name"]: e.get("value")
        for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["MONGOBENCH_PROMETHEUS_URL"] == "http://prom:9090"
    assert env["MONGOBENCH_PROMETHEUS_NODE_MAPPING"] == "label"
    assert env["MONGOBENCH_PROMETHEUS_NODE_LABEL"] == "node"
    assert env["MONGOBENCH_PROMETHEUS_NODE_ALIASES"] == "n1=h1"
    assert env["MONGOBENCH_YCSB_IMAGE"] == "ghcr.io/mongobench/ycsb:9.9.9"
    assert env["MONGOBENCH_PEERING"] == "mb-mongobench"


# Each: a --set the schema must refuse, and a fragment of helm's message naming the key.
REFUSED = [
    ("replicaCount=two", "replicaCount"),
    ("replicaCount=-1", "replicaCount"),
    ("unknownKey=1", "unknownKey"),
    ("image.tagg=1.0", "tagg"),
    ("image.pullPolicy=Sometimes", "pullPolicy"),
    ("image.digest=md5:abc", "digest"),
    ("logFormat=xml", "logFormat"),
    ("watchNamespaces=Not_A_Namespace", "watchNamespaces"),
    ("prometheus.url=prom:9090", "url"),
    ("prometheus.nodeMapping=hostname", "nodeMapping"),
    ("metrics.port=70000", "port"),
    ("metrics.serviceMonitor.enabled=yes", "enabled"),
    ("metrics.serviceMonitor.interval=30", "interval"),
    ("serviceAccount.create=1", "create"),
    ("imagePullSecrets[0].secret=regcred", "imagePullSecrets"),
    ("extraEnv[0].value=x", "name"),
    ("podAnnotations.a.b=c", "podAnnotations"),
    ("dashboards.label.key=", "key"),
    ("retryBackoff=0", "retryBackoff"),
    ("alerts.enabled=maybe", "enabled"),
    # Typos and wrong shapes where the schema used to be open.
    ("alerts.thresholds.memberDownFor=5", "memberDownFor"),
    ("alerts.thresholds.memberDownFor=5 minutes", "memberDownFor"),
    ("alerts.thresholds.memberDwnFor=2m", "memberDwnFor"),
    ("alerts.thresholds.diskFreePercent=120", "diskFreePercent"),
    ("securityContext.runAsUsr=1000", "runAsUsr"),
    ("securityContext.capabilities.dropp[0]=ALL", "dropp"),
    ("podSecurityContext.fsGrup=1000", "fsGrup"),
    ("podSecurityContext.seccompProfile.type=Default", "type"),
    ("affinity.nodeAfinity.x=1", "nodeAfinity"),
    (
        "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologykey=z",
        "topologykey",
    ),
    ("tolerations[0].efect=NoSchedule", "efect"),
    ("extraEnv[0].valueFrom.secretKeyRef.nme=x", "nme"),
    # New values, strict from the start.
    ("commonLabels.a.b=c", "commonLabels"),
    ("monitorLabels.release.x=1", "monitorLabels"),
    ("strategy.type=BlueGreen", "type"),
    ("strategy.rollingupdate.maxSurge=1", "rollingupdate"),
    ("podDisruptionBudget.minAvail=1", "minAvail"),
    ("topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints"),
    ("extraVolumes[0].name=ca", "extraVolumes"),
    ("extraVolumes[0].configmap.name=ca", "configmap"),
    ("extraVolumeMounts[0].name=ca", "mountPath"),
]


@pytest.mark.parametrize(("value", "named"), REFUSED, ids=[v for v, _ in REFUSED])
def test_schema_refuses_wrong_values(value: str, named: str) -> None:
    proc = helm("template", "mb", str(CHART), f"--set={value}", check=False)
    assert proc.returncode != 0, f"{value} was accepted"
    assert "values don't meet the specifications of the schema" in proc.stderr
    assert named in proc.stderr


def test_every_alert_threshold_the_rules_use_is_accepted_and_renders_as_a_valid_for() -> None:
    thresholds = yaml.safe_load((CHART / "values.yaml").read_text())["alerts"]["thresholds"]
    durations = [k for k in thresholds if k.endswith("For")]
    text = template(
        "alerts.enabled=true", *[f"alerts.thresholds.{k}=1h30m" for k in durations],
        apis=["monitoring.coreos.com/v1/PrometheusRule"],
    )  # fmt: skip
    (rule,) = [d for d in docs(text) if d["kind"] == "PrometheusRule"]
    fors = [r["for"] for g in rule["spec"]["groups"] for r in g["rules"] if "for" in r]
    assert fors and set(fors) == {"1h30m"}


def test_every_monitor_and_rule_carries_the_monitor_labels_over_their_own() -> None:
    apis = [*MONITORING, "monitoring.coreos.com/v1/PrometheusRule"]
    defaults = docs(template("alerts.enabled=true", apis=apis))
    monitors = [
        d for d in defaults if d["kind"] in ("ServiceMonitor", "PodMonitor", "PrometheusRule")
    ]
    assert len(monitors) == 3
    assert all(m["metadata"]["labels"]["release"] == "kube-prometheus-stack" for m in monitors)
    own = docs(template("alerts.enabled=true", "monitorLabels=null",
                        "metrics.podMonitor.labels.prometheus=b", apis=apis))  # fmt: skip
    labels = {d["kind"]: d["metadata"]["labels"] for d in own}
    assert "release" not in labels["ServiceMonitor"] and "release" not in labels["PrometheusRule"]
    assert labels["PodMonitor"]["prometheus"] == "b"


def _deployment(*sets: str) -> dict[str, Any]:
    return next(d for d in docs(template(*sets)) if d["kind"] == "Deployment")


def test_update_strategy_is_recreate_with_one_replica_and_rolling_with_more() -> None:
    assert _deployment()["spec"]["strategy"] == {"type": "Recreate"}
    assert _deployment("replicaCount=2")["spec"]["strategy"] == {"type": "RollingUpdate"}
    chosen = _deployment("strategy.type=RollingUpdate", "strategy.rollingUpdate.maxSurge=0")
    assert chosen["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}}


def test_adaptations_land_on_the_operator_pod_and_every_object() -> None:
    sets = [s for s in VARIANTS["adapted"][0]]
    objects = docs(template(*sets, apis=VARIANTS["adapted"][1]))
    assert all(o["metadata"]["labels"]["team"] == "perf" for o in objects)
    assert all(o["metadata"]["annotations"]["owner"] == "platform" for o in objects)
    pod = next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]
    assert pod["metadata"]["labels"]["team"] == "perf"
    (spread,) = pod["spec"]["topologySpreadConstraints"]
    # A constraint without a selector counts the operator's own pods.
    assert spread["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == "operator"
    assert pod["spec"]["volumes"] == [{"name": "ca", "configMap": {"name": "corp-ca"}}]
    container = pod["spec"]["containers"][0]
    assert container["volumeMounts"][0]["mountPath"] == "/etc/ssl/corp"
    (pdb,) = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
    assert pdb["spec"]["minAvailable"] == 1 and "maxUnavailable" not in pdb["spec"]
    assert not [o for o in docs(template()) if o["kind"] == "PodDisruptionBudget"]


CRDS_CHART = REPO / "charts" / "mongobench-crds"


def test_crd_chart_is_released_with_the_operator_chart_and_renders_valid_crds(
    crds: list[dict[str, Any]],
) -> None:
    # One version for both (the release workflow tags appVersion; the README upgrades both).
    operator, definitions = (
        yaml.safe_load((c / "Chart.yaml").read_text()) for c in (CHART, CRDS_CHART)
    )
    assert (operator["version"], operator["appVersion"]) == (
        definitions["version"],
        definitions["appVersion"],
    )
    text = helm("template", "mb-crds", str(CRDS_CHART)).stdout
    rendered = docs(text)
    assert {d["metadata"]["name"] for d in rendered} == {
        d["metadata"]["name"] for d in crds if d["spec"]["group"] != "monitoring.coreos.com"
    }
    assert all(d["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep" for d in rendered)
    assert validate(text, crds, kubernetes="1.30.0") == []
    # Keep can be turned off; the schemas are the repository's, byte for byte in meaning.
    unkept = docs(helm("template", "mb-crds", str(CRDS_CHART), "--set=keep=false").stdout)
    assert not any(
        "helm.sh/resource-policy" in d["metadata"].get("annotations", {}) for d in unkept
    )
    source = {d["metadata"]["name"]: d["spec"] for d in crds}
    assert all(d["spec"] == source[d["metadata"]["name"]] for d in rendered)
