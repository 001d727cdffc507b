"""Cluster tier: the Helm chart installs on a real apiserver, and the operator runs with exactly
the RBAC the chart grants (a token of the chart's ServiceAccount, not the admin certificate):
peering elects one active replica among several; with the real Prometheus Operator CRDs the
chart adds its monitors, which the real Prometheus Operator's Prometheus selects by label, and
a MongoCluster + BenchmarkRun flow (created from Git the way the experiments chart renders it, a
changed run becoming a new run) succeeds under its RBAC, which the apiserver's audit log shows
is no wider than what the operator calls (and Secrets asked for only by label); upgrade and
uninstall leave nothing behind but the CRDs and the user's resources.

What stands in, as in test_benchmarkrun.py: KWOK for the operator's own pod (the operator runs as
a process with the chart ServiceAccount's token), the wire model for mongod's replica-set state,
FerretDB as the data path of the client pods the harness kubelet executes.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pymongo
import pytest
import yaml
from kubernetes import client as k8s

from localplane.executor import pod_executor, rewrite_hosts
from localplane.experiments import small_experiment
from localplane.ferretdb import running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.monitoring import Monitoring, running_monitoring
from localplane.nodes import NodeSet
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.tools import REPO, binary
from localplane.tools import prometheus_operator_crds as promop_crds_dir

pytestmark = pytest.mark.cluster

CHART = REPO / "charts" / "mongobench"
CRDS_CHART = REPO / "charts" / "mongobench-crds"
EXPERIMENTS = REPO / "manifests" / "gitops" / "experiments"
SAMPLE = REPO / "manifests" / "samples" / "mongocluster-minimal.yaml"
GROUP, VERSION = "mongobench.io", "v1alpha1"


def helm(plane: Plane, *args: str) -> str:
    proc = subprocess.run(
        [str(binary("helm")), f"--kubeconfig={plane.kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def service_account_kubeconfig(plane: Plane, namespace: str, sa: str, path: Path) -> Path:
    """A kubeconfig that authenticates as the ServiceAccount (TokenRequest API)."""
    token = plane.kubectl("create", "token", sa, "-n", namespace, "--duration=1h").stdout.strip()
    ca = base64.b64encode(plane.pki.ca_crt.read_bytes()).decode()
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "p",
                        "cluster": {"server": plane.server, "certificate-authority-data": ca},
                    }
                ],
                "users": [{"name": sa, "user": {"token": token}}],
                "contexts": [{"name": "p", "context": {"cluster": "p", "user": sa}}],
                "current-context": "p",
            }
        )
    )
    return path


def peers(api: k8s.ApiClient, namespace: str) -> dict[str, Any]:
    obj = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
        "kopf.dev", "v1", namespace, "kopfpeerings", "mb-mongobench"
    )
    return dict(obj.get("status") or {})


def phase(api: k8s.ApiClient, namespace: str, name: str) -> Any:
    obj = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
        "mongobench.io", "v1alpha1", namespace, "mongoclusters", name
    )
    return obj.get("status", {}).get("phase")


def test_chart_installs_and_operator_runs_with_chart_rbac_and_peering(
    make_plane: Any, tmp_path: Path
) -> None:
    # A plane of its own: a fresh cluster, as a user installs on, with no CRDs applied beforehand.
    plane = make_plane()
    kube_api = plane.api_client()
    namespace = "mongobench"
    plane.kubectl("create", "namespace", namespace)
    plane.kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted")
    helm(plane, "install", "mb-crds", str(CRDS_CHART), "-n", namespace, "--wait")
    notes = helm(
        plane,
        "install",
        "mb",
        str(CHART),
        "-n",
        namespace,
        f"--set=watchNamespaces={{{namespace}}}",
        "--wait",
        "--timeout=60s",
    )
    # No Prometheus Operator CRDs on this cluster: no monitors, and the notes say so.
    assert "WARNING: metrics.serviceMonitor.enabled is true but" in notes
    assert "kubectl get benchmarkruns -w" in notes
    # The operator pod passed the namespace's restricted Pod Security admission and is Running.
    pods = k8s.CoreV1Api(kube_api).list_namespaced_pod(
        namespace,
        label_selector="app.kubernetes.io/instance=mb,app.kubernetes.io/component=operator",
    )
    assert [p.status.phase for p in pods.items] == ["Running"]
    # One ConfigMap per generated dashboard for the Grafana sidecar, the JSON intact.
    configmaps = k8s.CoreV1Api(kube_api).list_namespaced_config_map(
        namespace, label_selector="grafana_dashboard=1"
    )
    dashboards = {p.name: json.loads(p.read_text()) for p in (CHART / "dashboards").glob("*.json")}
    assert len(configmaps.items) == len(dashboards) == 6
    assert {k: json.loads(v) for cm in configmaps.items for k, v in cm.data.items()} == dashboards

    kubeconfig = service_account_kubeconfig(
        plane, namespace, "mb-mongobench", tmp_path / "sa.kubeconfig"
    )
    peering = {"MONGOBENCH_PEERING": "mb-mongobench", "MONGOBENCH_PEERING_MANDATORY": "true"}
    active = start_operator(
        kubeconfig, [namespace], tmp_path / "a.log", MONGOBENCH_PRIORITY="200", **peering
    )
    standby = start_operator(
        kubeconfig, [namespace], tmp_path / "b.log", MONGOBENCH_PRIORITY="100", **peering
    )
    try:
        # Both replicas have announced themselves in the chart's KopfPeering object.
        wait_until(lambda: len(peers(kube_api, namespace)) == 2, timeout=30, what="two peers")
        plane.kubectl("apply", "-n", namespace, "-f", str(SAMPLE))
        wait_until(lambda: phase(kube_api, namespace, "minimal"), what="status")
        assert "minimal" not in (tmp_path / "b.log").read_text()  # the standby did nothing
        assert "Forbidden" not in (tmp_path / "a.log").read_text()

        # The active replica goes away; the standby takes over and reconciles new resources.
        active.stop()
        second = SAMPLE.read_text().replace("name: minimal", "name: second")
        plane.kubectl("apply", "-n", namespace, "-f", "-", input=second)
        wait_until(lambda: phase(kube_api, namespace, "second"), timeout=60, what="takeover")
        assert "Forbidden" not in (tmp_path / "b.log").read_text()
    finally:
        active.stop()
        standby.stop()
    helm(plane, "uninstall", "mb", "-n", namespace, "--wait")


# --- the full flow under the chart's RBAC ----------------------------------------------------
OPERATOR_NS, BENCH_NS = "mongobench", "bench"
OPERATOR_USER = f"system:serviceaccount:{OPERATOR_NS}:mb-mongobench"

# Permissions the chart grants that this flow does not call, each with the path of the code that
# needs it (reviewed by hand: the operator calls the API through one generic client, so no
# method name can be checked for). SSA_CREATE: server-side apply of a new object, audited as
# patch, authorized as create too.
UNEXERCISED: dict[tuple[str, str, str], str] = {
    ("cert-manager.io", "certificates", "create"): "a TLS cluster from an issuer (test_tls.py)",
    ("cert-manager.io", "certificates", "patch"): "a TLS cluster from an issuer (test_tls.py)",
    ("monitoring.coreos.com", "podmonitors", "delete"): "a run's finer CPU resolution ends with "
    "its PodMonitor (test_cpu_resolution.py)",
    ("networking.k8s.io", "networkpolicies", "create"): "a cluster with spec.networkPolicy "
    "enabled (test_cluster_network_policy.py)",
    ("networking.k8s.io", "networkpolicies", "patch"): "a cluster with spec.networkPolicy "
    "enabled (test_cluster_network_policy.py)",
    ("networking.k8s.io", "networkpolicies", "delete"): "spec.networkPolicy switched off "
    "(test_cluster_network_policy.py)",
    ("", "configmaps", "create"): "the operator grants it to client pods (it must hold it)",
    ("mongobench.io", "benchmarkexperiments", "get"): "BenchmarkExperiment (none in this flow)",
    ("mongobench.io", "benchmarkexperiments", "patch"): "BenchmarkExperiment (none in this flow)",
    (
        "mongobench.io",
        "benchmarkexperiments/status",
        "patch",
    ): "BenchmarkExperiment status (none in this flow)",
    ("mongobench.io", "benchmarkruns", "create"): "an experiment creates its cells' runs",
    ("mongobench.io", "mongoclusters", "create"): "an experiment creates its cells' clusters",
    ("mongobench.io", "mongoclusters", "delete"): "an experiment deletes its cells' clusters",
    ("", "configmaps", "get"): "granted to client pods for the start barrier (parallelism > 1)",
    ("", "configmaps", "patch"): "SSA of a step's start barrier (parallelism > 1); granted too",
    ("", "configmaps", "update"): "the operator grants it to client pods (it must hold it)",
    ("", "events", "patch"): "a repeated identical Event is counted by patching it",
    ("", "persistentvolumeclaims", "list"): "claims are read once the spec asks more than a claim "
    "template (storage growth)",
    ("", "persistentvolumeclaims", "patch"): "storage growth patches claims in place",
    ("", "pods", "delete"): "rolling restarts delete one member pod at a time",
    (
        "",
        "pods",
        "list",
    ): "a rolling restart lists a replica set's pods (a StatefulSet not settled)",
    (
        "",
        "secrets",
        "get",
    ): "a Secret the spec names (spec.auth) is read by name; the cluster's own are listed",
    ("", "serviceaccounts", "create"): "SSA_CREATE: the client ServiceAccount",
    ("", "services", "create"): "SSA_CREATE: member and mongos Services",
    ("", "services", "delete"): "a drained shard's headless Service goes (sharded scale-down)",
    ("apps", "deployments", "create"): "SSA_CREATE: the mongos Deployment of a sharded cluster",
    ("apps", "deployments", "get"): "the mongos Deployment's readiness (sharded clusters)",
    ("apps", "deployments", "patch"): "the mongos Deployment (sharded clusters)",
    ("apps", "statefulsets", "create"): "SSA_CREATE: member StatefulSets",
    ("apps", "statefulsets", "delete"): "a drained shard's StatefulSet goes (sharded scale-down)",
    ("batch", "jobs", "create"): "SSA_CREATE: one Job per benchmark step",
    (
        "monitoring.coreos.com",
        "podmonitors",
        "create",
    ): "SSA_CREATE: a MongoCluster's PodMonitor (spec.monitoring)",
    ("policy", "poddisruptionbudgets", "create"): "SSA_CREATE: member PodDisruptionBudgets",
    ("policy", "poddisruptionbudgets", "delete"): "a drained shard's PodDisruptionBudget goes",
    ("rbac.authorization.k8s.io", "rolebindings", "create"): "SSA_CREATE: the client RoleBinding",
    ("rbac.authorization.k8s.io", "roles", "create"): "SSA_CREATE: the client Role",
    (
        "storage.k8s.io",
        "storageclasses",
        "get",
    ): "a storage class named in the spec is checked (storage growth)",
}


def custom(api: k8s.ApiClient) -> Any:
    return k8s.CustomObjectsApi(api)


def get(api: k8s.ApiClient, plural: str, name: str) -> dict[str, Any]:
    return dict(custom(api).get_namespaced_custom_object(GROUP, VERSION, BENCH_NS, plural, name))


def phase_of(api: k8s.ApiClient, plural: str, name: str) -> str | None:
    return get(api, plural, name).get("status", {}).get("phase")


def render_experiments(plane: Plane, values: dict[str, Any], path: Path) -> str:
    path.write_text(yaml.safe_dump(values))
    # Without the superseded-runs hook Job: Argo CD (and Helm) delete it before creating it
    # again at each sync, which `kubectl apply` cannot do (a Job's template is immutable).
    # test_gitops_superseded.py runs that hook as Argo CD would.
    return helm(plane, "template", "exp", str(EXPERIMENTS), "-f", str(path), "--no-hooks")


def run_names(text: str) -> list[str]:
    return [
        d["metadata"]["name"] for d in yaml.safe_load_all(text) if d and d["kind"] == "BenchmarkRun"
    ]


def granted(api: k8s.ApiClient) -> set[tuple[str, str, str]]:
    rbac = k8s.RbacAuthorizationV1Api(api)
    out = set()
    for role in rbac.list_cluster_role(label_selector="app.kubernetes.io/instance=mb").items:
        for rule in role.rules or []:
            for group in rule.api_groups or []:
                for resource in rule.resources or []:
                    out |= {(group, resource, verb) for verb in rule.verbs}
    return out


def operator_events(plane: Plane) -> list[dict[str, Any]]:
    """The audit events of the operator's requests for objects."""
    return [
        e
        for e in plane.audit_events()
        if e.get("user", {}).get("username") == OPERATOR_USER and "objectRef" in e
    ]


def used(plane: Plane) -> tuple[set[tuple[str, str, str]], list[str]]:
    calls, denied = set(), []
    for event in operator_events(plane):
        ref = event["objectRef"]
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        calls.add((ref.get("apiGroup", ""), resource, event["verb"]))
        if event.get("responseStatus", {}).get("code") == 403:
            denied.append(f"{event['verb']} {resource}")
    return calls, denied


def leftovers(api: k8s.ApiClient) -> list[str]:
    selector = "app.kubernetes.io/instance=mb"
    core, apps, rbac = k8s.CoreV1Api(api), k8s.AppsV1Api(api), k8s.RbacAuthorizationV1Api(api)
    listers = {
        "Deployment": apps.list_deployment_for_all_namespaces,
        "Service": core.list_service_for_all_namespaces,
        "ServiceAccount": core.list_service_account_for_all_namespaces,
        "ConfigMap": core.list_config_map_for_all_namespaces,
        "ClusterRole": rbac.list_cluster_role,
        "ClusterRoleBinding": rbac.list_cluster_role_binding,
    }
    found = [
        f"{kind}/{o.metadata.name}"
        for kind, lister in listers.items()
        for o in lister(label_selector=selector).items
    ]
    for group, version, plural in [
        ("monitoring.coreos.com", "v1", "servicemonitors"),
        ("monitoring.coreos.com", "v1", "podmonitors"),
        ("kopf.dev", "v1", "clusterkopfpeerings"),
        ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings"),
    ]:
        items = custom(api).list_cluster_custom_object(
            group, version, plural, label_selector=selector
        )
        found += [f"{plural}/{o['metadata']['name']}" for o in items["items"]]
    return found


def test_chart_with_monitoring_runs_a_gitops_flow_under_its_rbac_then_upgrades_and_uninstalls(
    make_plane: Any, tmp_path: Path
) -> None:
    plane = make_plane(nodes=NodeSet(profile="kind", count=3), audit=True)
    plane.apply(promop_crds_dir())
    api = plane.api_client()
    for ns in (OPERATOR_NS, BENCH_NS):
        plane.kubectl("create", "namespace", ns)
        plane.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
    helm(plane, "install", "mb-crds", str(CRDS_CHART), "-n", OPERATOR_NS, "--wait")
    notes = helm(
        plane, "install", "mb", str(CHART), "-n", OPERATOR_NS, "--wait", "--timeout=60s",
        "--set=metrics.serviceMonitor.labels.release=kps",
    )  # fmt: skip
    assert "WARNING" not in notes and "ServiceMonitor mongobench/mb-mongobench" in notes
    monitor = custom(api).get_namespaced_custom_object(
        "monitoring.coreos.com", "v1", OPERATOR_NS, "servicemonitors", "mb-mongobench"
    )
    assert monitor["spec"]["endpoints"][0]["honorLabels"] is True
    assert monitor["metadata"]["labels"]["release"] == "kps"
    custom(api).get_namespaced_custom_object(
        "monitoring.coreos.com", "v1", OPERATOR_NS, "podmonitors", "mb-mongobench-clients"
    )

    kubeconfig = service_account_kubeconfig(plane, OPERATOR_NS, "mb-mongobench", tmp_path / "sa")
    values = small_experiment()
    with (
        running_monitoring(plane, tmp_path / "monitoring") as monitoring,
        running_ferretdb() as ferretdb,
        MongoModel(keyfile=keyfile_from_pods(api), catch_up_seconds=0.1) as model,
        pod_executor(
            plane, BENCH_NS, uri_rewrite=rewrite_hosts(f"{ferretdb.host}:{ferretdb.port}")
        ),
    ):
        # kube-prometheus-stack's Prometheus (the real Prometheus Operator's) selects the chart's
        # monitors by label: the clients' PodMonitor (default monitorLabels), and not the
        # ServiceMonitor labelled for another release (`release: kps`).
        clients = f"podMonitor/{OPERATOR_NS}/mb-mongobench-clients/0"
        pools = wait_until(
            lambda: clients in (found := monitoring.scrape_pools()) and found,
            60, what="the clients' scrape job",
        )  # fmt: skip
        assert f"serviceMonitor/{OPERATOR_NS}/mb-mongobench/0" not in pools
        model.member(f"rs1-rs0-0.rs1-rs0-hl.{BENCH_NS}.svc.cluster.local:27017")
        operator = start_operator(
            kubeconfig,
            [],  # the whole cluster: the chart's ClusterRole
            tmp_path / "operator.log",
            MONGOBENCH_PEERING="mb-mongobench",
            MONGOBENCH_PEERING_MANDATORY="true",
            MONGOBENCH_HOST_MAP=",".join(f"{k}={v}" for k, v in model.host_map.items()),
            # The private plane's own stack: its nodes' node-exporters
            MONGOBENCH_PROMETHEUS_URL=monitoring.url,
            MONGOBENCH_PROMETHEUS_SCRAPE_INTERVAL="1",
        )
        try:
            # Git, first revision: as Argo CD would sync the experiments chart.
            first = render_experiments(plane, values, tmp_path / "v1.yaml")
            plane.kubectl("apply", "-n", BENCH_NS, "-f", "-", input=first)
            (old,) = run_names(first)
            wait_until(lambda: phase_of(api, "mongoclusters", "rs1") == "Ready", 60, what="Ready")
            wait_until(
                lambda: phase_of(api, "benchmarkruns", old) in ("Succeeded", "Failed"),
                240, 0.5, what="first run finished",
            )  # fmt: skip
            before = get(api, "benchmarkruns", old)["status"]
            assert before["phase"] == "Succeeded", before.get("conditions")
            # Changing the run in place is refused by the apiserver ...
            changed_in_place = first.replace("operationCount: 200", "operationCount: 300")
            refused = plane.kubectl(
                "apply", "-n", BENCH_NS, "-f", "-", input=changed_in_place, check=False
            )
            assert refused.returncode != 0 and "spec is immutable" in refused.stderr
            # ... so Git's second revision renders it as a new run, and the old one stays.
            values["runs"][0]["spec"]["run"]["operationCount"] = 300
            second = render_experiments(plane, values, tmp_path / "v2.yaml")
            (new,) = run_names(second)
            assert new != old
            # The prepare step drops the collection through the wire model, which is not this
            # data path: drop it in FerretDB too, as a real mongod's prepare would have.
            pymongo.MongoClient(ferretdb.uri)["ycsb"].drop_collection("usertable")
            plane.kubectl("apply", "-n", BENCH_NS, "-f", "-", input=second)
            wait_until(
                lambda: phase_of(api, "benchmarkruns", new) in ("Succeeded", "Failed"),
                240, 0.5, what="second run finished",
            )  # fmt: skip
            second_status = get(api, "benchmarkruns", new)["status"]
            assert second_status["phase"] == "Succeeded", (
                second_status.get("conditions"),
                [s.get("message") for s in second_status.get("steps", [])],
            )
            after = get(api, "benchmarkruns", old)["status"]
            assert after["summary"] == before["summary"] and after["phase"] == "Succeeded"
            assert "Forbidden" not in (tmp_path / "operator.log").read_text()
        finally:
            operator.stop()

    # RBAC: every call was allowed, and every grant was used by this flow or is a documented
    # path of the code this flow does not take.
    calls, denied = used(plane)
    assert not denied
    grants = granted(api)
    assert calls <= grants, calls - grants
    unused = grants - calls
    assert unused <= set(UNEXERCISED), "\n".join(map(str, sorted(unused - set(UNEXERCISED))))
    # RBAC cannot grant by label, so the audit log shows it: the operator asked for Secrets
    # only by label (kopf's watch for mongobench.io/watch=true, a cluster's own by its name).
    secrets = [
        unquote(e["requestURI"])
        for e in operator_events(plane)
        if e["objectRef"]["resource"] == "secrets" and e["verb"] in ("list", "watch")
    ]
    assert secrets and all("labelSelector=" in uri for uri in secrets), secrets
    assert any("labelSelector=mongobench.io/watch=true" in uri for uri in secrets), secrets

    # Upgrade: the CRDs' release first (as documented), then values that drop objects; they go.
    helm(plane, "upgrade", "mb-crds", str(CRDS_CHART), "-n", OPERATOR_NS, "--wait")
    helm(
        plane, "upgrade", "mb", str(CHART), "-n", OPERATOR_NS, "--wait",
        "--reset-then-reuse-values",
        "--set=metrics.podMonitor.enabled=false", "--set=dashboards.enabled=false",
    )  # fmt: skip
    assert not [x for x in leftovers(api) if x.startswith(("podmonitors/", "ConfigMap/"))]
    assert any(x.startswith("servicemonitors/") for x in leftovers(api))

    helm(plane, "uninstall", "mb", "-n", OPERATOR_NS, "--wait")
    assert leftovers(api) == []
    # Kept, as documented: the CRDs and the user's resources with their results.
    ext = k8s.ApiextensionsV1Api(api)
    assert ext.read_custom_resource_definition("benchmarkruns.mongobench.io")
    assert get(api, "benchmarkruns", old)["status"]["summary"] == before["summary"]


def test_alerts_render_only_when_enabled_and_the_apiserver_accepts_the_rule(
    plane: Plane, namespace: str, monitoring: Monitoring
) -> None:
    """The PrometheusRule against the Prometheus Operator's real CRD schema (server-side dry
    run), then applied: the real Prometheus Operator selects it by its release label and
    Prometheus 3 loads and evaluates every rule; what the rules say is promtool's part (make
    test-rules)."""
    template = ["template", "mb", str(CHART), "-n", namespace]
    assert "kind: PrometheusRule" not in helm(plane, *template)  # off by default
    rendered = helm(
        plane,
        *template,
        "--show-only=templates/prometheusrules.yaml",
        "--set=alerts.enabled=true",
        "--set=alerts.labels.release=kube-prometheus-stack",
        "--set=alerts.thresholds.replicationLagSeconds=45",
    )
    rule = yaml.safe_load(rendered)
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    lag = next(
        r for g in rule["spec"]["groups"] for r in g["rules"]
        if r.get("alert") == "MongoDBReplicationLagHigh"
    )  # fmt: skip
    assert lag["expr"].rstrip().endswith("> 45")
    out = plane.kubectl("apply", "--dry-run=server", "-n", namespace, "-f", "-", input=rendered)
    assert "prometheusrule.monitoring.coreos.com/mb-mongobench-alerts created (server dry run)" in (
        out.stdout
    )
    plane.kubectl("apply", "-n", namespace, "-f", "-", input=rendered)
    wanted = {g["name"] for g in rule["spec"]["groups"]}

    def evaluated() -> list[dict[str, Any]]:
        groups = [g for g in monitoring.rule_groups() if g["name"] in wanted]
        done = len(groups) == len(wanted) and all(g["lastEvaluation"][:4] != "0001" for g in groups)
        return groups if done else []

    # Loaded within seconds; first evaluated within the stack's evaluation interval (30 s).
    groups = wait_until(evaluated, 90, what="the chart's rule groups loaded and evaluated")
    rules = [r for g in groups for r in g["rules"]]
    assert len(rules) == sum(len(g["rules"]) for g in rule["spec"]["groups"])
    assert {r["health"] for r in rules} == {"ok"}, [r for r in rules if r["health"] != "ok"]
