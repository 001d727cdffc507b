"""YCSB CoreWorkload's key, operation and value generators, in Python, for the Locust driver.

Ports of YCSB 0.17.0 site.ycsb.generator (ZipfianGenerator after Gray et al., Scrambled
Zipfian, SkewedLatest, uniform) and CoreWorkload's key naming (`user` + FNV-1a-64 hash of the key
number when insertorder=hashed), so Locust hits the same key space with the same skew.
Pure (state in objects, randomness from an injected random.Random).
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

from mongobench_runner.workload import proportions

FNV_OFFSET_BASIS_64 = 0xCBF29CE484222325
FNV_PRIME_64 = 1099511628211
MASK64 = (1 << 64) - 1
ZIPFIAN_CONSTANT = 0.99
SCRAMBLED_ITEM_COUNT = 10_000_000_000
SCRAMBLED_ZETAN = 26.46902820178302  # zeta(10^10, 0.99), YCSB's precomputed constant


def fnvhash64(value: int) -> int:
    """YCSB Utils.fnvhash64 (Java long arithmetic, Math.abs of the result)."""
    h = FNV_OFFSET_BASIS_64
    v = value & MASK64
    for _ in range(8):
        octet = v & 0xFF
        v >>= 8  # YCSB uses >> on a long; key numbers are non-negative so >>> == >>
        h ^= octet
        h = (h * FNV_PRIME_64) & MASK64
    signed = h - (1 << 64) if h >= 1 << 63 else h
    return abs(signed) if signed != -(1 << 63) else signed


def key_name(keynum: int, *, hashed: bool, zeropadding: int = 1) -> str:
    if hashed:
        keynum = fnvhash64(keynum)
    value = str(keynum)
    return "user" + "0" * max(zeropadding - len(value), 0) + value


def _zeta(start: int, n: int, theta: float, initial: float) -> float:
    total = initial
    for i in range(start, n):
        total += 1.0 / ((i + 1) ** theta)
    return total


class Zipfian:
    """Items in [lo, hi], item lo most popular (YCSB ZipfianGenerator)."""

    def __init__(
        self,
        lo: int,
        hi: int,
        rnd: random.Random,
        theta: float = ZIPFIAN_CONSTANT,
        zetan: float | None = None,
    ) -> None:
        self.base = lo
        self.items = hi - lo + 1
        self.theta = theta
        self.rnd = rnd
        self.zeta2 = _zeta(0, 2, theta, 0.0)
        self.alpha = 1.0 / (1.0 - theta)
        self.count_for_zeta = self.items
        self.zetan = zetan if zetan is not None else _zeta(0, self.items, theta, 0.0)
        self._eta()

    def _eta(self) -> None:
        self.eta = (1 - (2.0 / self.items) ** (1 - self.theta)) / (1 - self.zeta2 / self.zetan)

    def next(self, items: int | None = None) -> int:
        n = items if items is not None else self.items
        if n != self.count_for_zeta:
            if n > self.count_for_zeta:  # incremental, as YCSB does for a growing key space
                self.zetan = _zeta(self.count_for_zeta, n, self.theta, self.zetan)
            else:
                self.zetan = _zeta(0, n, self.theta, 0.0)
            self.count_for_zeta = n
            self.items = n
            self._eta()
        u = self.rnd.random()
        uz = u * self.zetan
        if uz < 1.0:
            return self.base
        if uz < 1.0 + 0.5**self.theta:
            return self.base + 1
        return self.base + int(n * (self.eta * u - self.eta + 1) ** self.alpha)


DISTRIBUTIONS = ("uniform", "zipfian", "latest")  # what KeyChooser implements


def check_distribution(props: dict[str, str]) -> str:
    """The requestdistribution KeyChooser will use; ValueError naming it if unsupported."""
    dist = props.get("requestdistribution", "uniform")
    if dist not in DISTRIBUTIONS:
        raise ValueError(
            f"requestdistribution={dist}: the Locust driver supports {', '.join(DISTRIBUTIONS)}"
        )
    return dist


class KeyChooser:
    """Chooses existing key numbers by `requestdistribution`."""

    def __init__(
        self,
        props: dict[str, str],
        rnd: random.Random,
        last_inserted: list[int],
        *,
        stride: int = 1,
        first_insert: int | None = None,
    ) -> None:
        self.dist = check_distribution(props)
        start = int(props.get("insertstart", "0"))
        count = (
            int(props.get("insertcount", props.get("recordcount", "0")))
            if "insertcount" in props
            else int(props.get("recordcount", "0")) - start
        )
        self.lo, self.hi = start, start + count - 1
        self.rnd = rnd
        self.last = last_inserted  # shared cell: the newest key number inserted (SkewedLatest)
        # Run-phase inserts: this process owns first_insert + k*stride (see the Locust driver).
        self.records = int(props.get("recordcount", "0"))
        self.stride = stride
        self.first_insert = self.records if first_insert is None else first_insert
        if self.dist == "zipfian":
            self.zipf = Zipfian(0, SCRAMBLED_ITEM_COUNT - 1, rnd, zetan=SCRAMBLED_ZETAN)
        elif self.dist == "latest":
            self.zipf = Zipfian(0, max(last_inserted[0], 1), rnd)

    def next(self) -> int:
        if self.dist == "uniform":
            return self.rnd.randint(self.lo, self.hi)
        if self.dist == "zipfian":  # ScrambledZipfianGenerator
            return self.lo + fnvhash64(self.zipf.next()) % (self.hi - self.lo + 1)
        newest = self.last[0]
        if newest < self.records:
            return max(newest - self.zipf.next(newest + 1), 0)
        # YCSB's view: the loaded records then this process's own inserts, newest last; offset k
        # is this process's k-th newest key, stepping over other processes' and earlier runs'.
        own = (newest - self.first_insert) // self.stride  # own inserted keys, minus one
        offset = self.zipf.next(self.records + own + 1)
        if offset <= own:
            return newest - offset * self.stride
        return max(self.records - 1 - (offset - own - 1), 0)


@dataclass
class Operation:
    name: str
    weight: float


class OperationChooser:
    def __init__(self, props: dict[str, str], rnd: random.Random) -> None:
        mix = [(op, p) for op, p in proportions(props).items() if p > 0]
        if not mix:
            raise ValueError("the workload has no operation with a proportion above 0")
        self.names = [op for op, _ in mix]
        self.weights = [p for _, p in mix]
        self.rnd = rnd

    def next(self) -> str:
        return self.rnd.choices(self.names, self.weights)[0]


_ALPHABET = (string.ascii_letters + string.digits + string.punctuation).encode()


def field_value(rnd: random.Random, length: int) -> bytes:
    """Printable random bytes, like YCSB's RandomByteIterator."""
    return bytes(rnd.choices(_ALPHABET, k=length))
