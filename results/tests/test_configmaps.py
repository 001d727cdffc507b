"""Unit tier: a result document as ConfigMap parts (the format the runner's sink writes and the
operator and the CLI read back)."""

from __future__ import annotations

import pytest

from mongobench_results.configmaps import assemble, manifests, result_set, serialise, split_parts

pytestmark = pytest.mark.unit


def test_split_parts_respects_utf8_byte_limits() -> None:
    text = "é" * 10 + "a" * 5
    parts = split_parts(text, limit=7)
    assert "".join(parts) == text
    assert all(len(p.encode()) <= 7 for p in parts)


def test_a_client_result_belongs_to_the_set_of_its_step() -> None:
    assert result_set("r1-s3-run-a-c12") == "r1-s3-run-a"
    assert result_set("r1-c") == "r1-c"  # no index: its own set
    assert result_set("-c3") == "-c3"
    assert result_set("load-c0-c1") == "load-c0"


def test_parts_written_in_any_order_reassemble_and_a_missing_part_is_a_missing_client() -> None:
    docs = [{"client": {"index": i}, "blob": "x" * 3000} for i in range(2)]
    n = -(-len(serialise(docs[0]).encode()) // 1024)  # parts of at most 1024 bytes each
    written = [
        cm for i, d in enumerate(docs) for cm in manifests(d, "bench", f"s-c{i}", None, 1024)
    ]
    assert n == 3 and len(written) == 2 * n
    assert {cm["metadata"]["labels"]["mongobench.io/parts"] for cm in written} == {str(n)}
    got = assemble(list(reversed(written)), "s", 2)
    assert (got.documents, got.missing) == (docs, [])
    partial = assemble([cm for cm in written if cm["metadata"]["name"] != "s-c1-p2"], "s", 2)
    assert (partial.documents, partial.missing) == (docs[:1], [1])
