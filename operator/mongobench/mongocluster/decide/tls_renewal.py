"""Pure: what a renewed certificate takes to reach a running component's members.

A Secret volume is updated in place by the kubelet, but only after its sync period (about a
minute, ``PROPAGATION_SECONDS`` with margin; the operator's MONGOBENCH_TLS_PROPAGATION_SECONDS
where the kubelets sync faster), and mongod reads its certificate files only at
start or on ``rotateCertificates`` (5.0+). So, per component (a replica set's StatefulSet, the
mongos Deployment), comparing the certificate its pods were last given (``served``) with the
Secret's (``current``):

- nothing served recorded yet: the pods started with the current one (``record``);
- a change seen less than PROPAGATION_SECONDS ago: the files may still be the old ones (``wait``,
  with the seconds left: the sync is queued again then, as nothing else would wake it);
- then ``rotate``: rotateCertificates on every member, no restart; unless the release cannot
  (before 5.0), the CA changed (members trust each other only once all have it: one restart
  each, in the rolling order) or the component is mongos (its pods have no names of their own
  to send the command to; its Deployment rolls them with a surge router): ``restart``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PROPAGATION_SECONDS = 120.0
SERVED_ANNOTATION = "mongobench.io/tls-served"  # "<certificate digest>/<CA digest>"
SEEN_ANNOTATION = "mongobench.io/tls-seen"  # "<certificate digest>@<epoch seconds>"
# On the pod template: changing it is what restarts the pods.
RESTART_ANNOTATION = "mongobench.io/tls-certificate"

Action = Literal["record", "wait", "rotate", "restart"]


@dataclass(frozen=True)
class Certificate:
    digest: str  # of tls.crt
    ca_digest: str  # of ca.crt

    def encode(self) -> str:
        return f"{self.digest}/{self.ca_digest}"

    @classmethod
    def decode(cls, text: str | None) -> Certificate | None:
        if not text or "/" not in text:
            return None
        digest, _, ca = text.partition("/")
        return cls(digest, ca)


@dataclass(frozen=True)
class Renewal:
    action: Action
    reason: str
    due_in: float | None = None  # wait: seconds until the files are surely the new ones


def seen_at(annotation: str | None, current: Certificate) -> float | None:
    """When `current` was first seen (None: not yet, or the annotation is another's)."""
    if not annotation or "@" not in annotation:
        return None
    digest, _, at = annotation.partition("@")
    try:
        return float(at) if digest == current.digest else None
    except ValueError:
        return None


def plan_renewal(
    *,
    served: Certificate | None,
    current: Certificate,
    seen: float | None,
    now: float,
    rotate_online: bool,
    mongos: bool,
    propagation: float = PROPAGATION_SECONDS,
) -> Renewal | None:
    """The next step for one component; None when its pods serve the current certificate."""
    if served is None:
        return Renewal("record", "the pods started with the current certificate")
    if served == current:
        return None
    if seen is None or now - seen < propagation:
        left = propagation - (0.0 if seen is None else now - seen)
        return Renewal("wait", "the kubelet has not necessarily written the new files yet", left)
    restart = _restart_reason(served, current, rotate_online=rotate_online, mongos=mongos)
    if restart is not None:
        return Renewal("restart", restart)
    return Renewal("rotate", "rotateCertificates reloads the files without a restart")


def _restart_reason(
    served: Certificate, current: Certificate, *, rotate_online: bool, mongos: bool
) -> str | None:
    if current.ca_digest != served.ca_digest:
        return "the CA changed: members trust a new CA once restarted with it"
    if mongos:
        return "mongos routers are rolled by their Deployment"
    if not rotate_online:
        return "this release has no rotateCertificates (5.0+)"
    return None
