"""Fixtures of the runner tests: FerretDB on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def ferretdb() -> Iterator[Any]:
    from localplane.ferretdb import running_ferretdb

    with running_ferretdb() as server:
        yield server
