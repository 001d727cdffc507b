"""Test helper: what kopf.event posts when work queued from a kopf handler runs elsewhere."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import kopf
from kopf._core.engines import posting

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "ns", "name": "p"}}


def posted(queue_work: Callable[[Callable[[], None]], object]) -> Any:
    """Inside a kopf handler (its posting variables set, in a running loop), `queue_work` is
    given work that posts an Event on POD; the Event as kopf's poster receives it."""

    def post() -> None:
        kopf.event(POD, type="Normal", reason="R", message="m")

    async def handler() -> Any:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        posting.event_queue_var.set(queue)
        posting.event_queue_loop_var.set(asyncio.get_running_loop())
        posting.settings_var.set(kopf.OperatorSettings())
        queue_work(post)
        return await asyncio.wait_for(queue.get(), 10)

    return asyncio.run(handler())
