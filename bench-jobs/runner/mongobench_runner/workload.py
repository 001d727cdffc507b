"""YCSB workload properties: the A-F files, overrides, and the key-space split of parallel clients.

Pure functions except `load_workload` (reads one property file).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

STANDARD = ("a", "b", "c", "d", "e", "f")

CORE_WORKLOAD = "site.ycsb.workloads.CoreWorkload"
PARTITIONED_WORKLOAD = "io.mongobench.ycsb.PartitionedInsertsWorkload"
CLIENT, CLIENTS, INSERT_OFFSET = (
    "mongobench.client",
    "mongobench.clients",
    "mongobench.insertoffset",
)
# requestdistribution=permutation: this client's first operation among all clients' (its slice
# of the permutation starts there).
OPERATION_START = "mongobench.operationstart"

# Properties whose values must never reach a result document or a log.
SECRET_KEYS = frozenset({"mongodb.password"})


def workloads_dir() -> Path:
    """MONGOBENCH_WORKLOADS, else bench-jobs/workloads next to this package (a checkout)."""
    env = os.environ.get("MONGOBENCH_WORKLOADS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "workloads"


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties subset YCSB files use: key=value or key: value, # and ! comments."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if m is None:
            out[line] = ""
            continue
        out[m.group(1)] = m.group(2).strip()
    return out


def resolve_workload(name: str) -> Path:
    """`a`..`f` (or `workloada`) from the workloads folder, or a path to a property file."""
    short = name.lower().removeprefix("workload")
    if short in STANDARD:
        return workloads_dir() / f"workload{short}"
    path = Path(name)
    if not path.is_file():
        raise ValueError(f"workload {name!r}: not one of a-f and no such file")
    return path


def workload_label(name: str) -> str:
    short = name.lower().removeprefix("workload")
    return short if short in STANDARD else Path(name).name


def load_workload(name: str) -> dict[str, str]:
    return parse_properties(resolve_workload(name).read_text())


def parse_overrides(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"-p {item!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out


@dataclass(frozen=True)
class Split:
    """What one of n parallel clients does."""

    insertstart: int
    insertcount: int
    operationcount: int


def split_for_client(
    recordcount: int, operationcount: int, client_index: int, clients: int
) -> Split:
    """Client i of n loads keys [i*r/n, (i+1)*r/n) and runs its share of the operations."""
    if clients < 1 or not 0 <= client_index < clients:
        raise ValueError(f"client index {client_index} is not in [0, {clients})")
    start = recordcount * client_index // clients
    end = recordcount * (client_index + 1) // clients
    ops_start = operationcount * client_index // clients
    ops_end = operationcount * (client_index + 1) // clients
    return Split(insertstart=start, insertcount=end - start, operationcount=ops_end - ops_start)


def effective_properties(
    base: dict[str, str],
    overrides: dict[str, str],
    *,
    phase: str,
    client_index: int,
    clients: int,
) -> dict[str, str]:
    """Workload file + overrides + this client's share of the key space / operations."""
    props = {**base, **overrides}
    # Run-phase inserts of parallel clients and of successive runs get key ranges of their own
    # (see PartitionedInsertsWorkload.java; the Locust driver maps keys the same way).
    props[CLIENT], props[CLIENTS] = str(client_index), str(clients)
    if props.get("workload", CORE_WORKLOAD) == CORE_WORKLOAD:
        props["workload"] = PARTITIONED_WORKLOAD
    recordcount = int(props.get("recordcount", "0"))
    operationcount = int(props.get("operationcount", "0"))
    if phase != "load" and props.get("requestdistribution") == "permutation":
        props[OPERATION_START] = str(operationcount * client_index // clients)
    if clients > 1:
        split = split_for_client(recordcount, operationcount, client_index, clients)
        if phase == "load":
            base_start = int(props.get("insertstart", "0"))
            props["insertstart"] = str(base_start + split.insertstart)
            props["insertcount"] = str(split.insertcount)
        else:
            props["operationcount"] = str(split.operationcount)
    return props


def proportions(props: dict[str, str]) -> dict[str, float]:
    """The operation mix (YCSB CoreWorkload defaults: read 0.95, update 0.05). DELETE
    (`deleteproportion`, go-ycsb's name) is the Locust driver's only: YCSB's CoreWorkload has
    no delete in its mix, and the YCSB driver refuses it (`refuse_delete`)."""
    keys = {
        "READ": ("readproportion", 0.95),
        "UPDATE": ("updateproportion", 0.05),
        "INSERT": ("insertproportion", 0.0),
        "SCAN": ("scanproportion", 0.0),
        "READ-MODIFY-WRITE": ("readmodifywriteproportion", 0.0),
        "DELETE": ("deleteproportion", 0.0),
    }
    return {op: float(props.get(key, str(default))) for op, (key, default) in keys.items()}


def refuse_delete(props: dict[str, str]) -> None:
    """ValueError when the run phase asks YCSB for deletes: CoreWorkload (YCSB 0.17) chooses
    among read, update, insert, scan and read-modify-write only, and would ignore the property
    silently, measuring a different mix than the one asked for."""
    if proportions(props)["DELETE"] > 0:
        raise ValueError(
            "deleteproportion: YCSB's CoreWorkload has no delete operation; "
            "use the Locust driver for a mix with deletes"
        )


def redact_uri(uri: str) -> str:
    """The URI without its password (user name kept)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "<unparseable uri>"
    if parts.password is None:
        return uri
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def redacted(props: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in props.items():
        if key in SECRET_KEYS:
            out[key] = "***"
        elif key in ("mongodb.url", "mongodb.uri"):
            out[key] = redact_uri(value)
        else:
            out[key] = value
    return out
