"""`make bench-tls`: what TLS costs the benchmark clients, side by side with the same work in
the clear.

Two mongobench-wireservers on loopback (benchmarks/wireserver: in-memory, Go, fast enough that
the clients are the bottleneck), one plain and one TLS-only with a certificate made by trustme,
each loaded once with YCSB (BENCH_RECORDS records). Then the same read-only work (workload C,
BENCH_OPS operations, BENCH_THREADS threads) by the YCSB binding (the Java driver trusting the
CA through the truststore the runner builds) and a bare pymongo loop, against each server,
BENCH_ROUNDS times alternating the order. Prints ops/s, client CPU per 1,000 operations and
server CPU per 1,000 operations, plain and TLS, and each TLS figure as a ratio to plain.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import trustme

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clients import PYMONGO_LOOP, Row, Server, _measured, _runner, _total
from wireserver import running_wireserver

from mongobench_runner.ycsb import ycsb_home

RECORDS = int(os.environ.get("BENCH_RECORDS", "1000"))
OPS = int(os.environ.get("BENCH_OPS", "50000"))
THREADS = int(os.environ.get("BENCH_THREADS", "4"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))
HOST = "127.0.0.1"


@contextmanager
def _servers(tmp: Path) -> Iterator[tuple[Server, Server, Path]]:
    ca = trustme.CA(organization_name="bench-tls CA")
    ca_file, pem = tmp / "ca.crt", tmp / "server.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    ca.issue_cert(HOST).private_key_and_cert_chain_pem.write_to_path(str(pem))
    with ExitStack() as stack:
        plain = stack.enter_context(running_wireserver(tmp / "plain-ws"))
        secure = stack.enter_context(
            running_wireserver(tmp / "tls-ws", tls_certificate_key_file=pem)
        )
        yield (
            Server("plain", f"mongodb://{HOST}:{plain.port}/", plain.cpu_seconds, plain.log),
            Server("TLS", f"mongodb://{HOST}:{secure.port}/", secure.cpu_seconds, secure.log),
            ca_file,
        )


def main() -> int:
    if not (ycsb_home() / "lib").is_dir():
        raise SystemExit("the YCSB binding is not built: run `make setup`")
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as tmpdir:
        tmp = Path(tmpdir)
        for name in ("plain-ws", "tls-ws"):
            (tmp / name).mkdir()
        with _servers(tmp) as (plain, secure, ca_file):
            # The runner reads the CA the way a benchmark Job gives it (mongobench_runner.tls).
            os.environ["MONGOBENCH_TLS_CA_FILE"] = str(ca_file)
            clients: dict[tuple[str, str], Callable[[], Row]] = {}
            for server, query in ((plain, ""), (secure, "?tls=true")):
                uri = f"{server.uri}bench{query}"
                common = [
                    "--workload", "c", "--uri", uri, "--threads", str(THREADS),
                    "-p", f"recordcount={RECORDS}", "-p", f"operationcount={OPS}",
                    "-p", "requestdistribution=uniform", "--timeout", "900",
                ]  # fmt: skip
                _runner(["ycsb", "--phase", "load", *common], tmp, "load", server)
                loop_uri = f"{server.uri}{query}&tlsCAFile={ca_file}" if query else server.uri
                loop = [sys.executable, "-c", PYMONGO_LOOP, loop_uri, "bench", str(RECORDS)]

                def ycsb(common: list[str] = common, server: Server = server) -> Row:
                    return _runner(["ycsb", "--phase", "run", *common], tmp, "ycsb", server)

                def bare(loop: list[str] = loop, server: Server = server) -> Row:
                    return _measured([*loop, str(OPS), str(THREADS)], server)

                clients[("YCSB binding", server.label)] = ycsb
                clients[("bare pymongo", server.label)] = bare
            results: dict[tuple[str, str], list[Row]] = {key: [] for key in clients}
            for r in range(ROUNDS):
                for key in list(clients) if r % 2 == 0 else list(reversed(clients)):
                    results[key].append(clients[key]())
    _table(results)
    return 0


def _table(results: dict[tuple[str, str], list[Row]]) -> None:
    print(
        f"\nbench-tls: workload C (uniform reads) on loopback, {RECORDS} records, {OPS} "
        f"operations x {ROUNDS} round(s), {THREADS} threads, {os.cpu_count()} CPUs\n"
    )
    print(
        f"{'client':<14}{'ops/s plain':>12}{'ops/s TLS':>11}{'ratio':>7}"
        f"{'CPU s/1k plain':>16}{'CPU s/1k TLS':>14}{'ratio':>7}"
        f"{'server s/1k plain':>19}{'server s/1k TLS':>17}{'ratio':>7}"
    )
    for client in ("YCSB binding", "bare pymongo"):
        p, t = _total(results[(client, "plain")]), _total(results[(client, "TLS")])
        rate_p, rate_t = p.ops / p.seconds, t.ops / t.seconds
        cpu_p, cpu_t = p.cpu / p.ops * 1000, t.cpu / t.ops * 1000
        srv_p, srv_t = p.server_cpu / p.ops * 1000, t.server_cpu / t.ops * 1000
        print(
            f"{client:<14}{rate_p:>12.0f}{rate_t:>11.0f}{rate_t / rate_p:>7.2f}"
            f"{cpu_p:>16.4f}{cpu_t:>14.4f}{cpu_t / cpu_p:>7.2f}"
            f"{srv_p:>19.4f}{srv_t:>17.4f}{srv_t / srv_p:>7.2f}"
        )
    print(
        "\nratio: TLS / plain. CPU s/1k: client CPU seconds per 1,000 operations (YCSB: the JVM, "
        "from the result document); server s/1k: the wire server's CPU over the client's process."
    )


if __name__ == "__main__":
    raise SystemExit(main())
