"""The operator process's memory beyond its own objects: asyncio's TLS read buffers and the memory
glibc keeps after it was freed. (glibc's arenas are capped before any thread starts: __main__.py.)
Measured with make bench-memory (idle) and make bench-scale (peak)."""

from __future__ import annotations

import asyncio
import ctypes
import linecache
from asyncio import sslproto

# asyncio reads a TLS connection into a buffer of SSLProtocol.max_size bytes (256 KiB), zeroed
# at connect (so resident) and kept as long as the connection: kopf holds one connection per
# watch stream and one per request in flight. 32 KiB still holds two TLS records per read.
TLS_READ_BUFFER = 32 * 1024

# How often freed memory goes back to the system: a reconcile burst frees most of what it
# allocated, and glibc keeps the free pages (of its heap and of each arena) for reuse.
TRIM_SECONDS = 10.0


def smaller_tls_read_buffers(size: int = TLS_READ_BUFFER) -> None:
    """Every TLS connection opened from now on reads through a buffer of `size` bytes (the
    idle operator held 1.8 MiB of them for its 7 connections to the API server)."""
    sslproto.SSLProtocol.max_size = size


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None)
        libc.malloc_trim  # noqa: B018 - glibc only
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


def trim() -> bool:
    """Drop the source lines that logged tracebacks cached (linecache keeps every file a
    traceback passed through, for good: ~0.7 MiB under make bench-scale), then return the free
    pages of every malloc arena to the system (glibc's malloc_trim). False where malloc is not
    glibc's or nothing could be returned."""
    linecache.clearcache()
    return bool(_LIBC is not None and _LIBC.malloc_trim(0))


def trim_periodically(loop: asyncio.AbstractEventLoop, every: float = TRIM_SECONDS) -> bool:
    """Trim every `every` seconds on `loop`, the first time once start-up is over (a callback,
    not a task: it ends with the loop). False where there is nothing to call."""
    if _LIBC is None:
        return False

    def again() -> None:
        trim()
        loop.call_later(every, again)

    loop.call_later(every, again)
    return True
