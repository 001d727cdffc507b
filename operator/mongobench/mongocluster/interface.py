"""What another controller may ask of a MongoCluster: the one door from BenchmarkRun's side.

A run reads its cluster's layout (hosts, topology, Secret names), borrows the MongoDB
administration handle the cluster's reconciler uses, and learns which secret values must never
be stored; how the cluster derives them (its desired state, its Secrets, its TLS files) stays
behind this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mongobench.k8s.api import KubeApi
from mongobench.mongo.admin import MongoAdmin
from mongobench.mongo.model import FcvScope, ReplicaSetSpec
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.act import provision, reconcile, rolling
from mongobench.mongocluster.build.layout import ClusterLayout

# The keys of a cluster's Secrets that hold secrets: passwords, the keyfile, connection URIs.
SECRET_KEY = re.compile(r"password|keyfile|uri|secret|token", re.IGNORECASE)


@dataclass(frozen=True)
class Cluster:
    """A MongoCluster as its reconciler sees it now (its spec parsed, its platform pinned)."""

    kube: KubeApi
    desired: provision.Desired

    @classmethod
    def of(cls, kube: KubeApi, body: Mapping[str, Any]) -> Cluster:
        """SpecError when the spec does not parse; reads the nodes only before the cluster's
        status records its platform."""
        return cls(kube, provision.desired(kube, body, body.get("status") or {}))

    @property
    def layout(self) -> ClusterLayout:
        return self.desired.layout

    @contextmanager
    def administration(self, admins: AdminPool) -> Iterator[MongoAdmin]:
        """The cluster's MongoDB administration handle, lent by `admins` for the block (the
        reconciler's own, while the credentials stay the same)."""
        with reconcile.administration(self.kube, self.desired, admins) as (admin, _):
            yield admin

    def fcv_target(self) -> FcvScope | ReplicaSetSpec:
        """Where the cluster's featureCompatibilityVersion is read."""
        return rolling.fcv_target(self.layout)

    def secret_values(self) -> list[str]:
        """Every secret value the cluster has (its Secrets, and those the user named): values
        never to be stored. LookupError names a named Secret that does not exist."""
        layout = self.layout
        own = provision.cluster_secrets(self.kube, layout)
        names = [layout.admin_secret, layout.benchmark_secret, layout.operator_secret]
        named = provision.read_secrets(self.kube, layout, [layout.keyfile_secret, *names], own)
        values = [
            v
            for secret in (*own.values(), *named.values())
            for k, v in secret.items()
            if SECRET_KEY.search(k)  # not the usernames or database names beside them
        ]
        return sorted({v for v in values if v})
