"""The MongoDB releases mongobench supports and what differs between them: the one place that
switches on a server version (the CRD states the same range: crds/mongobench.io_mongoclusters.yaml
spec.version).

Callers ask for a release's `Capabilities` (``capabilities("7.0.14")``) rather than compare
version numbers themselves, so a difference is named once, here, and tested per release
(operator/tests/unit/mongo/test_versions.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# MAJOR.MINOR of the supported release series, oldest first. 8.x minors (8.2 ...) are on-premises
# releases from 8.0 on; 5.1-5.3, 6.1-6.3 and 7.1-7.3 were rapid releases without official images.
SUPPORTED = ("5.0", "6.0", "7.0", "8.0")
_SUPPORTED_RE = re.compile(r"^(?:[5-7]\.0|8\.[0-9]{1,4})\.[0-9]{1,6}$")

# The exact image tag per release series that the kind suite runs (hack/versions.env pins the
# same: MONGO_<MAJOR>_VERSION) and that the docs and samples name.
TESTED_IMAGES = {
    "5.0": "mongo:5.0.31",
    "6.0": "mongo:6.0.20",
    "7.0": "mongo:7.0.14",
    "8.0": "mongo:8.0.4",
}


class UnsupportedVersion(ValueError):
    """A server version outside the supported range."""


def major_minor(version: str) -> tuple[int, int]:
    major, minor, *_ = version.split(".")
    return int(major), int(minor)


def series(version: str) -> str:
    """The release series, MAJOR.MINOR, of a version or of an FCV."""
    major, minor = major_minor(version)
    return f"{major}.{minor}"


def is_supported(version: str) -> bool:
    """Whether a MAJOR.MINOR.PATCH version is one mongobench supports (the CRD's rule)."""
    return bool(_SUPPORTED_RE.match(version))


def unsupported_message(version: str) -> str:
    # The CRD's admission message says the same (spec.version's x-kubernetes-validations).
    return (
        f"MongoDB {version} is outside the supported range: use a 5.0, 6.0, 7.0 or 8.x release "
        f"(MAJOR.MINOR.PATCH, e.g. 8.0.4)"
    )


@dataclass(frozen=True)
class Capabilities:
    """What the operator must do differently for one server release."""

    version: str  # MAJOR.MINOR.PATCH the binaries run
    # setFeatureCompatibilityVersion takes `confirm: true` (required from 7.0, in both
    # directions; an unknown field before, which the server rejects).
    fcv_needs_confirm: bool
    # moveRange (6.0+) can move any range; before, only moveChunk (whole chunks) exists.
    move_range: bool
    # shardCollection on a database not yet enabled for sharding: refused before 6.0, which
    # needs enableSharding first (harmless, and still accepted, from 6.0 on).
    enable_sharding_required: bool
    # numInitialChunks pre-splits an empty collection with a hashed key. From 7.2 (8.x) the
    # balancer spreads chunks itself and the option is no longer honoured: pre-split with
    # split/moveRange when an exact layout matters.
    num_initial_chunks: bool
    # rotateCertificates (5.0+) reloads the TLS certificate and CA files without a restart;
    # before, a renewed certificate takes a rolling restart (mongocluster.decide.tls_renewal).
    rotate_certificates: bool = True

    @property
    def series(self) -> str:
        major, minor = major_minor(self.version)
        return f"{major}.{minor}"

    def fcv_command(self, fcv: str) -> dict[str, object]:
        """setFeatureCompatibilityVersion as these binaries accept it (upgrade or downgrade)."""
        cmd: dict[str, object] = {"setFeatureCompatibilityVersion": fcv}
        if self.fcv_needs_confirm:
            cmd["confirm"] = True
        return cmd


def capabilities(version: str) -> Capabilities:
    """A supported release's capabilities; UnsupportedVersion names the range otherwise."""
    if not is_supported(version):
        raise UnsupportedVersion(unsupported_message(version))
    mm = major_minor(version)
    return Capabilities(
        version=version,
        fcv_needs_confirm=mm >= (7, 0),
        move_range=mm >= (6, 0),
        enable_sharding_required=mm < (6, 0),
        num_initial_chunks=mm < (7, 2),
        rotate_certificates=mm >= (5, 0),
    )


# --- featureCompatibilityVersion across an upgrade (MongoDB's documented procedure) -----------


def upgrade_problem(running: str, target: str) -> str | None:
    """Why binaries of ``target`` cannot replace those of ``running`` in one roll; None when
    they can (or when nothing moves, or for a downgrade, which admission refuses). MongoDB
    upgrades one release series at a time: into the next major only at its first series
    (7.0 to 8.0, then 8.0 to 8.2). The CRD's rules on spec.version say the same."""
    (rm, rn), (tm, tn) = major_minor(running), major_minor(target)
    if (tm, tn) <= (rm, rn):
        return None
    if tm - rm > 1 or (tm > rm and tn != 0):
        return (
            f"MongoDB {series(running)} cannot be upgraded to {series(target)} in one step: "
            f"one release series at a time ({series(running)} to {rm + 1}.0 first)"
        )
    return None


@dataclass(frozen=True)
class FcvStep:
    """What the featureCompatibilityVersion needs before the binaries move to another series."""

    action: Literal["none", "raise", "refuse"]
    fcv: str | None = None  # the FCV to set (raise), on the running binaries
    reason: str = ""


def fcv_before_roll(
    *, running: str, target: str, observed_fcv: str, wanted_fcv: str | None
) -> FcvStep:
    """The FCV step before the first member gets the ``target`` binaries (pure).

    Binaries of series N+1 start only with the FCV at N, the series they replace. An FCV left
    behind by an earlier upgrade (spec.featureCompatibilityVersion unset: MongoDB keeps the old
    one) is raised to N on the N binaries first. An FCV the spec pins below N is the user's: the
    roll is refused instead, as admission refuses it where its rules can see it.
    """
    problem = upgrade_problem(running, target)
    if problem is not None:
        return FcvStep("refuse", reason=problem)
    now = series(running)
    if major_minor(target) <= major_minor(running) or series(observed_fcv) == now:
        return FcvStep("none")
    if major_minor(observed_fcv) > major_minor(running):
        return FcvStep("none")  # not a state MongoDB allows: nothing this step can mend
    if wanted_fcv is not None and major_minor(wanted_fcv) < major_minor(running):
        return FcvStep(
            "refuse",
            reason=(
                f"featureCompatibilityVersion is {wanted_fcv} in the spec: the {series(target)} "
                f"binaries need it at {now} first (raise it, then change version)"
            ),
        )
    return FcvStep(
        "raise",
        fcv=now,
        reason=(
            f"featureCompatibilityVersion {observed_fcv} raised to {now} on the {running} "
            f"binaries before {target} replaces them"
        ),
    )


def fcv_after_roll(*, wanted_fcv: str | None, observed_fcv: str | None) -> str | None:
    """The FCV to set once every member runs the spec's binaries (pure): the spec's when it
    names one that is not there yet. Unset, none: the operator's policy is MongoDB's own, the
    FCV stays at the series before the upgrade, so the binaries can still be downgraded; the
    next upgrade raises it first (fcv_before_roll)."""
    if wanted_fcv is None or wanted_fcv == observed_fcv:
        return None
    return wanted_fcv
