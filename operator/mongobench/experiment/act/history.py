"""A BenchmarkExperiment judged against the history it names (spec.history): condition
Regressed and status.history, once, when the experiment ends.

Regressed is True when the experiment's runs sit after a change for the worse that still holds
and that no acknowledgement silences (spec.history.acknowledgements and the archive's
history/acks.yaml): the verdict `mongobench history --fail-on regression` gives, from the same
library. Acknowledged changes are named apart and never make it True.

The history is the archive's (read through the archive reader, as spec.archive resolves, never
written: the operator lends no write to a store a user named for reading); the experiment's own
succeeded runs are added from the API, since their uploads may still be under way. The series
and change points come from mongobench_results.history (the code `mongobench history` runs).
Otava, numpy and scipy come only with the operator's extra `mongobench[history]`: without it
the condition is Unknown and says so."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from mongobench.api import HistorySpec, SpecError
from mongobench.benchmarkrun.act import archive
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.k8s.api import KubeApi
from mongobench_archive import ArchiveError
from mongobench_results import history

# How many changes status.history lists (the message names every series).
MAX_LISTED = 20


def _change(c: history.Change) -> dict[str, Any]:
    return {
        "series": c.series.id,
        "magnitude": round(c.magnitude, 4),
        "meanBefore": round(c.mean_before, 3),
        "meanAfter": round(c.mean_after, 3),
        "unit": c.series.unit,
        "runBefore": c.before.run,
        "runAfter": c.after.run,
        "provenance": c.provenance_text(),
    }


def _sits_after(c: history.Change, uids: set[str]) -> bool:
    """One of the experiment's runs is a point at or after the change in its series."""
    return any(p.uid in uids for p in c.series.points[c.index :])


def _named(c: history.Change) -> str:
    return (
        f"{c.series.id}: {100 * c.magnitude:+.1f}% ({c.mean_before:.4g} -> {c.mean_after:.4g} "
        f"{c.series.unit}) after {c.before.run}"
    )


def judge(
    kube: KubeApi,
    meta: Mapping[str, Any],
    spec: HistorySpec | None,
    runs: Sequence[Mapping[str, Any]],
    config: OperatorConfig,
) -> tuple[dict[str, Any], tuple[cond.ConditionStatus, str, str]] | None:
    """status.history and the Regressed condition (status, reason, message) of the experiment
    (`meta`) with spec.history `spec`; None without one. Never raises for an unreadable
    history: that is the condition's Unknown."""
    if spec is None:
        return None
    namespace = meta["namespace"]
    ended = [r for r in runs if (r.get("status") or {}).get("phase") == cond.RUN_SUCCEEDED]
    mine = [
        history.HistoryRun(
            f"{namespace}/{r['metadata']['name']}",
            str(r["metadata"].get("uid", "")),
            r,
        )
        for r in ended
    ]
    try:
        url, u, acks = _read_history(kube, namespace, spec, config, mine)
    except (ArchiveError, archive.NotConfigured, history.HistoryError, SpecError) as exc:
        return {"error": str(exc)}, (cond.UNKNOWN, cond.HISTORY_UNAVAILABLE, str(exc))
    except ImportError as exc:  # Otava (the extra) is not installed
        message = (
            "this operator has no change-point method (run the operator-history image, or "
            f"install mongobench[history]): {exc}"
        )
        return {"error": message}, (cond.UNKNOWN, cond.HISTORY_UNAVAILABLE, message)
    return _verdict(url, u, acks, {r.uid for r in mine})


def _read_history(
    kube: KubeApi,
    namespace: str,
    spec: HistorySpec,
    config: OperatorConfig,
    mine: Sequence[history.HistoryRun],
) -> tuple[str, history.Update, list[history.Ack]]:
    """The archive's URL, its history with the experiment's runs (`mine`) added, and every
    acknowledgement (the archive's, then the spec's). Raises what the caller reports."""
    given = history.parse_acks(
        [dataclasses.asdict(a) for a in spec.acknowledgements],
        "spec.history.acknowledgements",
    )
    settings = archive.resolve({"archive": spec.archive}, config)
    if settings is None:
        raise ArchiveError("spec.history.archive opts out of archiving: no history to read")
    root, _ = archive.open_archive(kube, settings, namespace)
    u = history.update_archive(
        root,
        list(spec.series),
        list(spec.metrics or history.DEFAULT_METRICS),
        write=False,
        extra=mine,
    )
    acks = [*history.archive_acks(root, yaml.safe_load, yaml.YAMLError), *given]
    return settings.url, u, acks


def _verdict(
    url: str, u: history.Update, acks: Sequence[history.Ack], uids: set[str]
) -> tuple[dict[str, Any], tuple[cond.ConditionStatus, str, str]]:
    """status.history and Regressed from the changes at the experiment's runs (`uids`)."""
    v = history.verdict(u.changes, acks)
    worse = [c for c in v.standing if _sits_after(c, uids)]
    accepted = [(c, a) for c, a in v.acknowledged if _sits_after(c, uids)]
    status = {
        "archive": url,
        "runs": len(u.history.runs),
        "series": len(u.history.series),
        "regressed": [_change(c) for c in worse[:MAX_LISTED]],
        "acknowledged": [
            {**_change(c), "reason": a.reason, "by": a.by} for c, a in accepted[:MAX_LISTED]
        ],
    }
    apart = "; ".join(f"{_named(c)}, {a.text()}" for c, a in accepted)
    if worse:
        named = "; ".join(_named(c) for c in worse)
        return status, (
            cond.TRUE,
            cond.REGRESSION_FOUND,
            named + (f" (also {apart})" if apart else ""),
        )
    if accepted:
        return status, (cond.FALSE, cond.ACKNOWLEDGED, apart)
    return status, (
        cond.FALSE,
        cond.NO_REGRESSION,
        f"{len(u.history.series)} series over {len(u.history.runs)} runs: no change for the "
        "worse at this experiment's runs",
    )
