"""Cluster tier: the CRDs' admission rules, proven against a real kube-apiserver (v1.32).

What a user sees from `kubectl apply --server-side`:

- every manifest in admission/invalid/ is refused, and the error names the field
  (each file says why in `# why:` and what the error must contain in `# expect:`), including
  names the operator could not use for its children (a 60-character MongoCluster name,
  `my.cluster`: issue 12);
- every two-document file in admission/updates/ is an object that is accepted, then an update
  that is refused with `# expect:` (transition rules: downgrades, shrinking storage, immutable
  fields, a BenchmarkRun's frozen spec) or, with `# expect: accepted`, taken and stored;
- every sample in manifests/samples/ is accepted and reads back with its defaults filled in, and
  so is every manifest in admission/valid/ (edge cases the rules must not refuse);
- every study in manifests/studies/, full size and reduced (the kustomize builds), is admitted
  (server-side dry run), and every cell of its experiment passes the operator's own admission
  of cells (its matrix expansion and a dry run of each cell's MongoCluster and BenchmarkRun);
- `kubectl explain` prints the field descriptions;
- an even replica-set member count is admitted with a warning (a ValidatingAdmissionPolicy in
  crds/mongobench-admission-warnings.yaml, since CEL in a CRD can only reject).

No operator process runs here: this proves the API server's validation and defaulting, and the
operator's cell checks through its own code.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localplane.plane import Plane
from mongobench.api import BenchmarkExperimentSpec, BenchmarkRunSpec, MongoClusterSpec
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.experiment.act import reconcile as experiment
from mongobench.k8s import client as kube
from mongobench.k8s.api import KubeClient
from mongobench.k8s.credentials import from_kubeconfig

pytestmark = pytest.mark.cluster

CORPUS = Path(__file__).parent / "admission"
REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "manifests" / "samples"
STUDIES = REPO / "manifests" / "studies"
CRDS = REPO / "crds"
FIELD_MANAGER = "admission-test"
WARNING_POLICY = "mongoclusters.mongobench.io-even-members"


@dataclass(frozen=True)
class Case:
    path: Path
    why: str
    expect: str
    docs: tuple[str, ...]  # YAML text of each document, in order

    @property
    def accepted(self) -> bool:
        return self.expect == "accepted"


def load_case(path: Path) -> Case:
    text = path.read_text()
    header = dict(re.findall(r"^# (why|expect): (.+)$", text, re.M))
    docs = tuple(d for d in re.split(r"^---\s*$", text, flags=re.M) if yaml.safe_load(d))
    return Case(path, header.get("why", ""), header.get("expect", ""), docs)


def cases(folder: str) -> list[Case]:
    return [load_case(p) for p in sorted((CORPUS / folder).glob("*.yaml"))]


INVALID = cases("invalid")
UPDATES = cases("updates")
VALID = cases("valid")


@pytest.fixture(scope="module")
def namespace(plane: Plane) -> Iterator[str]:
    """One namespace for the module (a fresh one per test costs more than the tests).

    Safe to share: rejected manifests create nothing, and every object a test creates has a
    name of its own (the corpus test checks the update cases' names are distinct).
    """
    name = f"admission-{uuid.uuid4().hex[:6]}"
    plane.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        plane.kubectl("delete", "namespace", name, "--wait=false", check=False)


def ids(items: list[Case]) -> list[str]:
    return [c.path.stem for c in items]


def apply(plane: Plane, namespace: str, manifest: str) -> subprocess.CompletedProcess[str]:
    return plane.kubectl(
        "apply",
        "--server-side",
        f"--field-manager={FIELD_MANAGER}",
        "-n",
        namespace,
        "-f",
        "-",
        input=manifest,
        check=False,
    )


def read_back(plane: Plane, namespace: str, doc: dict[str, Any]) -> dict[str, Any] | None:
    proc = plane.kubectl(
        "get",
        f"{doc['kind'].lower()}.mongobench.io",
        doc["metadata"]["name"],
        "-n",
        namespace,
        "-o",
        "json",
        "--ignore-not-found",
    )
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def contains(stored: Any, applied: Any, path: str = "spec") -> list[str]:
    """Where `stored` differs from what was applied (fields added by defaulting are fine)."""
    if isinstance(applied, dict):
        if not isinstance(stored, dict):
            return [f"{path}: stored {stored!r}, applied an object"]
        return [p for k, v in applied.items() for p in contains(stored.get(k), v, f"{path}.{k}")]
    if isinstance(applied, list):
        if not isinstance(stored, list) or len(stored) != len(applied):
            return [f"{path}: stored {stored!r}, applied {applied!r}"]
        return [
            p
            for i, (s, a) in enumerate(zip(stored, applied, strict=True))
            for p in contains(s, a, f"{path}[{i}]")
        ]
    return [] if stored == applied else [f"{path}: stored {stored!r}, applied {applied!r}"]


# --- the corpus itself ---------------------------------------------------------------------


def test_corpus_is_big_distinct_and_documented() -> None:
    """At least 30 invalid manifests, each rejected for its own reason, every kind covered."""
    assert len(INVALID) >= 30
    expects = [c.expect for c in INVALID]
    duplicated = sorted({e for e in expects if expects.count(e) > 1})
    assert len(set(expects)) >= 30
    assert duplicated == []
    for case in [*INVALID, *UPDATES]:
        assert case.why, f"{case.path.name}: no '# why:' line"
        assert case.expect, f"{case.path.name}: no '# expect:' line"
        if not case.accepted:
            named = "spec" in case.expect or "metadata.name" in case.expect
            assert named, f"{case.path.name}: expect names no field"
    kinds = {yaml.safe_load(c.docs[0])["kind"] for c in INVALID}
    assert kinds == {"MongoCluster", "BenchmarkRun", "BenchmarkExperiment"}
    assert all(len(c.docs) == 1 for c in INVALID)
    assert all(len(c.docs) == 2 for c in UPDATES)
    assert any(c.accepted for c in UPDATES) and any(not c.accepted for c in UPDATES)
    # Update cases create objects: distinct names keep them independent in a shared namespace.
    names = [
        (d["kind"], d["metadata"]["name"]) for c in UPDATES for d in [yaml.safe_load(c.docs[0])]
    ]
    assert len(names) == len(set(names))


# --- rejected on create -------------------------------------------------------------------


@pytest.mark.parametrize("case", INVALID, ids=ids(INVALID))
def test_invalid_manifest_is_rejected_naming_the_field(
    plane: Plane, namespace: str, case: Case
) -> None:
    (manifest,) = case.docs
    proc = apply(plane, namespace, manifest)
    assert proc.returncode != 0, f"accepted, but {case.why}:\n{proc.stdout}"
    assert case.expect in proc.stderr, f"{case.why}\nexpected {case.expect!r} in:\n{proc.stderr}"
    assert read_back(plane, namespace, yaml.safe_load(manifest)) is None


# --- transitions ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", UPDATES, ids=ids(UPDATES))
def test_update(plane: Plane, namespace: str, case: Case) -> None:
    original, update = case.docs
    created = apply(plane, namespace, original)
    assert created.returncode == 0, (
        f"the original of {case.path.name} was refused:\n{created.stderr}"
    )
    proc = apply(plane, namespace, update)
    stored = read_back(plane, namespace, yaml.safe_load(original))
    assert stored is not None
    if case.accepted:
        assert proc.returncode == 0, f"{case.why}, but refused:\n{proc.stderr}"
        assert contains(stored["spec"], yaml.safe_load(update)["spec"]) == []
        for key, value in (yaml.safe_load(update)["metadata"].get("labels") or {}).items():
            assert stored["metadata"]["labels"][key] == value
    else:
        assert proc.returncode != 0, f"update accepted, but {case.why}"
        assert case.expect in proc.stderr, f"expected {case.expect!r} in:\n{proc.stderr}"
        # The refused update left the stored object as it was.
        assert contains(stored["spec"], yaml.safe_load(original)["spec"]) == []


# --- samples and defaults ------------------------------------------------------------------


SAMPLE_FILES = sorted(SAMPLES.glob("*.yaml"))


@pytest.mark.parametrize("sample", SAMPLE_FILES, ids=[p.stem for p in SAMPLE_FILES])
def test_sample_is_accepted_as_written(plane: Plane, namespace: str, sample: Path) -> None:
    proc = apply(plane, namespace, sample.read_text())
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, "a sample should not need a warning"
    for doc in yaml.safe_load_all(sample.read_text()):
        stored = read_back(plane, namespace, doc)
        assert stored is not None
        assert contains(stored["spec"], doc["spec"]) == []


STUDY_BUILDS = sorted(p.parent for p in STUDIES.glob("*/*/kustomization.yaml"))


@pytest.mark.parametrize(
    "build", STUDY_BUILDS, ids=[f"{p.parent.name}/{p.name}" for p in STUDY_BUILDS]
)
def test_study_is_admitted_and_every_cell_passes_the_operators_checks(
    plane: Plane, namespace: str, build: Path
) -> None:
    built = plane.kubectl("kustomize", str(build)).stdout
    proc = plane.kubectl(
        "apply", "--server-side", "--dry-run=server", f"--field-manager={FIELD_MANAGER}",
        "-n", namespace, "-o", "json", "-f", "-", input=built, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, "a study should not need a warning"
    out = json.loads(proc.stdout)
    stored = out.get("items", [out])
    applied = [d for d in yaml.safe_load_all(built) if d]
    assert [d["kind"] for d in stored] == [d["kind"] for d in applied]
    api = kube.ApiClient(from_kubeconfig([plane.kubeconfig]))
    try:
        for obj, doc in zip(stored, applied, strict=True):
            if obj["kind"] == "ConfigMap":
                continue
            assert contains(obj["spec"], doc["spec"]) == []
            if obj["kind"] == "BenchmarkExperiment":
                # What the operator does first with an experiment: expand the matrix, then dry-run
                # every cell's cluster and run (SpecError, naming the cell, if one is refused).
                spec = BenchmarkExperimentSpec.parse(obj["spec"])
                matrix, slots, _ = experiment.plan(obj, spec)
                experiment.validate(KubeClient(api), obj["metadata"], spec, matrix)
                assert len(slots) == len(matrix.cells) * obj["spec"]["repetitions"]
            elif obj["kind"] == "MongoCluster":
                MongoClusterSpec.parse(obj["spec"])
            else:
                assert make_plan(BenchmarkRunSpec.parse(obj["spec"]))
    finally:
        api.close()


@pytest.mark.parametrize("case", VALID, ids=ids(VALID))
def test_valid_edge_case_is_accepted(plane: Plane, namespace: str, case: Case) -> None:
    (manifest,) = case.docs
    proc = apply(plane, namespace, manifest)
    assert proc.returncode == 0, f"{case.why}, but refused:\n{proc.stderr}"
    doc = yaml.safe_load(manifest)
    stored = read_back(plane, namespace, doc)
    assert stored is not None
    assert contains(stored["spec"], doc["spec"]) == []


def test_minimal_samples_read_back_with_their_defaults(plane: Plane, namespace: str) -> None:
    """What `kubectl get -o yaml` shows a user who wrote only the required fields."""
    for name in ("mongocluster-minimal.yaml", "benchmarkrun-minimal.yaml"):
        assert apply(plane, namespace, (SAMPLES / name).read_text()).returncode == 0

    cluster = read_back(plane, namespace, {"kind": "MongoCluster", "metadata": {"name": "minimal"}})
    assert cluster is not None
    spec = cluster["spec"]
    assert spec["topology"] == {"type": "ReplicaSet", "replicaSet": {"members": 3}}
    assert spec["storage"] == {"size": "10Gi"}
    assert spec["deletionPolicy"] == "Retain"  # data is never deleted unless asked
    assert spec["monitoring"]["exporter"] is True
    assert spec["monitoring"]["podMonitor"] is True
    assert spec["platform"] == "auto"
    assert spec["placement"] == {"antiAffinity": "Preferred"}
    assert spec["tls"] == {"enabled": False, "mode": "requireTLS", "memberAuth": "keyFile"}
    assert spec["auth"] == {"benchmarkDatabase": "ycsb", "benchmarkUser": "benchmark"}

    run = read_back(plane, namespace, {"kind": "BenchmarkRun", "metadata": {"name": "minimal"}})
    assert run is not None
    spec = run["spec"]
    assert spec["driver"] == "ycsb"
    assert spec["repetitions"] == 3
    assert spec["load"]["recordCount"] == 100000
    assert spec["run"]["operationCount"] == 100000
    assert spec["run"]["threads"] == 16
    assert spec["dataReset"] == {"between": "None", "insertingWorkloads": "RunLast"}
    assert spec["mongo"]["writeConcern"] == "acknowledged"
    assert spec["cleanup"] == {"jobs": "OnSuccess", "data": "Never"}
    assert spec["sharding"] == {"key": "_id", "hashed": True}


def test_sharded_defaults_and_uri_secret_key_default(plane: Plane, namespace: str) -> None:
    manifest = """
apiVersion: mongobench.io/v1alpha1
kind: MongoCluster
metadata: {name: two-shards}
spec:
  version: 7.0.14
  topology: {type: Sharded, sharded: {shards: 2}}
"""
    assert apply(plane, namespace, manifest).returncode == 0
    cluster = read_back(plane, namespace, yaml.safe_load(manifest))
    assert cluster is not None
    assert cluster["spec"]["topology"] == {
        "type": "Sharded",
        "sharded": {"shards": 2, "membersPerShard": 3, "configServers": 3, "mongos": 2},
    }
    assert (
        apply(
            plane, namespace, (SAMPLES / "benchmarkrun-custom-locust.yaml").read_text()
        ).returncode
        == 0
    )
    run = read_back(
        plane, namespace, {"kind": "BenchmarkRun", "metadata": {"name": "custom-locust"}}
    )
    assert run is not None
    assert run["spec"]["uriSecretRef"] == {"name": "external-mongo", "key": "uri"}


# --- kubectl explain -----------------------------------------------------------------------


def _schema_at(crd_file: str, dotted: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / crd_file).read_text())
    node = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for part in dotted.split("."):
        node = node["properties"][part]
    return dict(node)


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("resource", "crd_file", "dotted"),
    [
        (
            "mongocluster.spec.topology.sharded",
            "mongobench.io_mongoclusters.yaml",
            "spec.topology.sharded",
        ),
        ("benchmarkrun.spec.dataReset", "mongobench.io_benchmarkruns.yaml", "spec.dataReset"),
    ],
)
def test_kubectl_explain_prints_the_descriptions(
    plane: Plane, resource: str, crd_file: str, dotted: str
) -> None:
    schema = _schema_at(crd_file, dotted)
    # The apiserver publishes a new CRD's OpenAPI a moment after it is Established.
    deadline = time.monotonic() + 30
    while True:
        proc = plane.kubectl("explain", resource, check=False)
        if proc.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert proc.returncode == 0, proc.stderr
    out = _words(proc.stdout)
    assert _words(schema["description"]) in out
    for name, child in schema["properties"].items():
        assert name in out
        assert _words(child["description"]) in out, f"{name}'s description missing"


# --- even member counts: admitted with a warning ------------------------------------------


def _wait_for_policy(plane: Plane, namespace: str) -> None:
    """A new policy is enforced once the apiserver has compiled it: probe with a dry run."""
    probe = """
apiVersion: mongobench.io/v1alpha1
kind: MongoCluster
metadata: {name: probe}
spec: {version: 7.0.14, topology: {replicaSet: {members: 2}}}
"""
    deadline = time.monotonic() + 30
    while True:
        proc = plane.kubectl(
            "apply", "--server-side", "--dry-run=server", "-n", namespace, "-f", "-",
            input=probe, check=False,
        )  # fmt: skip
        if "Warning" in proc.stderr or time.monotonic() > deadline:
            return
        time.sleep(0.5)


def test_even_member_count_is_admitted_with_a_warning(plane: Plane, namespace: str) -> None:
    binding = plane.kubectl(
        "get", "validatingadmissionpolicybinding", WARNING_POLICY, "-o", "json"
    )  # fmt: skip
    assert json.loads(binding.stdout)["spec"]["validationActions"] == ["Warn"]
    _wait_for_policy(plane, namespace)

    manifest = """
apiVersion: mongobench.io/v1alpha1
kind: MongoCluster
metadata: {name: four}
spec:
  version: 7.0.14
  topology: {type: ReplicaSet, replicaSet: {members: 4}}
"""
    proc = apply(plane, namespace, manifest)
    assert proc.returncode == 0, proc.stderr
    assert "mongocluster.mongobench.io/four serverside-applied" in proc.stdout
    assert "Warning:" in proc.stderr
    assert "spec.topology.replicaSet.members is 4, an even number" in proc.stderr
    stored = read_back(plane, namespace, yaml.safe_load(manifest))
    assert stored is not None and stored["spec"]["topology"]["replicaSet"]["members"] == 4


def test_even_counts_in_a_sharded_cluster_warn_on_create_and_on_update(
    plane: Plane, namespace: str
) -> None:
    _wait_for_policy(plane, namespace)
    odd = """
apiVersion: mongobench.io/v1alpha1
kind: MongoCluster
metadata: {name: sharded}
spec:
  version: 7.0.14
  topology: {type: Sharded, sharded: {shards: 2, membersPerShard: 3, configServers: 3}}
"""
    created = apply(plane, namespace, odd)
    assert created.returncode == 0, created.stderr
    assert "Warning" not in created.stderr

    even = odd.replace(
        "membersPerShard: 3, configServers: 3", "membersPerShard: 2, configServers: 4"
    )
    updated = apply(plane, namespace, even)
    assert updated.returncode == 0, updated.stderr
    assert "spec.topology.sharded.membersPerShard is 2, an even number" in updated.stderr
    assert "spec.topology.sharded.configServers is 4, an even number" in updated.stderr
    stored = read_back(plane, namespace, yaml.safe_load(even))
    assert stored is not None
    assert stored["spec"]["topology"]["sharded"]["configServers"] == 4
