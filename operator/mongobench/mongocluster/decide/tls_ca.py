"""Pure: a new CA in the CA Secret (``tls.caSecretName``) reaches a running cluster without an
outage, through a trust bundle.

Members trust the CAs of their ``ca.crt`` and present a leaf certificate signed by one of them.
Replacing both at once would have a member restarted first present a certificate the others do
not trust yet (and trust none of theirs). So, in phases (status.tls.caRotation), each one waiting
until every member serves what the previous one wrote (restarted, or rotated, and ready):

  Bundling   ``ca.crt`` of every issued Secret holds the new CA and the old; the leaves stay
             (signed by the old CA). The CA changed: tls_renewal restarts the members.
  Reissuing  every member trusts both: the leaves are issued again from the new CA, the bundle
             kept. Same CA file: rotateCertificates on every member, no restart.
  Pruning    every member presents a new-CA leaf: ``ca.crt`` holds the new CA alone. The CA
             changed: a restart each (after it the old CA is no longer trusted anywhere).
  Completed  only the new CA is trusted and signs every certificate.

Nothing announces that members took a rotation up (no restart, no status change): a sync that
carried certificates during a change queues the next one at once (reconcile.tls_pass).

Benchmark clients read ``ca.crt`` of the client Secret at their start: through the whole change
it holds a CA that signed the members' leaves (the old one until Reissuing, both meanwhile).

What starts a change is the CA Secret's event, once the user labelled it for the operator to
watch (``ca_watch``: the CASecretWatched condition says whether they did).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench.k8s import conditions as cond
from mongobench.mongocluster.build import labels as lbl

PEM_END = "-----END CERTIFICATE-----"

CAWatch = tuple[cond.ConditionStatus, str, str]  # the CASecretWatched condition


def ca_watch(name: str, secret: Mapping[str, Any]) -> CAWatch:
    """The CASecretWatched condition of the user's CA Secret as read: the operator watches only
    Secrets labelled labels.WATCH, and never labels a user's Secret itself."""
    if lbl.watched(secret):
        return (
            cond.TRUE,
            cond.LABELLED,
            f"Secret {name} is watched: a new CA in it is taken up at once",
        )
    return (
        cond.FALSE,
        cond.LABEL_MISSING,
        f"Secret {name} lacks the label {lbl.WATCH_SELECTOR}: a new CA in it is taken up only "
        f"at the cluster's next sync; label it (kubectl label secret {name} "
        f"{lbl.WATCH_SELECTOR}) to have its changes followed at once",
    )


def split_bundle(text: str) -> tuple[str, ...]:
    """The PEM certificates of a ``ca.crt``, each ending in a newline, in order."""
    parts = [p.strip() for p in text.split(PEM_END)]
    return tuple(f"{p}\n{PEM_END}\n" for p in parts if p)


def join_bundle(cas: Sequence[str]) -> str:
    return "".join(split_bundle("".join(cas)))


def same_ca(a: str, b: str) -> bool:
    return split_bundle(a) == split_bundle(b)


@dataclass(frozen=True)
class CAStep:
    phase: str | None  # conditions.CA_*; None: no CA change (nothing to record)
    bundle: tuple[str, ...]  # what every issued Secret's ca.crt must hold now, new CA first
    reissue: bool  # issue the leaves again from the new CA now
    message: str
    waiting: bool = False  # members have not all taken up the last change yet


def under_way(status: Mapping[str, Any] | None) -> bool:
    """Whether status.tls.caRotation records a change not completed yet."""
    phase = (((status or {}).get("tls") or {}).get("caRotation") or {}).get("phase")
    return phase in (cond.CA_BUNDLING, cond.CA_REISSUING, cond.CA_PRUNING)


def plan_ca_change(
    *,
    new_ca: str,
    bundle: Sequence[str],
    leaves_from_new: bool,
    taken_up: bool,
) -> CAStep:
    """The CA change's next step. `new_ca`: the CA Secret's certificate (PEM); `bundle`: the
    CAs the issued Secrets' ca.crt holds now; `leaves_from_new`: every issued leaf is signed by
    `new_ca`; `taken_up`: every member serves the Secrets as they are (restarted or rotated
    since their last change, and ready)."""
    new = split_bundle(new_ca)[0]
    held = tuple(split_bundle(join_bundle(bundle)))
    others = tuple(ca for ca in held if ca != new)
    if new not in held:
        said = "a new CA: every member restarts trusting it beside the old one"
        return CAStep(cond.CA_BUNDLING, (new, *others), False, said)
    if not leaves_from_new:
        # Trusting both (Bundling taken up): the leaves come from the new CA now.
        said = "every member trusts both CAs: certificates reissued from the new CA, rotated in"
        step = CAStep(cond.CA_REISSUING, held, True, said)
        wait = CAStep(cond.CA_BUNDLING, held, False, "members restarting onto the bundle", True)
    elif others:
        said = "every member presents a certificate of the new CA: the old CA leaves the bundle"
        step = CAStep(cond.CA_PRUNING, (new,), False, said)
        wait = CAStep(
            cond.CA_REISSUING, held, False, "members rotating to certificates of the new CA", True
        )
    else:
        step = CAStep(cond.CA_COMPLETED, (new,), False, "only the new CA is trusted and signs")
        wait = CAStep(
            cond.CA_PRUNING, (new,), False, "members restarting onto the new CA alone", True
        )
    return step if taken_up else wait
