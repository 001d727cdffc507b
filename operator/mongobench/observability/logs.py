"""Structured JSON logs, with credentials redacted before any handler sees them."""

from __future__ import annotations

import logging
import re

import kopf

# mongodb://user:secret@host -> mongodb://user:***@host; also password=... in key/value text.
_URI_PASSWORD = re.compile(r"(mongodb(?:\+srv)?://[^:/@\s]+:)[^@\s]+@")
_KV_PASSWORD = re.compile(
    r"((?:password|passwd|pwd|keyfile)[\"']?\s*[:=]\s*[\"']?)[^\s,\"'}]+", re.I
)


def redact(text: str) -> str:
    return _KV_PASSWORD.sub(r"\1***", _URI_PASSWORD.sub(r"\1***@", text))


class RedactingFilter(logging.Filter):
    """Rewrites each record's message so no password or keyfile reaches the log stream."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def configure(json_logs: bool = True, verbose: bool = False) -> None:
    kopf.configure(
        verbose=verbose,
        log_format=kopf.LogFormat.JSON if json_logs else kopf.LogFormat.FULL,
        log_refkey="object",
    )
    root = logging.getLogger()
    for handler in root.handlers:
        handler.addFilter(RedactingFilter())
