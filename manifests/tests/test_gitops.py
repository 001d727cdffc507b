"""Unit tier: the GitOps and platform manifests as a user (or Argo CD) builds them: the kustomize
overlays with the real kubectl's kustomize, validated by kubeconform -strict; the experiments
chart's naming of runs by the hash of their spec; the platform recipes agreeing with the
operator's presets (operator/mongobench/mongocluster/platform.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from localplane.plane import kubectl_path
from localplane.schemas import REPO_CRDS, load_crds, validate
from localplane.tools import REPO, binary, prometheus_operator_crds
from mongobench.mongocluster.platform import PRESETS

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
    args = [str(binary("helm")), "template", "exp", str(EXPERIMENTS), "-f", str(values)]
    return run(*args, *[f"--set={s}" for s in sets])


def run_names(text: str) -> list[str]:
    return [d["metadata"]["name"] for d in docs(text) if d["kind"] == "BenchmarkRun"]


def test_a_changed_run_spec_renders_as_a_new_run_and_the_old_one_is_kept(tmp_path: Path) -> None:
    example = EXPERIMENTS / "examples" / "kind.yaml"
    first = run_names(experiments(example))
    assert first == run_names(experiments(example))  # stable across renders
    assert first[0].startswith("ycsb-a-") and len(first[0]) == len("ycsb-a-") + 8
    # The same spec written with its keys in another order is the same run.
    values = yaml.safe_load(example.read_text())
    spec = values["runs"][0]["spec"]
    values["runs"][0]["spec"] = dict(reversed(list(spec.items())))
    reordered = tmp_path / "reordered.yaml"
    reordered.write_text(yaml.safe_dump(values, sort_keys=False))
    assert run_names(experiments(reordered)) == first
    # One changed field: another name, so Argo CD creates it instead of patching an immutable spec.
    changed = run_names(experiments(example, "runs[0].spec.repetitions=2"))
    assert changed != first
    run = next(d for d in docs(experiments(example)) if d["kind"] == "BenchmarkRun")
    annotations = run["metadata"]["annotations"]
    assert annotations["argocd.argoproj.io/sync-options"] == "Prune=false"
    assert annotations["argocd.argoproj.io/compare-options"] == "IgnoreExtraneous"
    assert run["metadata"]["labels"]["mongobench.io/experiment"] == "ycsb-a"


def test_experiments_schema_refuses_a_run_name_too_long_for_its_hash() -> None:
    proc = subprocess.run(
        [str(binary("helm")), "template", "exp", str(EXPERIMENTS),
         "--set=runs[0].name=" + "a" * 55, "--set=runs[0].spec.clusterRef.name=x"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode != 0 and "name" in proc.stderr


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
