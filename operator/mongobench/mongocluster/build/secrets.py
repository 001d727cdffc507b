"""Secret manifests: keyfile, admin, operator, benchmark and exporter users, and the URI.

Values are inputs (generated once by ``generate``, then read back from the Secrets); these
functions only shape them. ``data`` (base64) rather than ``stringData``: stringData is
write-only, so a server-side apply of it never matches what the server returns.
"""

from __future__ import annotations

import base64
from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.generate import GeneratedSecrets
from mongobench.mongocluster.build.layout import ClusterLayout, connection_uri
from mongobench.mongocluster.build.podspec import object_meta

ADMIN_USERNAME = "mongobench-admin"
EXPORTER_USERNAME = "mongobench-exporter"
# The operator's own MongoDB identity (clusterAdmin, see mongo.model.cluster_admin_user), apart
# from the admin user people log in with: rotating or supplying that one never locks it out.
OPERATOR_USERNAME = "mongobench-operator"


def secret(name: str, layout: ClusterLayout, values: dict[str, str]) -> dict[str, Any]:
    data = {k: base64.b64encode(v.encode()).decode("ascii") for k, v in values.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": object_meta(name, layout.namespace, lbl.cluster_labels(layout.name)),
        "type": "Opaque",
        "data": data,
    }


def keyfile_secret(layout: ClusterLayout, keyfile: str) -> dict[str, Any]:
    return secret(layout.keyfile_secret, layout, {"keyfile": keyfile})


def admin_secret(layout: ClusterLayout, password: str) -> dict[str, Any]:
    return secret(layout.admin_secret, layout, {"username": ADMIN_USERNAME, "password": password})


def benchmark_secret(
    spec: MongoClusterSpec, layout: ClusterLayout, password: str
) -> dict[str, Any]:
    values = {
        "username": spec.auth.benchmark_user,
        "password": password,
        "database": spec.auth.benchmark_database,
    }
    return secret(layout.benchmark_secret, layout, values)


def operator_secret(layout: ClusterLayout, password: str) -> dict[str, Any]:
    values = {"username": OPERATOR_USERNAME, "password": password}
    return secret(layout.operator_secret, layout, values)


def exporter_secret(layout: ClusterLayout, password: str) -> dict[str, Any]:
    values = {"username": EXPORTER_USERNAME, "password": password}
    return secret(layout.exporter_secret, layout, values)


def connection_secret(
    spec: MongoClusterSpec, layout: ClusterLayout, benchmark_password: str
) -> dict[str, Any]:
    """What clients and benchmark Jobs mount: the benchmark user's URI."""
    db = spec.auth.benchmark_database
    uri = connection_uri(
        layout, spec.auth.benchmark_user, benchmark_password, db, tls=spec.tls.operator_dials_tls
    )
    return secret(layout.connection_secret, layout, {"uri": uri})


def build_secrets(
    spec: MongoClusterSpec, layout: ClusterLayout, values: GeneratedSecrets
) -> list[dict[str, Any]]:
    """The Secrets the operator owns; referenced ones (auth.*SecretName) are the user's."""
    out = []
    if spec.auth.keyfile_secret_name is None:
        out.append(keyfile_secret(layout, values.keyfile))
    if spec.auth.admin_secret_name is None:
        out.append(admin_secret(layout, values.admin_password))
    out.append(operator_secret(layout, values.operator_password))
    out.append(benchmark_secret(spec, layout, values.benchmark_password))
    if spec.monitoring.exporter:
        out.append(exporter_secret(layout, values.exporter_password))
    out.append(connection_secret(spec, layout, values.benchmark_password))
    return out
