"""Built objects as the golden files and the tests' text checks hold them."""

from __future__ import annotations

from typing import Any

import yaml


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """One multi-document YAML; same objects, same bytes (keys sorted, no flow style)."""
    return yaml.safe_dump_all(objects, sort_keys=True, default_flow_style=False, width=120)
