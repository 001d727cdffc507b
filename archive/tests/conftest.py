"""Fixtures of the archive package's tests: the real S3 server of localplane (moto on loopback)."""

from localplane.pytest_plugin import s3server  # noqa: F401  (pytest finds fixtures by name)
