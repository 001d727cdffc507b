"""Unit tier: the full object list of the reference clusters, byte for byte.

Regenerate after an intended change, then review the diff:
    UPDATE_GOLDEN=1 .venv/bin/pytest operator/tests/unit/mongocluster/test_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from cluster_fixtures import COLOCATED, DEDICATED, REPLICA_SET, SHARDED, STANDALONE, build
from rendered import to_yaml

from mongobench.mongocluster.build.platform import PRESETS

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).parent / "golden"

CASES: dict[str, tuple[dict[str, Any], str]] = {
    "replicaset-3.yaml": (REPLICA_SET, "kind"),
    "sharded-2x3-cfg3-mongos2.yaml": (SHARDED, "eks"),
    "sharded-3x1-colocated.yaml": (COLOCATED, "kind"),
    "sharded-2x3-dedicated-per-role.yaml": (DEDICATED, "eks"),
    "standalone.yaml": (STANDALONE, "kind"),
}


@pytest.mark.parametrize("filename", sorted(CASES))
def test_matches_golden(filename: str) -> None:
    spec, preset = CASES[filename]
    rendered = to_yaml(build(spec, PRESETS[preset]))
    path = GOLDEN / filename
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(rendered)
    assert path.read_text() == rendered, f"{filename} changed; see module docstring to regenerate"


def test_same_input_gives_identical_bytes() -> None:
    reordered = dict(reversed(list(SHARDED.items())))
    assert to_yaml(build(SHARDED)) == to_yaml(build(SHARDED)) == to_yaml(build(reordered))
