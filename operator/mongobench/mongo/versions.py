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
    # before, a renewed certificate takes a rolling restart (mongocluster.tls_renewal).
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
