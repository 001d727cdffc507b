"""Unit tier: provenance compared between configurations (mongobench_results.provenance): which
facts of what ran differ, and which of those change results by themselves."""

from __future__ import annotations

from typing import Any

import pytest

from mongobench_results import provenance as p

pytestmark = pytest.mark.unit


def document(
    fcv: str = "7.0", instance_type: str = "m5.xlarge", kernel: str = "6.1"
) -> dict[str, Any]:
    return {
        "apiVersion": p.API_VERSION,
        "servers": [{"buildInfo": {"version": "7.0.14", "gitVersion": "ce59"}}],
        "featureCompatibilityVersion": fcv,
        "storage": {"engine": "wiredTiger", "cacheBytesInEffect": 268435456},
        "nodes": [{"name": "n1", "instanceType": instance_type, "kernelVersion": kernel}],
        "containers": [
            {"role": "database", "image": "mongo:7.0.14", "imageID": "docker.io/mongo@sha256:aa"}
        ],
        "kubernetes": {"gitVersion": "v1.32.2"},
    }


def test_same_provenance_differs_in_nothing() -> None:
    assert p.differences({"base": [document()], "other": [document(), document()]}, "base") == []


def test_fcv_and_instance_type_are_flagged_a_kernel_is_only_listed() -> None:
    got = p.differences(
        {
            "base": [document()],
            "new": [document(fcv="6.0", instance_type="m6i.xlarge", kernel="6.8")],
        },
        "base",
    )
    assert [(d.field, d.baseline, d.other, d.changes_results) for d in got] == [
        ("featureCompatibilityVersion", ("7.0",), ("6.0",), True),
        ("instanceTypes", ("m5.xlarge",), ("m6i.xlarge",), True),
        ("kernels", ("6.1",), ("6.8",), False),
    ]
    assert got[0].note("base") == (
        "new: feature compatibility version 6.0 vs 7.0 in base (changes results)"
    )
    assert got[2].as_json()["changesResults"] is False


def test_a_status_summary_compares_with_a_document_on_the_fields_both_know() -> None:
    summary = p.summary(document(instance_type="c5.xlarge"))
    assert summary["imageDigests"] == 1 and summary["instanceTypes"] == ["c5.xlarge"]
    got = p.differences({"base": [document()], "live": [summary]}, "base")
    assert [d.field for d in got] == ["instanceTypes"]  # kernels: the summary does not keep them
    assert p.differences({"base": [document()], "unknown": [None]}, "base") == []


def test_digests_not_tags_tell_database_images_apart() -> None:
    a, b = document(), document()
    b["containers"][0]["imageID"] = "docker.io/mongo@sha256:bb"  # same tag, rebuilt image
    [d] = p.differences({"a": [a], "b": [b]}, "a")
    assert (d.field, d.baseline, d.other) == (
        "databaseImages",
        ("mongo:7.0.14@sha256:aa",),
        ("mongo:7.0.14@sha256:bb",),
    )
