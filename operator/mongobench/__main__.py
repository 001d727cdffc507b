"""The operator's entry point, `mongobench-operator` (and `python -m mongobench`): `run` starts
the operator. The user CLI `mongobench` is another distribution (mongobench-cli)."""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import sys
from dataclasses import replace

from mongobench.config import OperatorConfig


def without_kubernetes_package() -> None:
    """Make `kubernetes` unimportable in the operator process. The operator talks to the API with
    mongobench.k8s.client; kopf imports the package for type adapters whenever it is installed,
    which costs about 38 MiB resident for nothing. The image does not install it
    (tests/unit/test_image_dependencies.py), but the development environment, where `make dev`
    and the cluster tier run the operator, holds it beside the `mongobench` CLI."""
    sys.modules.setdefault("kubernetes", None)  # type: ignore[arg-type]


def without_pyopenssl_probe() -> bool:
    """Skip pymongo's probe for pyOpenSSL where pyOpenSSL is not installed (the image installs
    none): pymongo tries its pyOpenSSL TLS context first, whose module imports cryptography's
    x509 (~7.8 MiB resident) before it finds no `OpenSSL` and falls back to the standard
    library's ssl, which is then what every client uses. The probe failing at once changes
    nothing else (certificates, which needs cryptography, loads only for a cluster issuing
    from a CA Secret). True when the probe is skipped."""
    if importlib.util.find_spec("OpenSSL") is not None:  # pyOpenSSL there: pymongo uses it
        return False
    sys.modules.setdefault("pymongo.pyopenssl_context", None)  # type: ignore[arg-type]
    return True


# glibc's mallopt parameter: at most this many malloc arenas.
M_ARENA_MAX = -8
MALLOC_ARENAS = 2


def fewer_malloc_arenas() -> bool:
    """Cap glibc's malloc arenas before any thread starts: glibc gives threads up to 8 arenas
    per core, and each keeps the memory its threads freed. With 16 handler threads and the
    MongoDB clients' monitors, the operator's peak RSS under 200 clusters and 200 runs fell from
    ~205 to ~180 MiB (make bench-scale). False where malloc is not glibc's."""
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_ARENA_MAX, MALLOC_ARENAS))
    except (OSError, AttributeError):
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mongobench-operator", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="run the operator against the current kube context")
    run_p.add_argument("-n", "--namespace", action="append", default=[], help="watch only these")
    run_p.add_argument("--plain-logs", action="store_true", help="human-readable logs, not JSON")
    run_p.add_argument("--metrics-port", type=int, help="port of /metrics (default 8000)")
    run_p.add_argument("--probe-port", type=int, help="port of /healthz (default 8080)")
    args = parser.parse_args(argv)

    if args.command == "run":
        without_kubernetes_package()
        without_pyopenssl_probe()
        fewer_malloc_arenas()
        from mongobench.main import run  # noqa: PLC0415 - kopf loads only for `run`

        config = OperatorConfig.from_env()
        if args.namespace:
            config = replace(config, namespaces=tuple(args.namespace))
        if args.plain_logs:
            config = replace(config, json_logs=False)
        if args.metrics_port is not None:
            config = replace(config, metrics_port=args.metrics_port)
        if args.probe_port is not None:
            config = replace(config, probe_port=args.probe_port)
        run(config)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
