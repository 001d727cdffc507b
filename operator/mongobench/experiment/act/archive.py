"""An ended experiment's summary in the archive, beside its runs: the experiment object (spec,
and status with its cells, each cluster deployment's timings and the comparison), whose deploy
timings the live object loses when it is deleted. Written once, when the experiment ends, to the
runs' archive (`objects.archive_of`, else the operator's default), experiment.json then its
manifest (mongobench_archive.layout). An upload that fails never fails the experiment: status
`archive.error` says why. Where is pure (`settings`); `upload` does the I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mongobench.api import BenchmarkExperimentSpec
from mongobench.benchmarkrun.act import archive as run_archive
from mongobench.config import OperatorConfig
from mongobench.experiment.build import objects
from mongobench.k8s.api import KubeApi
from mongobench_archive import ArchiveError, layout

log = logging.getLogger("mongobench.archive")


def settings(
    name: str, spec: BenchmarkExperimentSpec, config: OperatorConfig
) -> run_archive.Settings | None:
    """Pure: where the experiment's runs are archived (None: nowhere, so no summary either)."""
    own = objects.archive_of(spec, name)
    return run_archive.resolve({} if own is None else {"archive": own}, config)


def upload(
    kube: KubeApi,
    body: Mapping[str, Any],
    spec: BenchmarkExperimentSpec,
    config: OperatorConfig,
) -> dict[str, Any]:
    """The status field `archive` after writing the ended experiment `body` (with its final
    status; `spec` is its spec, parsed): {location} when written, {error} when not; {} when
    there is no archive."""
    try:
        where = settings(body["metadata"]["name"], spec, config)
    except run_archive.NotConfigured as exc:
        return {"archive": {"error": str(exc)}}
    if where is None:
        return {}
    meta = body["metadata"]
    try:
        root, secrets = run_archive.open_archive(kube, where, meta["namespace"])
        root.write_experiment(body, secrets=secrets)
    except (ArchiveError, OSError) as exc:
        log.warning(
            "experiment %s/%s: summary not archived: %s", meta["namespace"], meta["name"], exc
        )
        return {"archive": {"error": str(exc)}}
    folder = layout.run_folder(meta["namespace"], meta["name"], meta["uid"])
    return {"archive": {"location": root.location.url(folder)}}
