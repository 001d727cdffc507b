"""How the operator hears that kopf's peering paused or resumed it, so that its own scheduler
(runtime.ticker and runtime.wakeups, owned by mongobench.state) stops and starts with kopf's
watches.

Why: with several replicas (the Helm chart, the EKS overlay, any rolling update) kopf pauses all
but the highest-priority one: it closes their watches and stops its own timers and daemons. The
ticker and the wake-up queue replaced kopf's timers, so nothing stopped them: a paused replica
kept reading MongoClusters and StatefulSets beside the active one (issue 23).

kopf 1.45.2 has no public hook for the pause. It lives in one ToggleSet (`operator_paused`) that
kopf.spawn_tasks creates and hands to its own root tasks, among them
`kopf._core.engines.daemons.daemon_killer`: kopf's reaction to the pause for its timers, the
very thing the ticker stands in for. `relayed` puts a wrapper in that function's place for the
time of kopf.run: the wrapper follows the same ToggleSet into a PauseRelay, then runs kopf's
daemon killer unchanged. Private, so kept here alone; operator/tests/unit/test_peering_relay.py
fails when kopf stops handing the ToggleSet to its daemon killer.

Ordering: the relay and kopf's watchers wait on the same ToggleSet, so both wake with one notify;
the relay resumes the scheduler in its next step, with no I/O in between, while a watcher first
lists its resources over HTTP. So the replayed events kopf feeds the handlers after a resume
find the scheduler running again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from kopf._cogs.aiokits import aiotoggles
from kopf._core.engines import daemons

log = logging.getLogger(__name__)

# How often the relay looks whether the work running when the pause came has ended (for its log).
IDLE_POLL = 0.1  # seconds


class Pausable(Protocol):
    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def busy(self) -> bool:
        """Whether work started before the pause still runs."""
        ...


class PauseRelay:
    """Whether peering has paused the operator, passed on to the subscribers (the operator's
    state). Thread-safe: set from kopf's event loop, subscribed from a startup handler."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paused = False
        self._targets: list[Pausable] = []

    @property
    def paused(self) -> bool:
        with self._lock:
            return self._paused

    def subscribe(self, target: Pausable) -> None:
        """`target` follows the pause from now on (paused at once if the operator is)."""
        with self._lock:
            self._targets.append(target)
            if self._paused:
                target.pause()

    def set(self, paused: bool) -> bool:
        """Pause or resume every subscriber; False when nothing changed."""
        with self._lock:
            if paused == self._paused:
                return False
            self._paused = paused
            for target in self._targets:
                if paused:
                    target.pause()
                else:
                    target.resume()
            return True

    def busy(self) -> bool:
        with self._lock:
            return any(target.busy() for target in self._targets)


async def follow(paused: aiotoggles.ToggleSet, relay: PauseRelay) -> None:
    """Mirror kopf's pause into `relay` until cancelled."""
    while True:
        await paused.wait_for(True)
        if relay.set(True):
            log.info("paused by peering: ticks and queued work dropped")
            while relay.busy() and paused.is_on():
                await asyncio.sleep(IDLE_POLL)
            if paused.is_on():
                log.info("paused by peering: the operator's own running work has ended")
        await paused.wait_for(False)
        if relay.set(False):
            log.info("resumed by peering: ticks come back with the resources' events")


@contextlib.contextmanager
def relayed(relay: PauseRelay) -> Iterator[None]:
    """While inside, a kopf operator started in this process mirrors its pause into `relay`."""
    original = daemons.daemon_killer

    async def daemon_killer(*, operator_paused: aiotoggles.ToggleSet, **kwargs: Any) -> None:
        follower = asyncio.create_task(follow(operator_paused, relay), name="pause relay")
        try:
            await original(operator_paused=operator_paused, **kwargs)
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower

    daemons.daemon_killer = daemon_killer
    try:
        yield
    finally:
        daemons.daemon_killer = original
