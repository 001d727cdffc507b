"""Pure: the verdict on one measured step (a trial), from what the operator already has.

Inputs: the step's merged result document (the clients' CPU time, their own steadiness
verdicts and cgroup throttling, errors, Little's law) and the step's resource profile from
Prometheus (status `cpu`: per node CPU with steal, the client nodes' busy share; `neighbours`:
CPU of containers that are not the benchmark's on its nodes, from cAdvisor). The thresholds are
the spec's `validity:` policy. The verdict's shape is mongobench_results.validity (the contract
with the CLI and compare).

Which checks are real where:
- client CPU vs its limit, the client's throttling, steadiness, errors, Little's law: from the
  clients' own documents: real wherever the clients run (a kubelet, or the local plane's
  executor, which puts each client container in a CPU cgroup with its limit as a kubelet does);
- steal and the client node's busy share: node-exporter, real on any node (steal is 0 on bare
  metal and on the local plane's host);
- neighbours: cAdvisor's per-container CPU on the step's nodes (a kubelet's; on the local plane,
  the harness kubelet's for the pods it runs); without any cAdvisor series the check is not
  made (status `neighbours.cadvisor` false).
Not checked: the throttling of the database's containers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from mongobench.api.benchmarkrun import BenchmarkRunSpec, ValidityPolicy
from mongobench.k8s.quantity import parse_quantity
from mongobench_results import validity as v

# A client with a target rate that reached less than this share of it could not keep up.
TARGET_SHORTFALL = 0.95


def client_limit_cores(spec: BenchmarkRunSpec) -> float | None:
    """A client container's CPU limit in cores; None when it has none."""
    limit = (spec.clients.resources.limits or {}).get("cpu")
    return parse_quantity(limit) if limit is not None else None


def judge_step(
    policy: ValidityPolicy,
    merged: Mapping[str, Any],
    profile: Mapping[str, Any] | None,
    *,
    limit_cores: float | None,
    attempt: int = 1,
) -> v.Validity:
    """The trial's verdict: every check's reasons (those of a kind the policy accepts marked
    so, not making it invalid), the warm-up found, the attempt."""
    reasons: list[v.Reason] = []
    reasons += client_bound(policy, merged, profile, limit_cores)
    reasons += noisy_node(policy, profile)
    steadiness, warmup = not_steady(policy, merged)
    reasons += steadiness
    reasons += errors(policy, merged)
    if policy.littles_law:
        reasons += littles_law(merged)
    return v.judge(reasons, warmup_seconds=warmup, attempt=attempt, accept=policy.accept)


def client_bound(
    policy: ValidityPolicy,
    merged: Mapping[str, Any],
    profile: Mapping[str, Any] | None,
    limit_cores: float | None,
) -> list[v.Reason]:
    out: list[v.Reason] = []
    seconds = float(merged.get("runtimeSeconds") or 0)
    clients = int((merged.get("client") or {}).get("count") or 1)
    used = float((merged.get("clientCpu") or {}).get("totalSeconds") or 0)
    if limit_cores and seconds > 0:
        # Each client's CPU time over the step's window, against the limit of all of them.
        share = used / (seconds * clients * limit_cores)
        if share >= policy.client_cpu_fraction:
            out.append(
                v.Reason(
                    v.CLIENT_BOUND,
                    f"client CPU {share:.0%} of its limit ({limit_cores:g} cores per client)",
                    round(share, 3),
                    policy.client_cpu_fraction,
                )
            )
    elif profile is not None:
        busy = _client_only_busy(profile.get("cpu") or {})
        if busy is not None and busy / 100 >= policy.client_cpu_fraction:
            out.append(
                v.Reason(
                    v.CLIENT_BOUND,
                    f"client node CPU {busy:.0f}% busy (no CPU limit: its node's capacity)",
                    round(busy / 100, 3),
                    policy.client_cpu_fraction,
                )
            )
    throttled = _throttled_share(merged)
    if throttled is not None and throttled > policy.throttled_fraction:
        out.append(
            v.Reason(
                v.CLIENT_BOUND,
                f"client CPU throttled in {throttled:.0%} of its CFS periods",
                round(throttled, 3),
                policy.throttled_fraction,
            )
        )
    target = _number((merged.get("properties") or {}).get("target"))
    throughput = float(merged.get("throughput") or 0)
    if target and throughput < TARGET_SHORTFALL * target * clients:
        out.append(
            v.Reason(
                v.CLIENT_BOUND,
                f"{throughput:.0f} ops/s of the {target * clients:g} targeted: the clients "
                "could not keep up",
                round(throughput / (target * clients), 3),
                TARGET_SHORTFALL,
            )
        )
    return out


def _client_only_busy(cpu: Mapping[str, Any]) -> float | None:
    """Busy % of the busiest node that runs clients and no database pod (a shared node's
    CPU is the database's too: not the client's capacity)."""
    busy = [
        float(n["avg"])
        for n in cpu.get("nodes") or ()
        if n.get("role") == "client" and n.get("avg") is not None
    ]
    return max(busy) if busy else None


def _throttled_share(merged: Mapping[str, Any]) -> float | None:
    """Throttled CFS periods / periods over the clients (their own cgroup's cpu.stat)."""
    cpu = merged.get("clientCpu") or {}
    periods = cpu.get("cfsPeriods")
    throttled = cpu.get("cfsThrottledPeriods")
    if not periods or throttled is None:
        return None
    return float(throttled) / float(periods)


def noisy_node(policy: ValidityPolicy, profile: Mapping[str, Any] | None) -> list[v.Reason]:
    if profile is None:
        return []
    out: list[v.Reason] = []
    cpu = profile.get("cpu") or {}
    stolen = [(n["name"], float(n["steal"])) for n in cpu.get("nodes") or () if "steal" in n]
    worst = max(stolen, key=lambda x: x[1], default=None)
    if worst is not None and worst[1] > policy.steal_percent:
        out.append(
            v.Reason(
                v.NOISY_NODE,
                f"node {worst[0]}: CPU steal {worst[1]:.1f}%",
                worst[1],
                policy.steal_percent,
            )
        )
    for n in (profile.get("neighbours") or {}).get("nodes") or ():
        share = n.get("share")
        if share is not None and share > policy.neighbour_cpu_fraction:
            pods = ", ".join(n.get("pods") or ()) or "containers of other pods"
            out.append(
                v.Reason(
                    v.NOISY_NODE,
                    f"node {n['node']}: {n['cores']:.2f} cores ({share:.0%} of its CPUs) used "
                    f"by {pods}",
                    share,
                    policy.neighbour_cpu_fraction,
                )
            )
    return out


def not_steady(
    policy: ValidityPolicy, merged: Mapping[str, Any]
) -> tuple[list[v.Reason], float | None]:
    """(reasons, the longest warm-up any client saw) from the clients' own verdicts. A change
    of level no larger than policy.max_level_shift is reported (the warm-up) or left in the
    client's document (a shift), not a reason; one of unknown size counts."""
    verdicts = _steadiness(merged)
    if not verdicts:
        return [], None
    warmups = [float(s["warmupSeconds"]) for _, s in verdicts if "warmupSeconds" in s]
    warmup = max(warmups) if warmups else None
    out: list[v.Reason] = []
    seconds = float(merged.get("runtimeSeconds") or 0)
    counted = [
        (float(s["warmupSeconds"]), pair)
        for _, s in verdicts
        if "warmupSeconds" in s and _beyond(policy, pair := _warmup_levels(s))
    ]
    if counted and seconds > 0:
        longest, pair = max(counted, key=lambda c: c[0])
        if longest / seconds > policy.max_warmup_fraction:
            size = "" if pair is None else f", {_levels_text(pair)}"
            out.append(
                v.Reason(
                    v.NOT_STEADY,
                    f"warm-up of {longest:g} s ({longest / seconds:.0%} of the {seconds:.0f} s "
                    f"window{size})",
                    round(longest / seconds, 3),
                    policy.max_warmup_fraction,
                )
            )
    for client, s in verdicts:
        shifts = list(s.get("shiftsSeconds") or ())
        pairs = [
            (t, pair)
            for t, pair in zip(shifts, _shift_levels(s), strict=True)
            if _beyond(policy, pair)
        ]
        if pairs:
            at = ", ".join(_shift_text(t, pair) for t, pair in pairs)
            out.append(v.Reason(v.NOT_STEADY, f"client {client}: throughput level shift at {at}"))
    return out, warmup


def _beyond(policy: ValidityPolicy, pair: tuple[float, float] | None) -> bool:
    """Is the change from pair[0] to pair[1] larger than the policy tolerates (unknown: yes)?"""
    if pair is None or pair[0] <= 0:
        return True
    return abs(pair[1] / pair[0] - 1) > policy.max_level_shift


def _warmup_levels(steadiness: Mapping[str, Any]) -> tuple[float, float] | None:
    """The level a warm-up started at and the one it reached: the segments before the shifts."""
    shifts = list(steadiness.get("shiftsSeconds") or ())
    levels = [float(x) for x in steadiness.get("levels") or ()]
    before = levels[: len(levels) - len(shifts)]
    return (before[0], before[-1]) if len(before) >= 2 else None


def _shift_levels(steadiness: Mapping[str, Any]) -> list[tuple[float, float] | None]:
    """The levels either side of each shift: the shifts are the series' last change points, so
    the last len(shifts) pairs of adjacent segment levels (None where the runner gave none)."""
    shifts = list(steadiness.get("shiftsSeconds") or ())
    levels = [float(x) for x in steadiness.get("levels") or ()]
    pairs = list(pairwise(levels))
    if len(pairs) < len(shifts):
        return [None] * len(shifts)
    return list(pairs[len(pairs) - len(shifts) :])


def _shift_text(at: float, pair: tuple[float, float] | None) -> str:
    """ "21 s (140 -> 162 ops/s, +16%)": where, and how large (the size the user weighs)."""
    if pair is None or pair[0] <= 0:
        return f"{at:g} s"
    return f"{at:g} s ({_levels_text(pair)})"


def _levels_text(pair: tuple[float, float]) -> str:
    before, after = pair
    return f"{before:.0f} -> {after:.0f} ops/s, {after / before - 1:+.0%}"


def _steadiness(merged: Mapping[str, Any]) -> list[tuple[Any, Mapping[str, Any]]]:
    clients = merged.get("clients")
    if clients:
        return [(c.get("index"), c["steadiness"]) for c in clients if c.get("steadiness")]
    own = merged.get("steadiness")
    index = (merged.get("client") or {}).get("index")
    return [(index, own)] if own else []


def errors(policy: ValidityPolicy, merged: Mapping[str, Any]) -> list[v.Reason]:
    operations: Mapping[str, Any] = merged.get("operations") or {}
    failed = sum(int(e.get("errors") or 0) for e in operations.values())
    done = sum(int(e.get("count") or 0) for e in operations.values())
    if not failed or done + failed == 0:
        return []
    rate = failed / (done + failed)
    if rate <= policy.error_rate:
        return []
    return [
        v.Reason(
            v.ERRORS,
            f"{failed} of {done + failed} operations failed ({rate:.2%})",
            round(rate, 5),
            policy.error_rate,
        )
    ]


def littles_law(merged: Mapping[str, Any]) -> list[v.Reason]:
    law = (merged.get("sanity") or {}).get("littlesLaw") or {}
    if law.get("ok", True) or not merged.get("operationsTotal"):
        return []
    return [v.Reason(v.LITTLES_LAW, str(law.get("diagnosis") or ""), law.get("ratio"))]


def _number(text: Any) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except (TypeError, ValueError):
        return None


# --- the run as a whole ------------------------------------------------------------------------


def tally(steps: Sequence[Mapping[str, Any]]) -> tuple[int, int, int]:
    """(trials judged, invalid ones, re-runs) over the run's steps."""
    judged = [s for s in steps if s.get("kind") == "run" and s.get("validity")]
    invalid = sum(1 for s in judged if not s["validity"].get("valid", True))
    reruns = sum(1 for s in judged if int(s.get("attempt") or 1) > 1)
    return len(judged), invalid, reruns


def advice_text(verdict: v.Validity) -> str:
    """What to change for an invalid trial, one clause per reason that makes it so."""
    return "; ".join(v.advice_line(name) for name in verdict.reason_names)


def invalid_reasons(steps: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """(reason, invalid trials with it), in the order found; accepted reasons are not."""
    verdicts = (v.parse(s.get("validity")) for s in steps if s.get("kind") == "run")
    names = Counter(name for j in verdicts if not j.valid for name in j.reason_names)
    return list(names.items())


def accepted(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """The reasons the policy accepted on any trial, in the order found."""
    names = (
        r.get("reason")
        for s in steps
        if s.get("kind") == "run"
        for r in (s.get("validity") or {}).get("reasons") or ()
        if r.get("accepted")
    )
    return list(dict.fromkeys(str(n) for n in names))


def condition_message(steps: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
    """(all valid, "2 of 9 trials invalid (ClientBound 2: raise clients.resources.limits.cpu
    ...); 1 re-run; accepted: ClientBound"): each reason with what to change."""
    judged, invalid, reruns = tally(steps)
    text = f"{invalid} of {judged} trials invalid" if invalid else f"all {judged} trials valid"
    why = invalid_reasons(steps)
    if why:
        text += " (" + "; ".join(v.advice_line(r, n) for r, n in why) + ")"
    if reruns:
        text += f"; {reruns} re-run{'s' if reruns > 1 else ''}"
    kinds = accepted(steps)
    if kinds:
        text += f"; accepted: {', '.join(kinds)}"
    return invalid == 0, text


def superseded(steps: Sequence[Mapping[str, Any]]) -> set[int]:
    """Indices of invalid attempts that a later attempt of the same trial replaced: they stay
    in status but count in no summary."""
    latest: dict[tuple[Any, Any], int] = {}
    for s in steps:
        if s.get("kind") == "run" and s.get("validity"):
            key = (s.get("workload"), s.get("repetition"))
            latest[key] = max(latest.get(key, 0), int(s.get("attempt") or 1))
    return {
        int(s["index"])
        for s in steps
        if s.get("kind") == "run"
        and s.get("validity")
        and int(s.get("attempt") or 1) < latest[(s.get("workload"), s.get("repetition"))]
    }
