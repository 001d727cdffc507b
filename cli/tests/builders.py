"""Finished runs as the CLI loads them: the results library's test builders
(results/tests/finished_runs.py) wrapped as LoadedRun, documents and resources included."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "results" / "tests"))

from finished_runs import T0
from finished_runs import benchmark_run as finished_run

from mongobench_cli.sources import LoadedRun

__all__ = ["T0", "benchmark_run"]


def benchmark_run(name: str, **options: Any) -> LoadedRun:
    """A finished run (see finished_runs.benchmark_run for the options) as a LoadedRun."""
    built = finished_run(name, **options)
    loaded = LoadedRun(
        built.run,
        "fixture",
        documents_loader=lambda i: built.documents.get(i, []),
        resources_loader=built.resources.get,
    )
    loaded.key = built.key
    return loaded
