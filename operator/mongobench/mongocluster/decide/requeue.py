"""Pure: when a MongoCluster's sync looks again, from the cluster's body as its own event delivers
it (handlers.mongocluster passes the Result to runtime.ticker; the body is let go), and when its
certificate work falls due (reconcile.SyncResult.recheck_in).

Rules for its ticks (first match wins):
  EVENTS_ONLY  gone or going
  WIRING       MongoDB steps wait (elections, catch-up, a member to remove) until Ready and
               Updated; or Ready with a credential rotation asked for or under way (its stages
               wait on clients), or a roll between TLS modes (its last step waits for plain
               clients to end): every 2 s, the first 1 s after it began; not before the
               first reconcile (the create handler runs), nor for a refused spec
  WAITING      pods are awaited (Pending, Provisioning, Degraded): their StatefulSets' events
               wake the sync, and a tick every 30 s only covers an event that never arrives or
               a watch that lost it
  EVENTS_ONLY  otherwise (Ready): child events notice changes; no ticks, no idle writes
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mongobench.controller import EVENTS_ONLY, Result, live, settled
from mongobench.k8s import conditions as cond
from mongobench.k8s.conditions import is_true
from mongobench.mongocluster.decide.rotation import under_way

WIRING = Result(2.0, first_after=1.0)
WAITING = Result(30.0, first_after=10.0)
# Phases that only a child's event ends (pods created or becoming ready): WAITING ticks.
WAITING_FOR_PODS = (cond.PHASE_PENDING, cond.PHASE_PROVISIONING, cond.PHASE_DEGRADED)
# How often provisioning looks again while a deleted predecessor's objects remain: their
# deletion by the garbage collector is no event of this cluster's.
PREDECESSOR_RETRY_SECONDS = 5.0


def ticks(body: Mapping[str, Any], *, deleted: bool) -> Result:
    """How often the cluster's sync ticks now (the rules above); `deleted`: its DELETED event."""
    if not live(body, deleted):
        return EVENTS_ONLY
    status = body.get("status") or {}
    rolling_tls = (status.get("tls") or {}).get("phase") == cond.TLS_ROLLING
    if wiring(body) or (
        status.get("phase") == cond.PHASE_READY and (under_way(body) or rolling_tls)
    ):
        return WIRING
    if waiting_for_pods(body):
        return WAITING
    return EVENTS_ONLY


def wiring(body: Mapping[str, Any]) -> bool:
    """Whether MongoDB steps wait until Ready and Updated: not while pods are awaited, never
    for a refused spec."""
    if settled(body, cond.READY):
        return False
    status = body.get("status") or {}
    phase = status.get("phase")
    if phase in (cond.PHASE_DELETING, None, *WAITING_FOR_PODS):
        return False
    return phase != cond.PHASE_READY or not is_true(status.get("conditions"), cond.UPDATED)


def waiting_for_pods(body: Mapping[str, Any]) -> bool:
    """Whether only a child's event ends the phase (pods created or becoming ready)."""
    phase = (body.get("status") or {}).get("phase")
    return not settled(body, cond.READY) and phase in WAITING_FOR_PODS


def certificates(recheck_in: float | None) -> Result:
    """One sync when certificate work no event announces falls due (the kubelet writing a
    renewed certificate's files, an issued certificate near its end): `recheck_in` seconds from
    the sync, rounded up, plus a second so it is due when it runs."""
    if recheck_in is None:
        return EVENTS_ONLY
    return Result(float(math.ceil(recheck_in)) + 1.0)
