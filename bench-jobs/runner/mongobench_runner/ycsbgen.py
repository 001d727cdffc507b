"""YCSB CoreWorkload's key, operation and value generators, in Python, for the Locust driver.

Ports of YCSB 0.17.0 site.ycsb.generator (ZipfianGenerator after Gray et al., Scrambled
Zipfian, SkewedLatest, uniform) and CoreWorkload's key naming (`user` + FNV-1a-64 hash of the key
number when insertorder=hashed), so Locust hits the same key space with the same skew; and
mongobench's `permutation` (each loaded key once, in a seeded shuffled order), which the YCSB
binding's PartitionedInsertsWorkload walks identically.
Pure (state in objects, randomness from an injected random.Random or a seed).
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

from mongobench_runner.workload import CLIENT, CLIENTS, OPERATION_START, proportions

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


PERMUTATION = "permutation"
PERMUTATION_SEED = "mongobench.permutationseed"  # default 0
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
FEISTEL_ROUNDS = 4


def splitmix64(value: int) -> int:
    """SplitMix64's step (Java long arithmetic), the Feistel rounds' mixing function."""
    z = (value + GOLDEN_GAMMA) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def loaded_keys(props: dict[str, str]) -> tuple[int, int]:
    """(first key number, how many): the loaded records the run's reads choose among."""
    start = int(props.get("insertstart", "0"))
    if "insertcount" in props:
        return start, int(props["insertcount"])
    return start, int(props.get("recordcount", "0")) - start


class Permutation:
    """A seeded shuffled order of [0, n): `at(i)` is its i-th key number (i wraps at n).

    A keyed bijection, not a table, so a client of a billion records holds none: a balanced
    Feistel network on the smallest even number of bits that covers n, cycle-walked back into
    [0, n). PartitionedInsertsWorkload.java computes the same order bit for bit.
    """

    def __init__(self, n: int, seed: int) -> None:
        if n < 1:
            raise ValueError(f"a permutation of {n} keys: there must be at least one")
        bits = max(2, (n - 1).bit_length())
        bits += bits % 2
        self.n, self.half, self.mask = n, bits // 2, (1 << (bits // 2)) - 1
        self.keys = [splitmix64((seed + r * GOLDEN_GAMMA) & MASK64) for r in range(FEISTEL_ROUNDS)]

    def _feistel(self, x: int) -> int:
        left, right = x >> self.half, x & self.mask
        for key in self.keys:
            left, right = right, left ^ (splitmix64(right ^ key) & self.mask)
        return (left << self.half) | right

    def at(self, i: int) -> int:
        x = self._feistel(i % self.n)
        while x >= self.n:  # cycle walking: a bijection of [0, 2^bits) restricted to [0, n)
            x = self._feistel(x)
        return x


class PermutationWalk:
    """One process's (or thread's) part of the run's permutation: positions start, start +
    stride, ... A count-bounded run gives each part a contiguous slice (stride 1), so the
    parts of all clients together read every key once when operationcount = recordcount."""

    def __init__(self, permutation: Permutation, start: int, stride: int = 1) -> None:
        self.permutation, self.position, self.stride = permutation, start, stride

    def next(self) -> int:
        keynum = self.permutation.at(self.position)
        self.position += self.stride
        return keynum


def permutation_walk(
    props: dict[str, str], part: int, parts: int, offset: int | None
) -> PermutationWalk:
    """The walk of part `part` of this client's `parts` (its Locust processes, or YCSB threads):
    from `offset`, where the part's operations start among the client's, in the client's slice
    of the permutation (`mongobench.operationstart`, set by the runner). A duration-bounded
    run (`offset` None) has no slices: every part of every client takes the positions
    global part index + k * all parts instead, still never two parts on one key."""
    permutation = Permutation(loaded_keys(props)[1], int(props.get(PERMUTATION_SEED, "0") or 0))
    if offset is None:
        clients = int(props.get(CLIENTS, "1"))
        first = int(props.get(CLIENT, "0")) * parts + part
        return PermutationWalk(permutation, first, clients * parts)
    return PermutationWalk(permutation, int(props.get(OPERATION_START, "0")) + offset)


DISTRIBUTIONS = ("uniform", "zipfian", "latest", PERMUTATION)  # what KeyChooser implements


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
        walk: PermutationWalk | None = None,
    ) -> None:
        self.dist = check_distribution(props)
        if self.dist == PERMUTATION and walk is None:
            raise ValueError("requestdistribution=permutation needs this process's walk")
        self.walk = walk
        start, count = loaded_keys(props)
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
        if self.walk is not None:  # permutation, shared by the process's users
            return self.lo + self.walk.next()
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
