"""Unit tier: the GitOps and platform manifests as a user (or Argo CD) builds them: the kustomize
overlays with the real kubectl's kustomize, validated by kubeconform -strict; the experiments
chart's naming of runs by the hash of their spec; the platform recipes agreeing with the
operator's presets (operator/mongobench/mongocluster/platform.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from localplane.plane import kubectl_path
from localplane.schemas import REPO_CRDS, load_crds, validate
from localplane.tools import REPO, binary, prometheus_operator_crds
from mongobench.api.names import (
    MAX_BENCHMARKRUN_NAME,
    MAX_MONGOCLUSTER_NAME,
    check_benchmarkrun_name,
)
from mongobench.mongocluster.build.platform import PRESETS

pytestmark = pytest.mark.unit

MANIFESTS = REPO / "manifests"
OVERLAYS = ["kind", "eks", "magnum"]
EXPERIMENTS = MANIFESTS / "gitops" / "experiments"
ARGOCD = MANIFESTS / "gitops" / "argocd"


def docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def run(*args: str) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def kustomize(path: Path) -> str:
    return run(kubectl_path(), "kustomize", str(path))


@pytest.fixture(scope="module")
def crds() -> list[dict[str, Any]]:
    promop = prometheus_operator_crds()
    return load_crds(REPO_CRDS) + load_crds(
        promop / "monitoring.coreos.com_servicemonitors.yaml",
        promop / "monitoring.coreos.com_podmonitors.yaml",
    )


def test_generated_files_are_current() -> None:
    proc = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), str(REPO / "hack" / "manifests.py"),
         str(binary("helm")), "--check"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_overlays_and_samples_are_valid_for_kubeconform_strict(crds: list[dict[str, Any]]) -> None:
    texts = [kustomize(MANIFESTS / "install" / "crds")]
    texts += [kustomize(MANIFESTS / "install" / "overlays" / o) for o in OVERLAYS]
    texts += [p.read_text() for p in sorted(MANIFESTS.glob("platforms/*/samples/*.yaml"))]
    texts += [p.read_text() for p in sorted(MANIFESTS.glob("samples/*.yaml"))]
    texts.append((MANIFESTS / "ci" / "nightly-experiment.yaml").read_text())
    texts.append(experiments(EXPERIMENTS / "examples" / "kind.yaml"))
    # Argo CD's own kinds have no schema here (its CRDs are not in a package registry).
    assert validate("\n---\n".join(texts), crds) == []


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_installs_the_operator_with_its_platform_storage_class(overlay: str) -> None:
    objs = docs(kustomize(MANIFESTS / "install" / "overlays" / overlay))
    kinds = {d["kind"] for d in objs}
    assert {"Deployment", "ServiceMonitor", "PodMonitor", "ClusterKopfPeering"} <= kinds
    # The CRDs are applied before (manifests/install/crds): one `kubectl apply` cannot create a
    # CRD and a custom resource of it.
    assert "CustomResourceDefinition" not in kinds
    crds = {d["kind"] for d in docs(kustomize(MANIFESTS / "install" / "crds"))}
    assert crds == {"CustomResourceDefinition"}
    classes = [d["metadata"]["name"] for d in objs if d["kind"] == "StorageClass"]
    # kind ships its `standard` class itself; EKS and Magnum get the preset's from the overlay.
    assert classes == ([] if overlay == "kind" else [PRESETS[overlay].storage_class_name])


def test_argocd_sources_point_at_paths_that_exist() -> None:
    app = yaml.safe_load((ARGOCD / "application.yaml").read_text())
    paths = [source["path"] for source in app["spec"]["sources"]]
    assert paths[0] == "manifests/install/crds"
    assert all((REPO / p / "kustomization.yaml").is_file() for p in paths)
    appset = yaml.safe_load((ARGOCD / "applicationset.yaml").read_text())
    values = appset["spec"]["generators"][0]["clusters"]["selector"]["matchExpressions"][0][
        "values"
    ]
    assert sorted(values) == sorted(OVERLAYS)
    crds_source, overlay_source = appset["spec"]["template"]["spec"]["sources"]
    assert crds_source["path"] == "manifests/install/crds"
    path = overlay_source["path"]
    for platform in values:
        rendered = path.replace('{{ index .metadata.labels "mongobench.io/platform" }}', platform)
        assert (REPO / rendered / "kustomization.yaml").is_file(), rendered
    experiments_app = yaml.safe_load((ARGOCD / "experiments-application.yaml").read_text())
    source = experiments_app["spec"]["source"]
    assert (REPO / source["path"] / "Chart.yaml").is_file()
    assert all((REPO / source["path"] / f).is_file() for f in source["helm"]["valueFiles"])


def experiments(values: Path, *sets: str) -> str:
    return run(*helm_experiments(values, *sets))


def helm_experiments(values: Path, *sets: str) -> list[str]:
    args = [str(binary("helm")), "template", "exp", str(EXPERIMENTS), "-f", str(values)]
    return args + [f"--set={s}" for s in sets]


def run_names(text: str) -> list[str]:
    return [d["metadata"]["name"] for d in docs(text) if d["kind"] == "BenchmarkRun"]


EXAMPLE = EXPERIMENTS / "examples" / "kind.yaml"


def example_with(tmp_path: Path, change: Any) -> Path:
    """The kind example's values after `change(values)`, as a values file."""
    values = yaml.safe_load(EXAMPLE.read_text())
    change(values)
    path = tmp_path / f"values-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(values, sort_keys=False))
    return path


def test_a_changed_run_spec_renders_as_a_new_run_and_the_old_one_is_kept(tmp_path: Path) -> None:
    first = run_names(experiments(EXAMPLE))
    assert first == run_names(experiments(EXAMPLE))  # stable across renders
    assert first[0].startswith("ycsb-a-") and len(first[0]) == len("ycsb-a-") + 8

    # The same spec written with its keys in another order is the same run.
    def reorder(values: dict[str, Any]) -> None:
        spec = values["runs"][0]["spec"]
        values["runs"][0]["spec"] = dict(reversed(list(spec.items())))

    assert run_names(experiments(example_with(tmp_path, reorder))) == first
    # One changed field: another name, so Argo CD creates it instead of patching an immutable spec.
    changed = run_names(experiments(EXAMPLE, "runs[0].spec.repetitions=2"))
    assert changed != first
    run = next(d for d in docs(experiments(EXAMPLE)) if d["kind"] == "BenchmarkRun")
    annotations = run["metadata"]["annotations"]
    assert annotations["argocd.argoproj.io/sync-options"] == "Prune=false"
    assert annotations["argocd.argoproj.io/compare-options"] == "IgnoreExtraneous"
    assert run["metadata"]["labels"]["mongobench.io/gitops-entry"] == "ycsb-a"


class _Listed:
    """What the operator's experiment reconcile lists through KubeApi, over a fixed set of
    objects, label selectors matched as the apiserver does (the CLI's selector parser)."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = objects

    def list(self, kind: str, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        from mongobench_cli import selector

        wanted = selector.parse(label_selector)
        return [
            o
            for o in self.objects
            if o["kind"] == kind
            and o["metadata"].get("namespace", namespace) == namespace
            and wanted.matches(o["metadata"].get("labels"))
        ]


def test_an_entry_and_an_experiment_of_one_name_stay_apart() -> None:
    """Entry `ycsb-a` of the chart and a BenchmarkExperiment `ycsb-a` in one namespace: the
    experiment finds only its own runs (the operator's reconcile, the CLI's describe use
    mongobench.io/experiment), and the entry's label selects only the entry's run."""
    from mongobench.api import BenchmarkExperimentSpec
    from mongobench.experiment.act import reconcile
    from mongobench.experiment.build import objects
    from mongobench.experiment.decide import matrix

    rendered = docs(experiments(EXAMPLE))
    entry_runs = [d for d in rendered if d["kind"] == "BenchmarkRun"]
    assert [r["metadata"]["labels"]["mongobench.io/gitops-entry"] for r in entry_runs] == ["ycsb-a"]
    experiment = {
        "metadata": {"name": "ycsb-a", "namespace": "bench", "uid": "u1"},
        "spec": {
            "cluster": {"version": "7.0.14"},
            "run": {"workloads": [{"name": "a"}]},
            "dimensions": [
                {"name": "version", "target": "cluster", "field": "version",
                 "values": ["7.0.14", "8.0.4"]},
            ],
        },
    }  # fmt: skip
    spec = BenchmarkExperimentSpec.parse(experiment["spec"])
    m = matrix.expand(spec)
    own = [
        objects.run(experiment["metadata"], spec, m, matrix.Slot(c, 1)) for c in range(len(m.cells))
    ]
    in_namespace = [{**r, "metadata": {**r["metadata"], "namespace": "bench"}} for r in entry_runs]
    kube = _Listed(*in_namespace, *own)
    _, runs = reconcile._children(kube, "bench", "ycsb-a")  # type: ignore[arg-type]
    assert sorted(r["metadata"]["name"] for r in runs.values()) == sorted(
        r["metadata"]["name"] for r in own
    )
    entry = kube.list("BenchmarkRun", "bench", "mongobench.io/gitops-entry=ycsb-a")
    assert [r["metadata"]["name"] for r in entry] == [entry_runs[0]["metadata"]["name"]]
    # An entry may not take the experiments' key back through its own labels.
    proc = subprocess.run(
        helm_experiments(EXAMPLE, "runs[0].labels.mongobench\\.io/experiment=ycsb-a"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0 and "may not set mongobench.io/experiment" in proc.stderr


@pytest.mark.parametrize(
    ("what", "path", "value", "new_run"),
    [
        # The target's shape is what users compare: another shape is another measurement.
        ("cluster members", "clusters[0].spec.topology.replicaSet.members", "5", True),
        ("cluster version", "clusters[0].spec.version", "8.0.4", True),
        ("cluster cache", "clusters[0].spec.storage.wiredTigerCacheSizeGB", "1", True),
        # The run's spec is immutable: every field of it, its labels too, is a new run.
        ("run spec.labels", "runs[0].spec.labels.platform", "kind-2", True),
        # What only keeps, watches or labels the cluster, and the objects' labels, is not.
        ("cluster deletionPolicy", "clusters[0].spec.deletionPolicy", "Delete", False),
        ("PodMonitor labels", "clusters[0].spec.monitoring.podMonitorLabels.release", "kps", False),
        ("cluster object labels", "clusters[0].labels.team", "perf", False),
        ("run object labels", "runs[0].labels.team", "perf", False),
    ],
)
def test_the_run_hash_covers_what_defines_the_measurement(
    what: str, path: str, value: str, new_run: bool
) -> None:
    first = run_names(experiments(EXAMPLE))
    again = run_names(experiments(EXAMPLE, f"{path}={value}"))
    assert (again != first) is new_run, what


def test_a_run_whose_cluster_is_not_in_the_values_is_named_by_its_spec_alone() -> None:
    other = "runs[0].spec.clusterRef.name=elsewhere"
    first = run_names(experiments(EXAMPLE, other))
    assert first == run_names(experiments(EXAMPLE, other, "clusters[0].spec.version=8.0.4"))


@pytest.mark.parametrize("length", [46, 48, 55, 63])
def test_a_long_run_name_is_cut_before_the_hash_to_what_the_operator_accepts(length: int) -> None:
    name = ("a" * 46 + "-" + "b" * 20)[:length]
    rendered = run_names(experiments(EXAMPLE, f"runs[0].name={name}"))[0]
    human, _, digest = rendered.rpartition("-")
    assert len(digest) == 8 and all(c in "0123456789abcdef" for c in digest)
    # Cut to leave room for "-<hash>", without a dangling "-" (the 47th character here).
    assert human == name[: MAX_BENCHMARKRUN_NAME - 9].rstrip("-")
    assert len(rendered) <= MAX_BENCHMARKRUN_NAME
    check_benchmarkrun_name(rendered)  # the operator's own rule, as the CRD's CEL rule says
    # The label keeps the name as written (a label value may have 63 characters).
    run = next(
        d for d in docs(experiments(EXAMPLE, f"runs[0].name={name}")) if d["kind"] == "BenchmarkRun"
    )
    assert run["metadata"]["labels"]["mongobench.io/gitops-entry"] == name


def test_two_runs_cut_to_the_same_name_are_refused_with_both_names(tmp_path: Path) -> None:
    prefix = "x" * 50

    def twins(values: dict[str, Any]) -> None:
        first = values["runs"][0]
        values["runs"] = [{**first, "name": prefix + "0"}, {**first, "name": prefix + "1"}]

    proc = subprocess.run(
        helm_experiments(example_with(tmp_path, twins)), capture_output=True, text=True, check=False
    )
    assert proc.returncode != 0
    assert f"{prefix}0" in proc.stderr and f"{prefix}1" in proc.stderr
    assert "render as the same BenchmarkRun" in proc.stderr


def test_experiments_schema_refuses_names_no_object_could_carry() -> None:
    def refused(*sets: str) -> bool:
        args = [str(binary("helm")), "template", "exp", str(EXPERIMENTS)]
        proc = subprocess.run(
            [*args, *[f"--set={s}" for s in sets]], capture_output=True, text=True, check=False
        )
        return proc.returncode != 0 and "name" in proc.stderr

    run = "runs[0].spec.clusterRef.name=x"
    assert not refused("runs[0].name=" + "a" * 63, run)
    assert refused("runs[0].name=" + "a" * 64, run)  # the label mongobench.io/gitops-entry
    # Clusters are not renamed: the shortest limit of any topology (a Sharded one's).
    longest = min(MAX_MONGOCLUSTER_NAME.values())
    assert not refused(f"clusters[0].name={'c' * longest}", "clusters[0].spec.version=7.0.14")
    assert refused(f"clusters[0].name={'c' * (longest + 1)}", "clusters[0].spec.version=7.0.14")


def test_the_superseded_hook_marks_exactly_the_runs_git_names_no_more(tmp_path: Path) -> None:
    def two_runs(values: dict[str, Any]) -> None:
        second = yaml.safe_load(yaml.safe_dump(values["runs"][0]))
        second["name"] = "ycsb-b"
        second["spec"]["workloads"] = [{"name": "b"}]
        values["runs"].append(second)

    text = experiments(example_with(tmp_path, two_runs))
    objs = docs(text)
    names = run_names(text)
    assert len(names) == 2
    job = next(d for d in objs if d["kind"] == "Job")
    annotations = job["metadata"]["annotations"]
    # A Sync hook: PostSync would wait for a Healthy application, which an old failure prevents.
    assert annotations["argocd.argoproj.io/hook"] == "Sync"
    assert annotations["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"
    container = job["spec"]["template"]["spec"]["containers"][0]
    selector = next(a for a in container["args"] if a.startswith("--selector="))
    assert selector == (
        "--selector=mongobench.io/gitops-release=exp,"
        f"mongobench.io/gitops-run notin ({','.join(names)})"
    )
    assert "argocd.argoproj.io/ignore-healthcheck=true" in container["args"]
    assert "mongobench.io/superseded=true" in container["args"]
    # First, the runs Git names lose the marks (a run named again after a revert is current).
    (unmark,) = job["spec"]["template"]["spec"]["initContainers"]
    current = f"mongobench.io/gitops-run in ({','.join(names)})"
    assert f"--selector=mongobench.io/gitops-release=exp,{current}" in unmark["args"]
    assert unmark["args"][-2:] == [
        "argocd.argoproj.io/ignore-healthcheck-",
        "mongobench.io/superseded-",
    ]
    for run in (d for d in objs if d["kind"] == "BenchmarkRun"):
        labels = run["metadata"]["labels"]
        assert labels["mongobench.io/gitops-release"] == "exp"
        assert labels["mongobench.io/gitops-run"] == run["metadata"]["name"]
    role = next(d for d in objs if d["kind"] == "Role")
    assert role["rules"] == [
        {"apiGroups": ["mongobench.io"], "resources": ["benchmarkruns"], "verbs": ["list", "patch"]}
    ]
    # The names are also in an object Argo CD compares (a hook is not compared), so removing a
    # run from Git alone makes the Application OutOfSync and auto-sync runs the hook.
    listing = next(d for d in objs if d["kind"] == "ConfigMap")
    assert listing["data"]["runs"].split("\n") == names
    assert "argocd.argoproj.io/hook" not in (listing["metadata"].get("annotations") or {})
    # No run in the values: every run of the release is superseded.
    empty = docs(experiments(EXAMPLE, "runs=null"))
    assert next(d for d in empty if d["kind"] == "ConfigMap")["data"]["runs"] == ""
    job = next(d for d in empty if d["kind"] == "Job")
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--selector=mongobench.io/gitops-release=exp,mongobench.io/gitops-run" in args
    assert "initContainers" not in job["spec"]["template"]["spec"]  # no run is current
    assert not [
        d for d in docs(experiments(EXAMPLE, "superseded.enabled=false")) if d["kind"] == "Job"
    ]


# --- platform recipes vs the operator's presets ------------------------------------------------
def platform_node_labels(platform: str) -> set[tuple[str, str]]:
    """(key, value) labels the recipe gives its worker nodes."""
    folder = MANIFESTS / "platforms" / platform
    if platform == "kind":
        config = yaml.safe_load((folder / "kind-config.yaml").read_text())
        return {kv for n in config["nodes"] for kv in (n.get("labels") or {}).items()}
    if platform == "eks":
        config = yaml.safe_load((folder / "cluster.yaml").read_text())
        return {kv for g in config["managedNodeGroups"] for kv in g["labels"].items()}
    # Magnum labels each node of a node group magnum.openstack.org/role=<its --role>.
    script = (folder / "cluster.sh").read_text()
    roles = {
        line.split("--role ")[1].split()[0] for line in script.splitlines() if "--role " in line
    }
    return {("magnum.openstack.org/role", r) for r in roles | {"worker"}}


@pytest.mark.parametrize("platform", OVERLAYS)
def test_platform_recipe_agrees_with_the_operator_preset(platform: str) -> None:
    folder = MANIFESTS / "platforms" / platform
    preset = PRESETS[platform]
    classes = [d for p in folder.glob("storageclass-*.yaml") for d in docs(p.read_text())]
    if platform == "kind":
        assert classes == [] and preset.storage_class_name == "standard"  # kind's own class
    else:
        assert [c["metadata"]["name"] for c in classes] == [preset.storage_class_name]
        sc = classes[0]
        assert sc["volumeBindingMode"] == "WaitForFirstConsumer"
        assert sc["allowVolumeExpansion"] is True  # the operator grows claims in place
    labels = platform_node_labels(platform)
    for sample in folder.glob("samples/*.yaml"):
        obj = yaml.safe_load(sample.read_text())
        spec = obj["spec"]
        selector = (spec.get("placement") or spec.get("clients") or {}).get("nodeSelector", {})
        assert selector and set(selector.items()) <= labels, (sample.name, selector, labels)
        if obj["kind"] == "MongoCluster":
            assert spec["platform"] == platform
    if platform == "eks":  # the eks preset spreads members across zones: the group must span them
        config = yaml.safe_load((folder / "cluster.yaml").read_text())
        database = next(g for g in config["managedNodeGroups"] if g["name"] == "database")
        assert preset.spread_across_zones and len(database["availabilityZones"]) >= 3


def test_network_policy_component_adds_the_operators_policy_selecting_its_pods(
    tmp_path: Path, crds: list[dict[str, Any]]
) -> None:
    """An overlay that opts into the component gets the operator's NetworkPolicy, selecting the
    operator's pods (the Deployment's template labels) and valid for kubeconform -strict."""
    install = MANIFESTS / "install"
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(install / "overlays" / "kind", tmp_path)],
        "components": [os.path.relpath(install / "components" / "network-policy", tmp_path)],
    }
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    text = kustomize(tmp_path)
    objs = docs(text)
    (policy,) = [d for d in objs if d["kind"] == "NetworkPolicy"]
    (deployment,) = [d for d in objs if d["kind"] == "Deployment"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= pod_labels.items()
    assert sorted(policy["spec"]["policyTypes"]) == ["Egress", "Ingress"]
    assert validate(text, crds) == []
    plain = docs(kustomize(install / "overlays" / "kind"))
    assert "NetworkPolicy" not in {d["kind"] for d in plain}
