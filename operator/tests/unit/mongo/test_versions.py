"""Unit tier: the supported MongoDB range and what the administration does differently per
release (mongobench.mongo.versions), for every release series in the range. That a real mongod
of each series accepts the commands is the kind suite's (e2e/suite, `version` parametrised over
hack/versions.env's MONGO_*_VERSION)."""

from __future__ import annotations

import pytest

from mongobench.api import MongoClusterSpec, SpecError
from mongobench.mongo import versions
from mongobench.mongo.versions import SUPPORTED, TESTED_IMAGES, capabilities

pytestmark = pytest.mark.unit

# One release per series, as the kind suite runs them; plus an 8.x minor release.
RELEASES = [TESTED_IMAGES[s].split(":", 1)[1] for s in SUPPORTED] + ["8.2.1"]


@pytest.mark.parametrize("version", RELEASES)
def test_every_release_in_the_range_is_accepted_by_the_spec(version: str) -> None:
    assert MongoClusterSpec.parse({"version": version}).version == version


@pytest.mark.parametrize("version", ["4.4.29", "4.2.0", "9.0.0", "7.1.0", "6.3.2", "5.2.1"])
def test_a_release_outside_the_range_is_refused_naming_the_field(version: str) -> None:
    with pytest.raises(SpecError, match=rf"^spec.version: MongoDB {version} is outside"):
        MongoClusterSpec.parse({"version": version})
    with pytest.raises(versions.UnsupportedVersion):
        capabilities(version)


@pytest.mark.parametrize(
    ("version", "fcv", "command"),
    [
        # 5.0 and 6.0 reject an unknown `confirm` field; 7.0+ require it, up and down alike.
        ("5.0.31", "5.0", {"setFeatureCompatibilityVersion": "5.0"}),
        ("5.0.31", "4.4", {"setFeatureCompatibilityVersion": "4.4"}),
        ("6.0.20", "6.0", {"setFeatureCompatibilityVersion": "6.0"}),
        ("7.0.14", "7.0", {"setFeatureCompatibilityVersion": "7.0", "confirm": True}),
        ("7.0.14", "6.0", {"setFeatureCompatibilityVersion": "6.0", "confirm": True}),
        ("8.0.4", "8.0", {"setFeatureCompatibilityVersion": "8.0", "confirm": True}),
        ("8.0.4", "7.0", {"setFeatureCompatibilityVersion": "7.0", "confirm": True}),
        ("8.2.1", "8.0", {"setFeatureCompatibilityVersion": "8.0", "confirm": True}),
    ],
)
def test_set_fcv_takes_confirm_by_the_binaries_not_the_target(
    version: str, fcv: str, command: dict[str, object]
) -> None:
    assert capabilities(version).fcv_command(fcv) == command


@pytest.mark.parametrize(
    ("version", "move_range", "enable_sharding_required", "num_initial_chunks"),
    [
        ("5.0.31", False, True, True),
        ("6.0.20", True, False, True),
        ("7.0.14", True, False, True),
        ("8.0.4", True, False, False),  # numInitialChunks accepted but ignored from 7.2
        ("8.2.1", True, False, False),
    ],
)
def test_sharding_differences_per_release(
    version: str, move_range: bool, enable_sharding_required: bool, num_initial_chunks: bool
) -> None:
    caps = capabilities(version)
    assert (caps.move_range, caps.enable_sharding_required, caps.num_initial_chunks) == (
        move_range,
        enable_sharding_required,
        num_initial_chunks,
    )


def test_every_series_has_one_exact_tested_image_pinned_alike_for_kind() -> None:
    from localplane.tools import versions as pinned  # hack/versions.env

    env = pinned()
    for series in SUPPORTED:
        image = TESTED_IMAGES[series]
        assert versions.is_supported(image.split(":", 1)[1]), image
        key = "MONGO_" + series.replace(".", "_") + "_VERSION"
        assert f"mongo:{env[key]}" == image
