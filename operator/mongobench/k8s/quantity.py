"""Kubernetes resource quantities (e.g. 10Gi, 500M, 1.5) as numbers, for comparisons."""

from __future__ import annotations

import re

_SUFFIX = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "m": 10**-3,
}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([a-zA-Z]*)$")


def parse_quantity(text: str | int | float) -> float:
    if isinstance(text, int | float):
        return float(text)
    match = _QUANTITY.match(text.strip())
    if not match or match.group(2) not in _SUFFIX:
        raise ValueError(f"not a Kubernetes quantity: {text!r}")
    return float(match.group(1)) * _SUFFIX[match.group(2)]
