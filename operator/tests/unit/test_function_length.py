"""Unit tier: no function of the operator is longer than 60 lines, from its `def` to its last
line (issue 38: one shape for every controller, short functions). Nested functions and methods
count on their own; decorators do not count.

A long function fails this test with its place and length: split it into named pieces.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mongobench

pytestmark = pytest.mark.unit

MAX_LINES = 60
PACKAGE = Path(mongobench.__file__).parent


def long_functions(source: str, path: str) -> list[str]:
    """`path:line name length` of each function in `source` over MAX_LINES lines."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_LINES:
                found.append(f"{path}:{node.lineno} {node.name} {length}")
    return sorted(found)


def test_no_function_of_the_operator_is_over_60_lines() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 50  # the package itself, not an empty folder
    found = [
        entry
        for module in modules
        for entry in long_functions(module.read_text(), str(module.relative_to(PACKAGE.parent)))
    ]
    assert not found, f"functions over {MAX_LINES} lines (split them):\n" + "\n".join(found)


def _function(name: str, lines: int, indent: str = "") -> str:
    """A function of exactly `lines` lines from its def."""
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 1))
    return f"{indent}def {name}() -> None:\n{body}"


def test_a_function_over_the_limit_is_named_with_its_place_and_length() -> None:
    source = (
        "@decorated\n"  # a decorator's line does not count
        + _function("fits", MAX_LINES)
        + "class Holder:\n"
        + _function("method", MAX_LINES + 1, indent="    ")
        + "async "
        + _function("outer", 3)
    )
    assert long_functions(source, "m.py") == [f"m.py:{MAX_LINES + 3} method {MAX_LINES + 1}"]


def test_a_long_nested_function_is_named_apart_from_its_outer_one() -> None:
    inner = _function("inner", MAX_LINES + 2, indent="    ")
    source = "def outer() -> None:\n" + inner + "    return None\n"
    assert long_functions(source, "m.py") == [
        f"m.py:1 outer {MAX_LINES + 4}",
        f"m.py:2 inner {MAX_LINES + 2}",
    ]
