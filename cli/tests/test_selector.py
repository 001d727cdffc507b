"""Unit tier: `-l`, the label selector, parsed and matched as Kubernetes does (apimachinery's
labels.Parse semantics), and the `list` command selecting archived runs by their stored
metadata.labels (spec.labels through --spec-label)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from builders import benchmark_run

from mongobench_cli import export
from mongobench_cli.selector import Requirement, SelectorError, parse

pytestmark = pytest.mark.unit
MONGOBENCH = Path(sys.executable).parent / "mongobench"

LABELS = {"mongobench.io/experiment": "study", "platform": "eks", "tier": "gold"}


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        ("mongobench.io/experiment=study", True),
        ("mongobench.io/experiment==study", True),
        ("platform!=kind", True),
        ("platform!=eks", False),
        ("missing!=x", True),  # != selects objects without the key too, as Kubernetes
        ("platform in (kind, eks)", True),
        ("platform in (kind,magnum)", False),
        ("platform notin (kind,magnum)", True),
        ("missing notin (a)", True),
        ("missing in (a)", False),
        ("tier", True),
        ("missing", False),
        ("!missing", True),
        ("!tier", False),
        ("platform=eks,tier=gold", True),
        ("platform=eks, tier=silver", False),
        ("platform in (eks),!missing,tier", True),
        ("", True),
    ],
)
def test_selector_matches_like_kubernetes(text: str, selected: bool) -> None:
    assert parse(text).matches(LABELS) is selected


def test_selector_parses_every_operator_into_requirements() -> None:
    got = parse("a=1, b==2,c!=3,d in (y,x),e notin (z),f,!g")
    assert got.requirements == (
        Requirement("a", "=", ("1",)),
        Requirement("b", "=", ("2",)),
        Requirement("c", "!=", ("3",)),
        Requirement("d", "in", ("x", "y")),
        Requirement("e", "notin", ("z",)),
        Requirement("f", "exists"),
        Requirement("g", "!"),
    )
    # What the API receives as labelSelector: canonical text it parses back to the same.
    assert str(got) == "a=1,b=2,c!=3,d in (x,y),e notin (z),f,!g"
    assert parse(str(got)) == got


def test_empty_value_and_no_labels() -> None:
    assert parse("a=").matches({"a": ""}) and not parse("a=").matches({"a": "x"})
    assert parse("a!=x").matches(None) and not parse("a").matches(None)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("platform>1", "unsupported operator '>'"),
        ("pl@tform=x", "invalid label key 'pl@tform'"),
        ("a in b", "expected '(' after a in"),
        ("a in (b", "expected ',' or ')'"),
        ("a in ()", "needs at least one value"),
        ("a notin (x,)", "expected a value"),
        ("a=b c", "expected ',' before 'c'"),
        ("a=b,", "trailing ','"),
        (",a", "expected a label key"),
        ("a=b=c", "expected ',' before '='"),
        ("-a=b", "invalid label key '-a'"),
        ("Bad_Prefix/a=b", "prefix must be a DNS subdomain"),
        ("a=" + "v" * 64, "invalid value"),
        ("a=b/c", "invalid value 'b/c'"),
        ("a exists", "unsupported operator 'exists'"),
        ("!", "expected a label key, found 'the end'"),
    ],
)
def test_selector_refuses_what_it_cannot_parse(text: str, said: str) -> None:
    with pytest.raises(SelectorError) as raised:
        parse(text)
    message = str(raised.value)
    assert said in message and message.startswith(f"label selector {text!r}: ")
    assert "\n" not in message


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One exported folder with three runs: metadata labels as the API would have stored them,
    spec labels as the comparison uses them."""
    root = tmp_path_factory.mktemp("labelled")
    made = []
    for name, metadata, spec in [
        ("study-kind", {"mongobench.io/experiment": "study", "platform": "kind"}, {"x": "1"}),
        ("study-eks", {"mongobench.io/experiment": "study", "platform": "eks"}, {"x": "2"}),
        ("other", {"platform": "eks"}, {"x": "1"}),
    ]:
        run = benchmark_run(name, labels=spec, seed=len(made) + 1)
        run.run["metadata"]["labels"] = metadata
        made.append(run)
    export.export(made, str(root))
    return root


def names(*args: str) -> set[str]:
    result = subprocess.run(
        [str(MONGOBENCH), "list", *args, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "KUBECONFIG": "/nonexistent/kubeconfig"},
    )
    assert result.returncode == 0, result.stderr
    return {r["name"] for r in json.loads(result.stdout)}


def test_list_selects_archived_runs_by_their_metadata_labels(archive: Path) -> None:
    assert names(str(archive), "-l", "mongobench.io/experiment=study") == {
        "study-kind",
        "study-eks",
    }
    assert names(str(archive), "-l", "platform!=kind") == {"study-eks", "other"}
    assert names(str(archive), "-l", "mongobench.io/experiment,platform in (kind)") == {
        "study-kind"
    }
    assert names(str(archive), "-l", "!mongobench.io/experiment") == {"other"}
    # spec.labels (the comparison labels) through their own flag
    assert names(str(archive), "--spec-label", "x=1") == {"study-kind", "other"}
    assert names(str(archive), "-l", "platform=eks", "--spec-label", "x notin (2)") == {"other"}


def test_list_refuses_a_bad_selector_in_one_line(archive: Path) -> None:
    result = subprocess.run(
        [str(MONGOBENCH), "list", str(archive), "-l", "platform>1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "KUBECONFIG": "/nonexistent/kubeconfig"},
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: label selector 'platform>1': unsupported operator '>' after 'platform' "
        "(use =, ==, !=, in (...), notin (...), KEY or !KEY)"
    ]
