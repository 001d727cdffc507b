"""Cluster tier: the getting-started page's `make dev` path as written (docs/getting-started.md).
`make dev` starts a plane that outlives the command, with the CRDs and the operator; the page's
sample applied with kubectl is reconciled by that operator; `make dev-down` stops everything.
(Run with its state in a test folder, MONGOBENCH_DEV_DIR, so a developer's own `make dev` is
left alone.)"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from localplane.plane import kubectl_path
from localplane.tools import REPO

pytestmark = pytest.mark.cluster


def page_block(after: str) -> list[str]:
    """The commands of the first ```sh block after `after` on the getting-started page."""
    text = (REPO / "docs" / "getting-started.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text[text.index(after) :], re.S)
    assert block is not None, f"no sh block after {after!r} in docs/getting-started.md"
    return [line.split("#")[0].strip() for line in block[1].splitlines() if line.strip()]


def make(target: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", target],
        cwd=REPO,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"make {target}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_make_dev_starts_an_operator_that_reconciles_the_pages_sample(tmp_path: Path) -> None:
    env = {**os.environ, "MONGOBENCH_DEV_DIR": str(tmp_path / "dev")}
    try:
        out = make("dev", env)
        kubeconfig = re.search(r"^kubeconfig: (\S+)$", out, re.M)
        assert kubeconfig is not None, out
        operator_log = tmp_path / "dev" / "operator.log"
        assert "OPERATOR" not in out, out  # "OPERATOR NOT STARTED" / "FAILED TO START"

        apply, watch = page_block("`make dev` (start; prints the")
        assert apply == "kubectl apply -f manifests/samples/mongocluster-minimal.yaml"
        assert watch.startswith("kubectl get mongoclusters,benchmarkruns")
        kube_env = {**env, "KUBECONFIG": kubeconfig[1]}
        kubectl = [kubectl_path(), *apply.split()[1:]]
        subprocess.run(kubectl, cwd=REPO, env=kube_env, check=True, timeout=60)

        # The operator reconciles it: its phase appears, and the operator logs its provisioning.
        get = [kubectl_path(), "get", "mongoclusters", "-o", "jsonpath={.items[*].status.phase}"]
        deadline, phase = time.monotonic() + 90, ""
        while time.monotonic() < deadline and not phase:
            phase = subprocess.run(
                get, env=kube_env, check=False, capture_output=True, text=True, timeout=30
            ).stdout.strip()
            time.sleep(0.5)
        assert phase, f"no phase within 90 s; operator log:\n{operator_log.read_text()[-3000:]}"
        listed = subprocess.run(
            [kubectl_path(), *watch.split()[1:3]],
            env=kube_env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        assert "minimal" in listed, listed
        assert "Handler 'provision' succeeded" in operator_log.read_text()
    finally:
        make("dev-down", env)
    assert not (tmp_path / "dev").exists()  # dev-down removes its state
