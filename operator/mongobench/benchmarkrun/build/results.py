"""How the operator finds a step's results: every client's document is read back from its
ConfigMaps (mongobench_results.configmaps), never from pod logs, and merged exactly
(mongobench_results.merge sums the clients' HDR histograms)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mongobench_results import configmaps

RESULT_OF = configmaps.LABEL_RESULT
RESULT_SET = configmaps.LABEL_RESULT_SET


def set_selector(prefixes: Iterable[str]) -> str:
    """The label selector of these steps' result ConfigMaps (by result prefix)."""
    return f"{RESULT_SET} in ({','.join(sorted(set(prefixes)))})"


def complete(
    configmaps_found: Iterable[Mapping[str, Any]], prefixes: Iterable[str], clients: int
) -> bool:
    """Every client of every one of these steps reported (no document decoded)."""
    found = list(configmaps_found)
    return all(not configmaps.missing_clients(found, prefix, clients) for prefix in prefixes)
