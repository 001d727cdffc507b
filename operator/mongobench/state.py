"""The operator's process state: created once at start-up (main.configure puts it in kopf's
memo, which every handler receives), closed at shutdown. It owns what outlives one handler
call, so nothing of the kind lives in module globals:

- the Kubernetes API client, and the KubeApi over it that every controller is given (closed
  at shutdown);
- per-resource locks (one reconcile of a resource at a time);
- the rollout last seen of each child workload (a child's event that changes none of it wakes
  no sync);
- the wake-ups a child's event queues for its MongoCluster or BenchmarkRun (by key, coalesced,
  failed work retried with a per-key backoff);
- the ticker: which resources tick, how often, and their work (the timers, without bodies);
- the dependents: which BenchmarkRun waits on which MongoCluster, and what it saw of it, so the
  cluster's events wake the run;
  with the wake-ups, the operator's only triggers besides kopf's handlers, so `pause` and
  `resume` (kopf's peering, relayed by runtime.peering) stop and start all of the operator's own
  work, as kopf stops and starts its watches;
- the latest body of every MongoCluster, fed by its events (runtime.bodies): a BenchmarkRun reads
  its cluster from it (`run_kube`) instead of a GET on every advance; emptied on a pause;
- the MongoDB administration handles, one per cluster, replaced when the cluster's credentials
  change and closed when it is deleted, and the budget of MongoDB clients open at once.
"""

from __future__ import annotations

import os
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mongobench.config import OperatorConfig
from mongobench.k8s.api import KubeApi, KubeClient
from mongobench.k8s.client import ApiClient, new_api_client
from mongobench.k8s.rollout import SeenRollouts
from mongobench.mongo.budget import MONGO_CLIENTS
from mongobench.mongo.connect import resolver_from_env
from mongobench.mongo.pool import AdminPool
from mongobench.runtime.bodies import LatestBodies, WatchedReads
from mongobench.runtime.dependents import Dependents
from mongobench.runtime.locks import ResourceLocks
from mongobench.runtime.ticker import Ticker
from mongobench.runtime.wakeups import Backoff, Wakeups

if TYPE_CHECKING:
    from mongobench.benchmarkrun.act.data import ClusterData


@dataclass
class OperatorState:
    api: ApiClient
    kube: KubeApi
    locks: ResourceLocks
    admins: AdminPool
    rollouts: SeenRollouts
    wakeups: Wakeups
    ticker: Ticker
    dependents: Dependents
    clusters: LatestBodies = field(default_factory=LatestBodies)
    own_pool: ThreadPoolExecutor | None = field(default=None, repr=False)
    # What the operator was started with: handlers pass it on, nothing below reads a global.
    config: OperatorConfig = field(default_factory=OperatorConfig)

    @classmethod
    def create(
        cls,
        api: ApiClient | None = None,
        executor: Executor | None = None,
        retries: Backoff | None = None,
        mongo_clients: int = MONGO_CLIENTS,
        config: OperatorConfig | None = None,
    ) -> OperatorState:
        """`executor`: kopf's, for handler threads (a pool of one's own when not given);
        `retries`: how failed wake-ups and ticks are retried; `mongo_clients`: MongoDB clients
        open at once (mongo.budget)."""
        api = api or new_api_client()
        client = KubeClient(api)
        admins = AdminPool(resolver=resolver_from_env(os.environ), clients=mongo_clients)
        own: ThreadPoolExecutor | None = None  # shut down with the state
        if executor is None:
            executor = own = ThreadPoolExecutor(thread_name_prefix="wakeup")
        wakeups = Wakeups(executor, backoff=retries)
        return cls(
            api,
            client,
            ResourceLocks(),
            admins,
            SeenRollouts(),
            wakeups,
            Ticker(wakeups),
            Dependents(wakeups),
            LatestBodies(),
            own,
            config or OperatorConfig(),
        )

    @property
    def run_kube(self) -> KubeApi:
        """The API as a BenchmarkRun's controller reads it: its MongoCluster from the cluster
        events' bodies when they hold it (runtime.bodies), everything else from the apiserver."""
        return WatchedReads(self.kube, "MongoCluster", self.clusters)

    @property
    def cluster_data(self) -> ClusterData:
        """The MongoDB side of runs, through the clusters' handles (loaded with the first run:
        handlers/__init__.py)."""
        from mongobench.benchmarkrun.act.data import ClusterData  # noqa: PLC0415

        return ClusterData(self.kube, self.admins)

    def forget(self, kind: str, namespace: str, name: str) -> None:
        """A resource is gone: stop its ticks, its queued or retried work and what it follows,
        drop its lock and close its MongoDB clients."""
        self.ticker.stop((kind, namespace, name))
        self.dependents.forget((kind, namespace, name))
        if kind == "MongoCluster":
            self.clusters.gone((kind, namespace, name))
        self.wakeups.forget((kind, namespace, name))
        self.locks.forget(kind, namespace, name)
        if kind == "MongoCluster":
            self.admins.forget(namespace, name)

    def pause(self) -> None:
        """Peering paused the operator: drop every tick and all queued work; start none."""
        self.ticker.pause()
        self.dependents.pause()
        self.clusters.pause()
        self.wakeups.pause()

    def resume(self) -> None:
        """Peering resumed the operator: kopf replays the resources' events, which schedule
        their ticks and wake their work again."""
        self.wakeups.resume()
        self.ticker.resume()
        self.dependents.resume()
        self.clusters.resume()

    def busy(self) -> bool:
        """Whether work started before a pause still runs."""
        return not self.wakeups.idle(timeout=0)

    def close(self) -> None:
        self.ticker.close()
        self.wakeups.close()
        if self.own_pool is not None:
            self.own_pool.shutdown(wait=False, cancel_futures=True)
        # The API first: a sync still running would otherwise publish what the MongoDB clients
        # closed under it made it see (a Ready cluster flickered Initializing at every stop).
        self.api.close()
        self.admins.close()


def state_of(memo: Any) -> OperatorState:
    """The state main.configure put in kopf's memo (every handler gets a copy of it)."""
    state = getattr(memo, "state", None)
    if not isinstance(state, OperatorState):
        raise RuntimeError("the operator's state is missing: main.configure creates it")
    return state
