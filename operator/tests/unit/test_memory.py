"""Unit tier: the operator process's memory settings (mongobench.memory)."""

from __future__ import annotations

import asyncio
import linecache
import ssl
import subprocess
import sys
import traceback
from asyncio import sslproto

import pytest

from mongobench import memory

pytestmark = pytest.mark.unit


def test_tls_connections_opened_afterwards_read_through_the_smaller_buffer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sslproto.SSLProtocol, "max_size", sslproto.SSLProtocol.max_size)
    loop = asyncio.new_event_loop()
    try:
        context = ssl.create_default_context()

        def buffer() -> int:
            proto = sslproto.SSLProtocol(loop, asyncio.Protocol(), context, None)
            return len(proto._ssl_buffer)

        assert buffer() == 256 * 1024  # asyncio's own, for every connection
        memory.smaller_tls_read_buffers()
        assert buffer() == memory.TLS_READ_BUFFER
    finally:
        loop.close()


def test_trim_returns_freed_memory_to_the_system() -> None:
    """In a fresh interpreter: 40 MiB of 2 KiB blocks (glibc's, not Python's small-object
    allocator) freed except one block in 64 (so the heap cannot simply shrink from its top)."""
    code = (
        "from mongobench import memory\n"
        "blocks = [bytes(2048) for _ in range(20_000)]\n"
        "kept = blocks[::64]\n"
        "del blocks\n"
        "print(memory.trim())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_trimming_repeats_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(memory, "trim", lambda: calls.append(1) or True)

    async def run() -> None:
        assert memory.trim_periodically(asyncio.get_running_loop(), every=0.01)
        while len(calls) < 3:
            await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(run(), timeout=10))
    assert len(calls) >= 3


def test_trim_forgets_the_source_lines_a_logged_traceback_cached() -> None:
    """Logging an exception with its traceback reads every file it passed through into linecache,
    which keeps them until cleared."""
    try:
        raise RuntimeError("logged")
    except RuntimeError:
        traceback.format_exc()
    assert __file__ in linecache.cache  # this file: the traceback's one frame
    memory.trim()
    assert __file__ not in linecache.cache
