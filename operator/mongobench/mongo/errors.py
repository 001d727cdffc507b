"""Every failure of a MongoDB administration step, classified for the caller.

A handler needs exactly two answers: retry later (``TransientMongoError``: the member is not yet
reachable, there is no primary, an election or reconfig is in progress) or stop and tell the user
(``PermanentMongoError``: a condition carrying the server's code and message plus an Event).
Messages name the operation and the host, never a password or a URI with credentials.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mongobench.mongo import driver

if TYPE_CHECKING:
    from mongobench.mongo.driver import PyMongoError

# Server error codes the module refers to by name (src/mongo/base/error_codes.yml).
AUTHENTICATION_FAILED = 18
UNAUTHORIZED = 13
ILLEGAL_OPERATION = 20
ALREADY_INITIALIZED = 23
SHARD_NOT_FOUND = 70
NODE_NOT_FOUND = 74
INVALID_REPLICA_SET_CONFIG = 93
NOT_YET_INITIALIZED = 94
NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE = 103
CONFLICTING_OPERATION_IN_PROGRESS = 117
NAMESPACE_NOT_FOUND = 26
NAMESPACE_EXISTS = 48
NAMESPACE_NOT_SHARDED = 118
DUPLICATE_KEY = 11000
USER_NOT_FOUND = 11
USER_ALREADY_EXISTS = 51003
NOT_WRITABLE_PRIMARY = 10107
NOT_PRIMARY_NO_SECONDARY_OK = 13435
NOT_PRIMARY_OR_SECONDARY = 13436

# Codes that mean "the set is between states; the same request will succeed later".
TRANSIENT_CODES: frozenset[int] = frozenset(
    {
        6,  # HostUnreachable
        7,  # HostNotFound
        NODE_NOT_FOUND,  # initiate/reconfig quorum check: a member is not up yet
        46,  # LockBusy
        50,  # MaxTimeMSExpired
        89,  # NetworkTimeout
        91,  # ShutdownInProgress
        109,  # ConfigurationInProgress
        CONFLICTING_OPERATION_IN_PROGRESS,  # e.g. another shard is draining
        133,  # FailedToSatisfyReadPreference
        189,  # PrimarySteppedDown
        202,  # NetworkInterfaceExceededTimeLimit
        216,  # ElectionInProgress
        262,  # ExceededTimeLimit
        308,  # CurrentConfigNotCommittedYet
        NOT_WRITABLE_PRIMARY,
        11600,  # InterruptedAtShutdown
        11602,  # InterruptedDueToReplStateChange
        NOT_PRIMARY_NO_SECONDARY_OK,
        NOT_PRIMARY_OR_SECONDARY,
    }
)


class MongoAdminError(Exception):
    """A failed administration step: the operation, the host and the server's own words."""

    def __init__(
        self,
        operation: str,
        host: str,
        message: str,
        *,
        code: int | None = None,
        code_name: str | None = None,
    ) -> None:
        self.operation = operation
        self.host = host
        self.message = message
        self.code = code
        self.code_name = code_name
        super().__init__(str(self))

    def __str__(self) -> str:
        code = ""
        if self.code is not None:
            code = f" (code {self.code}{' ' + self.code_name if self.code_name else ''})"
        return f"{self.operation} on {self.host} failed{code}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


class TransientMongoError(MongoAdminError):
    """Back off and call again: the set is still converging."""


class PermanentMongoError(MongoAdminError):
    """Retrying will not help: surface as a condition with the server's message and an Event."""


class HostUnresolvable(PermanentMongoError):
    """The operator cannot map a member's DNS name to an address it can reach."""

    def __init__(self, host: str, hint: str) -> None:
        super().__init__("resolve", host, hint)


def classify(exc: PyMongoError, operation: str, host: str) -> MongoAdminError:
    """Turn a pymongo exception into Transient or Permanent, keeping the server's code/message.

    Only ``OperationFailure.details`` (the server's reply) and the exception text are used; the
    command document (which may hold a password) is never part of either.
    """
    if isinstance(exc, driver.OperationFailure):
        details = exc.details or {}
        message = str(details.get("errmsg") or exc)
        code = exc.code
        code_name = details.get("codeName")
        labels = details.get("errorLabels") or []
        transient = (code in TRANSIENT_CODES) or "RetryableWriteError" in labels
        if isinstance(exc, driver.ExecutionTimeout):
            transient = True
        cls: type[MongoAdminError] = TransientMongoError if transient else PermanentMongoError
        return cls(operation, host, message, code=code, code_name=code_name)
    if isinstance(exc, driver.NotPrimaryError) and isinstance(exc.details, Mapping):
        # pymongo raises "not primary"/"node is recovering" replies as connection failures; the
        # server's code and message still matter to the condition.
        return TransientMongoError(
            operation,
            host,
            str(exc.details.get("errmsg") or _first_line(exc)),
            code=exc.details.get("code"),
            code_name=exc.details.get("codeName"),
        )
    if isinstance(
        exc,
        (
            driver.ServerSelectionTimeoutError,
            driver.AutoReconnect,
            driver.NetworkTimeout,
            driver.ConnectionFailure,
            driver.WaitQueueTimeoutError,
        ),
    ):
        return TransientMongoError(operation, host, f"not reachable: {_first_line(exc)}")
    if isinstance(exc, driver.ConfigurationError):
        return PermanentMongoError(operation, host, _first_line(exc))
    return PermanentMongoError(operation, host, _first_line(exc))


def _first_line(exc: BaseException) -> str:
    # ServerSelectionTimeoutError appends a multi-line topology description; the first line says
    # what failed, the rest is noise in a Kubernetes condition.
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__
