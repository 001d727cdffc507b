"""Unit tier: the budget of MongoDB clients open at once (mongo.budget) through real Connectors
and real pymongo clients. Nothing listens on the ports used: a client the budget closed refuses
to run at once (pymongo's InvalidOperation), an open one looks for its server and times out."""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import InvalidOperation, ServerSelectionTimeoutError

from mongobench.config import OperatorConfig
from mongobench.mongo.budget import ClientBudget
from mongobench.mongo.connect import Connector
from mongobench.mongo.model import Credentials
from mongobench.mongo.pool import AdminPool

pytestmark = pytest.mark.unit


def closed(client: Any) -> bool:
    """What a user of the client sees: a closed client refuses, an open one tries."""
    try:
        client.admin.command("ping")
    except InvalidOperation:
        return True
    except ServerSelectionTimeoutError:
        return False
    raise AssertionError("nothing listens there: the command cannot succeed")


def connector(budget: ClientBudget) -> Connector:
    return Connector(
        Credentials("operator", "pw"),
        bootstrap_credentials=Credentials("__system", "key", "local"),
        budget=budget,
        timeout_seconds=0.05,
    )


def test_beyond_the_limit_the_least_recently_used_idle_client_is_closed_never_a_lent_one() -> None:
    budget = ClientBudget(2)
    c = connector(budget)
    with c.lend("127.0.0.1:1") as lent:
        first = c.client("127.0.0.1:2")
        second = c.client("127.0.0.1:3")  # three open: the lent one is older, but lent
        assert closed(first) and not closed(lent) and not closed(second)
        third = c.client("127.0.0.1:4", authenticate=False)
        assert closed(second) and not closed(lent) and not closed(third)
        assert budget.open_clients() == 2 and budget.lent_clients() == 1
    c.close()
    assert budget.open_clients() == 0


def test_a_closed_client_is_reopened_on_its_next_use() -> None:
    budget = ClientBudget(1)
    c = connector(budget)
    evicted = c.client("127.0.0.1:1", bootstrap=True)
    c.client("127.0.0.1:2", bootstrap=True)
    assert closed(evicted)
    with c.lend("127.0.0.1:1", bootstrap=True) as again:
        assert again is not evicted and not closed(again)
    assert budget.open_clients() == 1
    c.close()


def test_lent_clients_exceed_the_limit_until_they_are_returned() -> None:
    """Every handler thread may hold a client while it runs a command: none is closed under
    it; the first returned beyond the limit is closed then."""
    budget = ClientBudget(1)
    c = connector(budget)
    with c.lend("127.0.0.1:1") as outer:
        with c.lend("127.0.0.1:2") as inner:
            assert budget.open_clients() == 2
            assert not closed(outer) and not closed(inner)
        assert closed(inner) and not closed(outer)
    assert budget.open_clients() == 1 and not closed(outer)
    c.close()


def test_one_budget_bounds_every_clusters_handle() -> None:
    """The pool's budget is shared: a client of one cluster makes room by closing another's;
    a forgotten cluster's clients no longer count."""
    pool = AdminPool(clients=1)
    a, b = connector(pool.budget), connector(pool.budget)
    old = a.client("127.0.0.1:1")
    b.client("127.0.0.1:2")
    assert closed(old) and pool.budget.open_clients() == 1
    b.close()
    assert pool.budget.open_clients() == 0
    a.close()


def test_the_limit_is_a_setting_of_at_least_one() -> None:
    assert OperatorConfig.from_env({"MONGOBENCH_MONGO_CLIENTS": "8"}).mongo_clients == 8
    assert OperatorConfig.from_env({}).mongo_clients == 32
    with pytest.raises(SystemExit, match="MONGO_CLIENTS must be at least 1"):
        OperatorConfig.from_env({"MONGOBENCH_MONGO_CLIENTS": "0"})
    with pytest.raises(ValueError, match="at least one"):
        ClientBudget(0)
