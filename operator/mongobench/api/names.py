"""Pure: which metadata.name a MongoCluster or BenchmarkRun may have, and why.

The operator derives child names from metadata.name (StatefulSets, Services, pod host names,
label values, Jobs, the client ServiceAccount). The CRDs refuse a name it could not use
(root-level CEL rules on create); these checks say the same for an object stored before those
rules existed, and a unit test keeps the two in step.
"""

from __future__ import annotations

import re

from mongobench.api.schema import SpecError

# A StatefulSet's pods carry the label `controller-revision-hash: <statefulset>-<10 chars>`,
# whose value may have 63 characters: longer StatefulSet names leave their pods uncreatable.
MAX_STATEFULSET_NAME = 52
MAX_DNS_LABEL = 63
MAX_SHARDS = 64  # spec.topology.sharded.shards maximum in the CRD
# The longest StatefulSet suffix per topology: <name>-rs0, the 64th shard's <name>-shard63, and
# a standalone's <name>-mongod.
REPLICA_SET_SUFFIX = "-rs0"
SHARD_SUFFIX = f"-shard{MAX_SHARDS - 1}"
STANDALONE_SUFFIX = "-mongod"
SUFFIXES = {
    "ReplicaSet": REPLICA_SET_SUFFIX,
    "Sharded": SHARD_SUFFIX,
    "Standalone": STANDALONE_SUFFIX,
}
MAX_MONGOCLUSTER_NAME = {
    topology: MAX_STATEFULSET_NAME - len(suffix) for topology, suffix in SUFFIXES.items()
}
# <run>-client names the run's ServiceAccount, Role and RoleBinding, cut at 63 characters.
CLIENT_SUFFIX = "-client"
MAX_BENCHMARKRUN_NAME = MAX_DNS_LABEL - len(CLIENT_SUFFIX)

DNS_1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS_1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def check_mongocluster_name(name: str, topology: str) -> None:
    """SpecError naming metadata.name when the cluster's children could not be created."""
    if not DNS_1035_LABEL.fullmatch(name):
        raise SpecError(
            f"metadata.name: {name!r} is not a DNS-1035 label (lowercase letters, digits and "
            "'-', starting with a letter, ending with a letter or digit): it prefixes the names "
            "of the cluster's Services and its members' host names"
        )
    longest = MAX_MONGOCLUSTER_NAME.get(topology, min(MAX_MONGOCLUSTER_NAME.values()))
    if len(name) > longest:
        suffix = SUFFIXES.get(topology, SHARD_SUFFIX)
        raise SpecError(
            f"metadata.name: {name!r} has {len(name)} characters, at most {longest} are allowed "
            f"with a {topology} topology: the StatefulSet <name>{suffix} must fit in "
            f"{MAX_STATEFULSET_NAME}, as its pods carry the label controller-revision-hash: "
            f"<statefulset>-<10-character hash>, at most {MAX_DNS_LABEL}"
        )


def check_benchmarkrun_name(name: str) -> None:
    """SpecError naming metadata.name when the run's Jobs or ServiceAccount could not exist."""
    if not DNS_1123_LABEL.fullmatch(name):
        raise SpecError(
            f"metadata.name: {name!r} is not a DNS-1123 label (lowercase letters, digits and "
            "'-', starting and ending with a letter or digit): it prefixes the names of the "
            "run's Jobs, whose pods take them as host names"
        )
    if len(name) > MAX_BENCHMARKRUN_NAME:
        raise SpecError(
            f"metadata.name: {name!r} has {len(name)} characters, at most "
            f"{MAX_BENCHMARKRUN_NAME} are allowed: the run's client ServiceAccount, Role and "
            f"RoleBinding <name>{CLIENT_SUFFIX} must fit in {MAX_DNS_LABEL}, and the name is the "
            "value of the label mongobench.io/run on its Jobs and pods"
        )
