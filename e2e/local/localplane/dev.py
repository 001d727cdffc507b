"""`make dev` / `make dev-down`: a local plane, the CRDs and the operator, outliving the command.

    python -m localplane.dev up      # idempotent: a second `up` reuses what runs, restarts the
                                     # operator if it died
    python -m localplane.dev down    # stops everything, removes .dev/

State lives in `.dev/` at the repo root: the plane's workdir (`.dev/plane/`: kubeconfig, logs,
pids), `.dev/operator.json` (pid) and `.dev/operator.log`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from localplane import procs
from localplane.net import free_port
from localplane.nodes import NodeSet
from localplane.plane import STATE_FILE, Plane, cleanup_stale
from localplane.pytest_plugin import apply_repo_crds
from localplane.tools import REPO

DEV = Path(os.environ.get("MONGOBENCH_DEV_DIR", REPO / ".dev"))
PLANE_DIR = DEV / "plane"
OPERATOR_STATE = DEV / "operator.json"
OPERATOR_LOG = DEV / "operator.log"
OPERATOR_CMD = [str(REPO / ".venv" / "bin" / "mongobench-operator"), "run", "--plain-logs"]
# An operator still alive after this long has got past imports, config and kopf's startup.
OPERATOR_SETTLE_SECONDS = 5.0


def _say(msg: str) -> None:
    print(f"dev: {msg}", flush=True)


def _running_plane() -> Plane | None:
    if not (PLANE_DIR / STATE_FILE).is_file():
        return None
    plane = Plane.attach(PLANE_DIR)
    if plane.alive():
        return plane
    # Half dead (e.g. machine slept, a component crashed): start over rather than limp on.
    _say("found a stopped or broken plane in .dev/plane: cleaning it up")
    plane.keep_workdir = False
    plane.stop()
    return None


def _operator() -> procs.Proc | None:
    try:
        proc = procs.Proc.from_json(json.loads(OPERATOR_STATE.read_text()))
    except (OSError, ValueError, KeyError):
        return None
    return proc if proc.alive() else None


def _start_operator(plane: Plane) -> int:
    if _operator() is not None:
        _say("operator already running")
        return 0
    exe = Path(OPERATOR_CMD[0])
    if not exe.is_file():
        _say(f"OPERATOR NOT STARTED: {exe} is missing (run `make setup`); the plane stays up")
        return 1
    cmd = [
        *OPERATOR_CMD,
        f"--metrics-port={free_port()}",
        f"--probe-port={free_port()}",
    ]
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
    with OPERATOR_LOG.open("ab") as log:
        log.write(f"\n--- {time.strftime('%F %T')} {' '.join(cmd)}\n".encode())
    proc, _ = procs.spawn("operator", cmd, OPERATOR_LOG, detached=True, env=env, cwd=REPO)
    OPERATOR_STATE.write_text(json.dumps(proc.to_json()))
    deadline = time.monotonic() + OPERATOR_SETTLE_SECONDS
    while time.monotonic() < deadline and proc.alive():
        time.sleep(0.2)
    if not proc.alive():
        OPERATOR_STATE.unlink(missing_ok=True)
        _say(
            "OPERATOR FAILED TO START (`mongobench-operator run` exited); the plane stays up.\n"
            f"--- {OPERATOR_LOG} (tail) ---\n{procs.tail(OPERATOR_LOG, 30)}"
        )
        return 1
    return 0


def up() -> int:
    DEV.mkdir(parents=True, exist_ok=True)
    cleanup_stale()
    plane = _running_plane()
    if plane is None:
        _say("starting the local control plane in .dev/plane ...")
        plane = Plane.start(
            PLANE_DIR, nodes=NodeSet(profile="kind", count=3), keep_workdir=True, detached=True
        )
        _say(f"plane up in {plane.started_in:.1f}s")
    else:
        _say("plane already running")
    rc = 0
    try:
        crds = apply_repo_crds(plane)
        _say(f"CRDs applied: {', '.join(crds) or '(crds/ is empty)'}")
    except Exception as e:
        _say(f"CRDs NOT APPLIED; the plane stays up:\n{e}")
        rc = 1
    rc = max(rc, _start_operator(plane))
    print(
        f"\nkubeconfig: {plane.kubeconfig}\n"
        f"  kubectl --kubeconfig {plane.kubeconfig} get nodes\n"
        f"  export KUBECONFIG={plane.kubeconfig}\n"
        f"operator log: {OPERATOR_LOG}\n"
        f"component logs: {plane.logs}/\n"
        "stop with: make dev-down",
        flush=True,
    )
    return rc


def down() -> int:
    operator = _operator()
    if operator is not None:
        procs.terminate([operator])
        _say("operator stopped")
    if (PLANE_DIR / STATE_FILE).is_file():
        plane = Plane.attach(PLANE_DIR)
        plane.keep_workdir = False
        plane.stop()
        _say("plane stopped")
    shutil.rmtree(DEV, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localplane.dev", description=__doc__)
    parser.add_argument("command", choices=["up", "down"])
    args = parser.parse_args(argv)
    return up() if args.command == "up" else down()


if __name__ == "__main__":
    sys.exit(main())
