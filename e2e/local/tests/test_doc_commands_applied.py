"""Cluster tier: every `kubectl apply` the documentation shows (README.md, docs/, the charts'
READMEs, manifests/**/README.md, the commands in manifests' comments; localplane.doccommands
extracts them) is admitted by a real kube-apiserver, as written from the repository's root.

Each runs with `--dry-run=server`, so the apiserver validates every object against the CRD
schemas and CEL rules (and its built-in types) and persists nothing, on a plane of its own
holding the repository's CRDs and the Prometheus Operator's (the install's monitors need them).
What stands in for the documents' surroundings:

- the namespaces a command applies into (`-n`, or the objects' own) are created first: a dry
  run creates no namespace, so `kubectl create namespace bench` before it would not help;
- `--context eks` / `--context magnum` are dropped: one plane stands in for each cluster;
- a pipeline's upstream (`sed ... FILE | kubectl apply -f -`) runs here and its output is the
  input.

Not run: commands marked `# not run here: WHY`, and applies of a file the repository does not
ship (an example's own file); both are listed in the output. That the commands parse (flags,
subcommands) is the unit tier's: hack/tests/test_doc_commands.py. That the install commands
work end to end (operator running, a run Succeeded) is test_install.py's.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest
import yaml

from localplane import doccommands as dc
from localplane.nodes import NodeSet
from localplane.plane import Plane, kubectl_path
from localplane.pytest_plugin import apply_repo_crds
from localplane.tools import REPO, prometheus_operator_crds

pytestmark = pytest.mark.cluster


def namespaces(a: dc.Apply, text: str) -> set[str]:
    """Where the apply's objects go: its -n, else each object's own namespace."""
    given = dc.option(list(a.args), "-n", "--namespace")
    if given:
        return {given}
    docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    return {d["metadata"]["namespace"] for d in docs if d.get("metadata", {}).get("namespace")}


def test_every_documented_kubectl_apply_is_admitted_by_the_apiserver(
    make_plane: Callable[..., Plane], capsys: pytest.CaptureFixture[str]
) -> None:
    plane = make_plane(nodes=NodeSet(profile="kind", count=1))
    assert apply_repo_crds(plane)
    plane.apply(prometheus_operator_crds())
    applies = dc.kubectl_applies(dc.snippets())
    ran, skipped, refused = [], [], []
    for a in applies:
        where = f"{a.snippet.where}: {a.snippet.text}"
        if a.snippet.not_run:
            skipped.append(f"{where}  (not run here: {a.snippet.not_run})")
            continue
        text = dc.applied_manifests(a)
        if text is None:
            skipped.append(f"{where}  (applies a file of the user's own)")
            continue
        for ns in sorted(namespaces(a, text) - {"default"}):
            plane.kubectl("create", "namespace", ns, check=False)  # exists already: fine
        proc = subprocess.run(
            [kubectl_path(), f"--kubeconfig={plane.kubeconfig}", *a.args, "--dry-run=server"],
            input=text if a.source == "-" else None, cwd=REPO, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            refused.append(f"{where}\n    {proc.stderr.strip()}")
        ran.append(where)
    with capsys.disabled():
        print(f"\ndocumented kubectl applies admitted (server dry run): {len(ran)}; not run:")
        print("\n".join(f"  {s}" for s in skipped))
    assert not refused, "\n".join(refused)
    # The documents' applies were found and run: the samples, the studies, the install.
    assert len(ran) >= 15, ran
    for path in ("manifests/samples/", "manifests/studies/", "manifests/install/overlays/"):
        assert any(path in r for r in ran), path
