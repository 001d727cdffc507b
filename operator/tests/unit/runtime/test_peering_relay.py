"""Unit tier: how the operator hears of kopf's peering pause (mongobench.runtime.peering). kopf has
no public hook, so the relay rides on a private one: kopf hands the ToggleSet that pauses its
watches to its daemon killer. The first test fails when kopf stops doing so (read it before
upgrading kopf); the others drive kopf's real daemon killer, wrapped, with a real ToggleSet, and
the operator's real state (ticker and wake-up queue) as the subscriber.

The cluster tier (e2e/local/tests/test_peering.py) proves the whole: two operator processes, the
paused one silent on the apiserver's audit log.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import logging
import textwrap
import threading
from collections.abc import Callable

import kopf
import pytest
from kopf._cogs.aiokits import aiotoggles
from kopf._core.engines import daemons
from kopf._core.reactor import inventory, running

from mongobench.k8s import client as kube
from mongobench.k8s.credentials import Credentials
from mongobench.runtime.peering import PauseRelay, relayed
from mongobench.state import OperatorState

pytestmark = pytest.mark.unit


def _keywords(call: ast.Call) -> dict[str, str]:
    return {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}


def test_kopf_hands_the_toggle_set_that_pauses_its_watches_to_its_daemon_killer() -> None:
    """What runtime.peering relies on, in kopf's own source: spawn_tasks creates one ToggleSet,
    gives it to the orchestrator (whose watchers pause on it) and to `daemons.daemon_killer`,
    looked up on the module when the operator starts (so the wrapper in its place is called)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(running.spawn_tasks)))
    assigned = {
        ast.unparse(node.targets[0]): ast.unparse(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and len(node.targets) == 1
    }
    assert assigned.get("operator_paused") == "aiotoggles.ToggleSet(any)"
    calls = {
        ast.unparse(node.func): _keywords(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    assert calls["daemons.daemon_killer"].get("operator_paused") == "operator_paused"
    assert calls["orchestration.orchestrator"].get("operator_paused") == "operator_paused"
    assert running.daemons is daemons
    parameter = inspect.signature(daemons.daemon_killer).parameters["operator_paused"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY


async def until_async(what: Callable[[], bool], seconds: float = 5) -> None:
    for _ in range(int(seconds / 0.01)):
        if what():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


def test_kopfs_pause_and_resume_reach_the_ticker_and_the_wake_ups(
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = OperatorState.create(kube.ApiClient(Credentials(server="http://127.0.0.1:9")))
    relay = PauseRelay()
    relay.subscribe(state)
    ticks: list[str] = []
    release = threading.Event()

    def slow() -> None:
        ticks.append("slow")
        release.wait(5)

    async def operator() -> None:
        paused = aiotoggles.ToggleSet(any)
        peer = await paused.make_toggle(False, name="a peer of higher priority")
        # As kopf.spawn_tasks calls it: through the module, with kopf's own arguments.
        killer = asyncio.create_task(
            daemons.daemon_killer(
                settings=kopf.OperatorSettings(),
                memories=inventory.ResourceMemories(),
                operator_paused=paused,
            )
        )
        state.ticker.schedule("run", True, 0.01, lambda: ticks.append("run"), first=0)
        state.ticker.schedule("slow", True, 0.01, slow, first=0)
        await until_async(lambda: "run" in ticks and "slow" in ticks)

        await peer.turn_to(True)  # kopf pauses: a peer of higher priority appeared
        await until_async(lambda: relay.paused)
        assert not len(state.ticker)
        state.wakeups.wake("run", lambda: ticks.append("woken while paused"))
        state.ticker.schedule("run", True, 0.01, lambda: ticks.append("scheduled while paused"))
        count = len(ticks)
        await asyncio.sleep(0.2)  # twenty intervals: nothing starts
        assert len(ticks) == count
        assert "the operator's own running work has ended" not in caplog.text  # "slow" still runs
        release.set()
        await until_async(lambda: "the operator's own running work has ended" in caplog.text)

        await peer.turn_to(False)  # the peer is gone: kopf resumes and replays the events
        await until_async(lambda: not relay.paused)
        state.ticker.schedule("run", True, 0.01, lambda: ticks.append("resumed"), first=0)
        await until_async(lambda: "resumed" in ticks)
        assert "woken while paused" not in ticks and "scheduled while paused" not in ticks

        killer.cancel()
        await asyncio.gather(killer, return_exceptions=True)

    try:
        with caplog.at_level(logging.INFO, logger="mongobench.runtime.peering"), relayed(relay):
            asyncio.run(operator())
    finally:
        release.set()
        state.close()
    assert "paused by peering: ticks and queued work dropped" in caplog.text
    assert "resumed by peering" in caplog.text
    assert daemons.daemon_killer.__module__ == "kopf._core.engines.daemons"  # put back


def test_a_state_subscribing_while_the_operator_is_paused_starts_paused() -> None:
    relay = PauseRelay()
    assert relay.set(True) and not relay.set(True)
    state = OperatorState.create(kube.ApiClient(Credentials(server="http://127.0.0.1:9")))
    try:
        relay.subscribe(state)
        state.ticker.schedule("run", True, 0.01, lambda: None, first=0)
        assert not len(state.ticker)
        assert relay.set(False)
        state.ticker.schedule("run", True, 0.01, lambda: None, first=0)
        assert len(state.ticker) == 1
    finally:
        state.close()
