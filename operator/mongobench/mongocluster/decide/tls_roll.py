"""Pure: rolling a running cluster onto TLS (or off it) without downtime, one mode at a time.

MongoDB's documented path onto TLS is allowTLS, then preferTLS, then requireTLS, every member
restarted with each: under allowTLS a member accepts TLS and plain connections and dials its
peers plain; under preferTLS it dials its peers with TLS and still accepts plain; requireTLS
refuses plain. A member not yet restarted speaks plain only, so nobody may dial TLS until every
member runs at least allowTLS, and nobody may still dial plain once one runs requireTLS.

So the mode written into the pod templates (``status.tls.mode``) is not the spec's at once when
the cluster already runs: it moves one step per pass that finds every member restarted onto the
previous one (``next_mode``), and the clients follow the members:

- the operator's own connections and the connection Secret's URI (what benchmark Jobs read at
  start) use TLS from preferTLS on (``TLS.operator_dials_tls``): by then every member accepts
  TLS;
- the step to requireTLS waits until no client pod that started before the URI switched still
  runs (it dials plain), as a credential rotation waits for running clients.

A cluster created with TLS starts in the spec's mode (nothing runs plain yet), and a cluster
whose status records no mode (created before the mode was recorded) is judged by what its pod
templates carry. Rolling off TLS takes the same steps down. Member authentication by x.509 is
applied with the last step only (``effective_spec``): moving a keyfile cluster to x.509 members
takes MongoDB's own clusterAuthMode transition (sendKeyFile, sendX509), which this planner does
not drive.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mongobench.api.mongocluster import MongoClusterSpec

DISABLED = "disabled"  # no TLS at all: --tlsMode absent (mongod's own word for it)
ORDER = (DISABLED, "allowTLS", "preferTLS", "requireTLS")
MODE_FLAG = "--tlsMode"


def target_mode(spec: MongoClusterSpec) -> str:
    """The mode the spec asks every member to end in."""
    return spec.tls.mode if spec.tls.enabled else DISABLED


def template_mode(workload: Mapping[str, Any] | None, container: str) -> str | None:
    """The --tlsMode a StatefulSet's or Deployment's pod template gives `container` (DISABLED
    without the flag); None without the workload or the container."""
    if workload is None:
        return None
    pod = ((workload.get("spec") or {}).get("template") or {}).get("spec") or {}
    found = next((c for c in pod.get("containers") or () if c.get("name") == container), None)
    if found is None:
        return None
    args = list(found.get("args") or ())
    if MODE_FLAG in args and args.index(MODE_FLAG) + 1 < len(args):
        return str(args[args.index(MODE_FLAG) + 1])
    return DISABLED


def recorded_mode(status: Mapping[str, Any]) -> str | None:
    mode = (status.get("tls") or {}).get("mode")
    return str(mode) if mode in ORDER else None


def effective_spec(spec: MongoClusterSpec, mode: str) -> MongoClusterSpec:
    """The spec the pods are built from while the members run `mode`: TLS on in that mode (the
    certificate source kept), or off; x.509 members only once the spec's own mode is reached."""
    if mode == target_mode(spec):
        return spec
    if mode == DISABLED:
        tls = dataclasses.replace(spec.tls, enabled=False, member_auth="keyFile")
    else:
        tls = dataclasses.replace(spec.tls, enabled=True, mode=mode, member_auth="keyFile")  # type: ignore[arg-type]
    return dataclasses.replace(spec, tls=tls)


def toward(current: str, target: str) -> str:
    """The mode one step from `current` toward `target` (`target` itself when there)."""
    here, there = ORDER.index(current), ORDER.index(target)
    if here == there:
        return target
    return ORDER[here + (1 if there > here else -1)]


Action = Literal["hold", "wait", "step", "done"]


@dataclass(frozen=True)
class RollStep:
    action: Action  # hold: nothing to roll; wait: members or clients not there yet
    mode: str  # the mode the pod templates carry after this pass
    message: str


def next_mode(
    *,
    current: str,
    target: str,
    rolled: bool,
    certificates_ready: bool,
    plain_clients: int,
    clients_without_ca: int = 0,
) -> RollStep:
    """One pass of the roll. `current`: the mode the templates carry; `rolled`: every member
    restarted from them and ready; `certificates_ready`: every certificate Secret is issued;
    `plain_clients`: client pods still running that read a URI without TLS;
    `clients_without_ca`: client Jobs not ended whose pods mount no CA (created before TLS was
    asked for: a pod of theirs starting after the URI switched could not verify the server)."""
    if not rolled:
        return RollStep("wait", current, f"members restarting with --tlsMode {current}")
    if current == target:
        return RollStep("done" if current != DISABLED else "hold", current, done_message(current))
    mode = toward(current, target)
    if mode != DISABLED and not certificates_ready:
        return RollStep("wait", current, "waiting for the certificates to be issued")
    if mode == "preferTLS" and current == "allowTLS" and clients_without_ca:
        return RollStep(
            "wait",
            current,
            f"waiting for {clients_without_ca} client Job(s) without the CA to finish before "
            "the connection URI switches to TLS",
        )
    if mode == "requireTLS" and plain_clients:
        return RollStep(
            "wait",
            current,
            f"waiting for {plain_clients} client pod(s) that dial without TLS to finish",
        )
    return RollStep("step", mode, _stepping(mode, target))


def done_message(mode: str) -> str:
    if mode == DISABLED:
        return "TLS is off on every member"
    return f"every member runs --tlsMode {mode}"


def _stepping(mode: str, target: str) -> str:
    said = {
        DISABLED: "members restart without TLS",
        "allowTLS": "members restart accepting TLS beside plain (allowTLS)",
        "preferTLS": (
            "every member accepts TLS: clients and the operator switch to TLS; members restart "
            "dialling each other with TLS (preferTLS)"
        ),
        "requireTLS": "no client dials plain any more: members restart refusing plain (requireTLS)",
    }[mode]
    step = ORDER.index(mode)
    towards = ORDER.index(target)
    if towards < step or mode == DISABLED:  # rolling off TLS
        return f"{said}, on the way to {target}"
    return f"{said}: step {step} of {towards}"


def jobs_without_ca(jobs: Sequence[Mapping[str, Any]], ca_secret: str) -> int:
    """Client Jobs not ended whose pod template mounts no volume of `ca_secret`."""
    count = 0
    for job in jobs:
        conditions = (job.get("status") or {}).get("conditions") or ()
        if any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in conditions):  # fmt: skip
            continue
        pod = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
        secrets = {(v.get("secret") or {}).get("secretName") for v in pod.get("volumes") or ()}
        if ca_secret not in secrets:
            count += 1
    return count


def plain_client_pods(pods: Sequence[Mapping[str, Any]], switched_at: str | None) -> int:
    """Client pods still running that started before the URI switched to TLS (they read the
    plain URI at start); `switched_at`: RFC 3339, None when it never switched (all are plain)."""
    ended = ("Succeeded", "Failed")
    count = 0
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ended:
            continue
        created = (pod.get("metadata") or {}).get("creationTimestamp") or ""
        # RFC 3339 in UTC, whole seconds: compared as text; the same second counts as before.
        if switched_at is None or created <= switched_at:
            count += 1
    return count
