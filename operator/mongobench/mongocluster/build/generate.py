"""Random secret values, made once by the reconciler when a Secret does not exist yet.

The only module here that is not pure: builders take these values as inputs and never call it.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass, field

# mongod accepts 6..1024 base64 characters; 756 random bytes encode to 1008.
KEYFILE_BYTES = 756
PASSWORD_BYTES = 32


@dataclass(frozen=True)
class GeneratedSecrets:
    """Fresh values; ``repr`` shows none of them, so one in a log line leaks nothing."""

    keyfile: str = field(repr=False)
    admin_password: str = field(repr=False)
    benchmark_password: str = field(repr=False)
    exporter_password: str = field(repr=False)
    operator_password: str = field(repr=False)


def new_password() -> str:
    # URL-safe alphabet: no quoting surprises in URIs, shells or YAML.
    return secrets.token_urlsafe(PASSWORD_BYTES)


def new_keyfile() -> str:
    return base64.b64encode(secrets.token_bytes(KEYFILE_BYTES)).decode("ascii")


def generate() -> GeneratedSecrets:
    return GeneratedSecrets(
        new_keyfile(), new_password(), new_password(), new_password(), new_password()
    )
