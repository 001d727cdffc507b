"""The one error of the archive package: its message is a single user-facing line."""

from __future__ import annotations


class ArchiveError(Exception):
    """An archive that cannot be read or written: bad URL, missing bucket or folder, refused
    credentials, unreachable endpoint, no manifest, an object that differs from its manifest.
    `str(e)` is one line, fit to print after the program's name; never a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))
