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


# --- featureCompatibilityVersion across an upgrade --------------------------------------------


def test_an_fcv_left_behind_is_raised_on_the_old_binaries_before_the_next_major() -> None:
    # 6.0 -> 7.0 left FCV at 6.0 (spec unset); now 7.0 -> 8.0: 8.0 binaries refuse FCV 6.0.
    step = versions.fcv_before_roll(
        running="7.0.14", target="8.0.4", observed_fcv="6.0", wanted_fcv=None
    )
    assert (step.action, step.fcv) == ("raise", "7.0")
    assert "raised to 7.0 on the 7.0.14 binaries before 8.0.4" in step.reason
    # The same when the spec asks for the new FCV in the same edit: 7.0 first, 8.0 after.
    also = versions.fcv_before_roll(
        running="7.0.14", target="8.0.4", observed_fcv="6.0", wanted_fcv="8.0"
    )
    assert (also.action, also.fcv) == ("raise", "7.0")


@pytest.mark.parametrize(
    ("running", "target", "observed"),
    [
        ("7.0.14", "8.0.4", "7.0"),  # already at the running series
        ("7.0.12", "7.0.14", "6.0"),  # a patch release: the series does not move
        ("8.0.4", "8.2.1", "8.0"),  # a minor series of the same major, FCV right
    ],
)
def test_nothing_to_do_before_a_roll_that_does_not_need_it(
    running: str, target: str, observed: str
) -> None:
    step = versions.fcv_before_roll(
        running=running, target=target, observed_fcv=observed, wanted_fcv=None
    )
    assert step.action == "none"


def test_the_5_0_fcv_command_has_no_confirm_and_7_0_needs_it_when_raising_before_a_roll() -> None:
    # The command goes to the running binaries: their form, not the target's.
    assert versions.capabilities("6.0.20").fcv_command("6.0") == {
        "setFeatureCompatibilityVersion": "6.0"
    }
    assert versions.capabilities("7.0.14").fcv_command("7.0")["confirm"] is True


@pytest.mark.parametrize(
    ("running", "target", "why"),
    [
        ("6.0.20", "8.0.4", "6.0 cannot be upgraded to 8.0 in one step"),  # skips 7.0
        ("7.0.14", "8.2.1", "7.0 cannot be upgraded to 8.2 in one step"),  # skips 8.0
    ],
)
def test_a_skipped_release_series_is_refused(running: str, target: str, why: str) -> None:
    step = versions.fcv_before_roll(
        running=running, target=target, observed_fcv=versions.series(running), wanted_fcv=None
    )
    assert step.action == "refuse" and why in step.reason
    assert f"({versions.series(running)} to {int(running[0]) + 1}.0 first)" in step.reason


def test_an_fcv_the_spec_pins_below_the_running_series_refuses_the_roll() -> None:
    step = versions.fcv_before_roll(
        running="7.0.14", target="8.0.4", observed_fcv="6.0", wanted_fcv="6.0"
    )
    assert step.action == "refuse"
    assert "featureCompatibilityVersion is 6.0 in the spec" in step.reason


def test_after_the_roll_the_spec_decides_and_unset_keeps_mongodbs_default() -> None:
    assert versions.fcv_after_roll(wanted_fcv="8.0", observed_fcv="7.0") == "8.0"
    assert versions.fcv_after_roll(wanted_fcv="8.0", observed_fcv="8.0") is None
    # Unset: the FCV stays at the series before the upgrade (a downgrade stays possible).
    assert versions.fcv_after_roll(wanted_fcv=None, observed_fcv="7.0") is None
