"""Fixtures of the protocol tier: scripted wire peers on loopback (see mongo_wirepeer.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mongo_wirepeer import Cluster


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    try:
        yield c
    finally:
        c.close()
