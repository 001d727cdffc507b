"""Fixtures of the cluster tier and the e2e suite (see localplane.pytest_plugin), one definition
for e2e/local/tests and e2e/suite so a session that runs both starts one plane and one
Prometheus.

Imported by name rather than via `pytest_plugins`: pytest refuses `pytest_plugins` in a conftest
below the rootdir when collection starts at the repo root (a bare `pytest`), which would break
every other suite's collection.
"""

from localplane.pytest_plugin import (  # noqa: F401  (pytest finds fixtures by name)
    bare_plane,
    kube_api,
    kubectl,
    make_plane,
    monitoring,
    namespace,
    plane,
    prometheus,
    prometheus_operator_crds,
    prometheus_server,
    pytest_collection_modifyitems,
    pytest_runtest_makereport,
    pytest_sessionstart,
    s3server,
)
