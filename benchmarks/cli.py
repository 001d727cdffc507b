"""make bench-cli: seconds the `mongobench` command takes, as a user runs it (a new process each
time, Python start-up included), against the local plane and against archives:

  list over 200 finished runs
  compare of 20 runs x 6 workloads x 5 repetitions (throughput, mean and p99 latency, CPU)

Each figure is the median of 3 runs, printed next to the 2 s target as a ratio. A benchmark,
not a test: nothing is asserted.
"""

from __future__ import annotations

import copy
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kubernetes import client as k8s

from localplane.nodes import NodeSet
from localplane.plane import Plane
from localplane.pytest_plugin import apply_repo_crds
from localplane.tools import REPO

sys.path.insert(0, str(REPO / "cli" / "tests"))
from builders import benchmark_run

from mongobench_cli import export
from mongobench_cli.sources import LoadedRun

GROUP, VERSION, PLURAL = "mongobench.io", "v1alpha1", "benchmarkruns"
MONGOBENCH = REPO / ".venv" / "bin" / "mongobench"
TARGET = 2.0
REPEAT = 3


def timed(kubeconfig: Path, *args: str) -> float:
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        done = subprocess.run(
            [str(MONGOBENCH), *args],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "KUBECONFIG": str(kubeconfig), "COLUMNS": "250"},
        )
        times.append(time.perf_counter() - t0)
        if done.returncode != 0:
            raise SystemExit(f"mongobench {' '.join(args)} failed: {done.stderr.strip()}")
    return statistics.median(times)


def create(api: k8s.ApiClient, namespace: str, obj: dict) -> None:  # type: ignore[type-arg]
    custom = k8s.CustomObjectsApi(api)
    name = obj["metadata"]["name"]
    custom.create_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "BenchmarkRun",
         "metadata": {"name": name}, "spec": obj["spec"]},
    )  # fmt: skip
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, name, {"status": obj["status"]}
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        work = Path(tmp)
        print("starting the local plane ...", flush=True)
        plane = Plane.start(work / "plane", nodes=NodeSet(profile="kind", count=1))
        try:
            apply_repo_crds(plane)
            api = plane.api_client()
            core = k8s.CoreV1Api(api)
            for ns in ("many", "compare"):
                core.create_namespace({"metadata": {"name": ns}})
            # 200 finished runs of 6 workloads x 5 repetitions for `list`.
            template = benchmark_run("t", workloads="abcdef", repetitions=5, operations=200).run
            t0 = time.perf_counter()
            for i in range(200):
                obj = copy.deepcopy(template)
                obj["metadata"]["name"] = f"run-{i:03d}"
                create(api, "many", obj)
            print(f"created 200 runs in {time.perf_counter() - t0:.1f} s", flush=True)
            # 20 runs (4 configurations x 5) of 6 workloads x 5 repetitions for `compare`.
            runs = []
            for i in range(20):
                run = benchmark_run(
                    f"cmp-{i:02d}",
                    workloads="abcdef",
                    repetitions=5,
                    operations=200,
                    shards=3 + i % 4,
                    throughput=1000 + 100 * (i % 4),
                    labels={"shards": str(3 + i % 4)},
                    seed=i,
                )
                create(api, "compare", run.run)
                runs.append(run)
            api.close()  # type: ignore[no-untyped-call]
            archive = work / "archive"
            export.export(runs, str(archive / "compare"))
            # `list` reads run.json only: the 200 archived runs carry status, not documents.
            many = []
            for i in range(200):
                obj = copy.deepcopy(template)
                obj["metadata"] |= {"name": f"run-{i:03d}", "uid": f"uid-{i:03d}"}
                many.append(LoadedRun(obj, "bench"))
            export.export(many, str(archive / "many"))
            names = [r.name for r in runs]
            kc = plane.kubeconfig
            results = [
                ("list 200 runs, API", timed(kc, "list", "-n", "many")),
                ("list 200 runs, archive", timed(kc, "list", str(archive / "many"))),
                (
                    "compare 20 runs x 6 x 5, API",
                    timed(kc, "compare", *names, "-n", "compare", "--group-by", "shards"),
                ),
                (
                    "compare 20 runs x 6 x 5, archive",
                    timed(kc, "compare", str(archive / "compare"), "--group-by", "shards"),
                ),
                ("mongobench --help (start-up alone)", timed(kc, "--help")),
            ]
        finally:
            plane.stop()
    print(f"\n{'what':40} {'seconds':>8} {'/ target 2 s':>13}")
    for what, seconds in results:
        print(f"{what:40} {seconds:8.2f} {seconds / TARGET:13.2f}")


if __name__ == "__main__":
    main()
