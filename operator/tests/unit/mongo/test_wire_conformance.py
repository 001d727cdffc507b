"""Unit tier: the conformance table (e2e/local/README.md, "Conformance with MongoDB") covers
every command document the operator sends and every mongod/mongos flag it writes, and the wire
model's rules (localplane.wire_rules) are the table's. A command, field or flag the operator
gains fails here until the table says which MongoDB source it was checked against.

Commands are found by reading the mongo package's source (dict literals whose first key is a
command, and fields added later as ``cmd["field"] = ...``); flags by reading the pod builders'
string constants. Documents that are not commands (filters, members, index keys) are named in
NOT_COMMANDS, so a new command document cannot hide among them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from localplane import wire_rules

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[4]
MONGO = REPO / "operator" / "mongobench" / "mongo"
CLUSTER = REPO / "operator" / "mongobench" / "mongocluster"
README = REPO / "e2e" / "local" / "README.md"
FLAG_FILES = (
    "build/podspec.py",
    "build/statefulset.py",
    "build/mongos.py",
    "build/tls.py",
    "decide/tls_roll.py",
)

# First keys of dict literals in the mongo package that are parts of commands or replies, not
# commands: a member or config document, a user or role, a filter, pipeline stages, statuses.
NOT_COMMANDS = frozenset(
    {
        "_id",
        "host",
        "role",
        "user",
        "uuid",
        "min",
        "name",
        "$collStats",
        "$match",
        "$group",
        "$sum",
        "count",
        "dataBytes",
        "shard",
        "wiredTiger",
        "cache",
        "members",
        "set",
        "documents",
        "collection",  # a distribution's status
        "ns",
        "maximum bytes configured",  # serverStatus's cache figure, kept for provenance
        "directConnection",  # the connection's options (connect.py), not a command
        # profiler.py: system.profile's filter and sort, and what status keeps of an entry
        "ts",
        "$gte",
        "$lte",
        "$ne",
        "millis",
        "op",
        "planSummary",
        "storageStats",  # $collStats' stage option
        "shards",  # a collection's disk use in status
    }
)


def _key(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def operator_commands() -> dict[str, set[str]]:
    """command -> the fields the operator's source puts in it."""
    found: dict[str, set[str]] = {}
    for path in sorted(MONGO.glob("*.py")):
        tree = ast.parse(path.read_text())
        for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
            named: dict[str, str] = {}  # variable -> the command of the dict assigned to it
            for node in ast.walk(func):
                if isinstance(node, ast.Dict) and node.keys and _key(node.keys[0]):
                    keys = [_key(k) for k in node.keys]
                    first = keys[0]
                    assert first is not None
                    if first in NOT_COMMANDS:
                        continue
                    found.setdefault(first, set()).update(k for k in keys[1:] if k)
                targets = node.targets if isinstance(node, ast.Assign) else []
                if isinstance(node, ast.AnnAssign):
                    targets = [node.target]
                value = getattr(node, "value", None)
                for target in targets:
                    if isinstance(target, ast.Name) and isinstance(value, ast.Dict) and value.keys:
                        first = _key(value.keys[0])
                        if first and first not in NOT_COMMANDS:
                            named[target.id] = first
                    if (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id in named
                        and (field := _key(target.slice))  # type: ignore[arg-type]
                    ):
                        found[named[target.value.id]].add(field)
    return found


def operator_flags() -> set[str]:
    """Every --flag the mongod/mongos builders write (the exporter's own flags left out)."""
    flags: set[str] = set()
    for name in FLAG_FILES:
        tree = ast.parse((CLUSTER / name).read_text())
        skip = {
            id(n)
            for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef) and "exporter" in f.name
            for n in ast.walk(f)
        }
        for node in ast.walk(tree):
            value = _key(node) if isinstance(node, ast.Constant) else None
            if value and id(node) not in skip and re.fullmatch(r"--[A-Za-z_]+", value):
                flags.add(value)
    return flags


def _rows(heading: str) -> list[list[str]]:
    """The rows of the README table under ``heading``: cells without backticks."""
    text = README.read_text()
    section = text.split(heading, 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("| `"):
            rows.append([c.strip().replace("`", "") for c in line.strip().strip("|").split("|")])
    return rows


def table_commands() -> dict[str, set[str]]:
    rows = _rows("### Commands")
    return {r[0]: {f.strip() for f in r[1].split(",") if f.strip() not in ("", "-")} for r in rows}


def table_flags() -> set[str]:
    return {r[0] for r in _rows("### Flags")}


def test_every_command_and_field_the_operator_sends_is_in_the_table() -> None:
    table = table_commands()
    sent = operator_commands()
    missing = sorted(c for c in sent if c not in table)
    assert missing == [], f"commands missing from the conformance table: {missing}"
    fields = sorted(f"{c}.{f}" for c, fs in sent.items() for f in fs - table[c])
    assert fields == [], f"fields missing from the conformance table: {fields}"


def test_the_table_is_the_wire_models_rules() -> None:
    """Every row is a rule the model enforces, every rule a row; a strict command's fields the
    operator sends are ones the model (and the server) knows."""
    table = table_commands()
    assert sorted(table) == sorted(wire_rules.RULES)
    for name, fields in table.items():
        rule = wire_rules.RULES[name]
        if rule.fields is not None:
            assert fields <= rule.fields, (name, fields - rule.fields)
    for row in _rows("### Commands"):
        rule = wire_rules.RULES[row[0]]
        on = {p.strip() for p in row[2].split(",")}
        assert (on, row[3], row[4]) == (
            set(rule.on),
            f"{rule.since[0]}.{rule.since[1]}+",
            "no" if rule.fields is None else "yes",
        ), row[0]
    covered = f"Covered: {len(table)} commands, {len(table_flags())} flags."
    assert covered in README.read_text()


def test_every_flag_the_builders_write_is_in_the_table() -> None:
    flags = operator_flags()
    assert "--replSet" in flags and "--configdb" in flags  # the scan reads the builders
    assert sorted(flags - table_flags()) == []
    assert sorted(table_flags()) == sorted(wire_rules.FLAGS)


def test_the_scan_finds_the_commands_it_must() -> None:
    """The scan is not vacuous: commands built three different ways are found."""
    sent = operator_commands()
    assert {"presplitHashedZones", "numInitialChunks", "key"} <= sent["shardCollection"]
    assert "confirm" in sent["setFeatureCompatibilityVersion"]
    assert {"filter", "nameOnly"} <= sent["listCollections"]
