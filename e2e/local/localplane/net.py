"""Loopback ports that do not collide when two suites run at once."""

from __future__ import annotations

import random
import socket
import time
from pathlib import Path

# Ports the kernel hands out as ephemeral ones (`bind(0)`, and the source port of every outgoing
# connection) can be taken by any client between our pick and the server's bind: CI once lost a
# kube-apiserver that way. Listen ports are therefore drawn below that range, where only other
# listeners compete, and each is handed out once per process.
_FALLBACK_EPHEMERAL = (32768, 60999)
_LOWEST = 10000
_handed: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return _FALLBACK_EPHEMERAL


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on, outside the kernel's ephemeral range when there is room."""
    lo, _ = _ephemeral_range()
    if lo - _LOWEST >= 1000:
        for _ in range(200):
            port = random.randint(_LOWEST, lo - 1)
            if port not in _handed and _bindable(host, port):
                _handed.add(port)
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, host: str = "127.0.0.1", timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s") from None
            time.sleep(0.05)
