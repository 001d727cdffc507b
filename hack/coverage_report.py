"""`make coverage`: the unit tier's line coverage of operator/mongobench, per package.

Reads the data `coverage run` wrote (the file given as the only argument), prints one line per
package (a folder of operator/mongobench; its top-level modules count as `mongobench`), and ends
with exactly `unit coverage: NN% of operator/mongobench`. Exits 1 when a controller package
(CONTROLLERS) is below FLOOR: their I/O halves are unit-tested against in-memory fakes, and that
is to stay so.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import coverage

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "operator" / "mongobench"
CONTROLLERS = ("benchmarkrun", "mongocluster", "experiment")
FLOOR = 85.0


def main(data_file: str) -> int:
    cov = coverage.Coverage(data_file=data_file)
    cov.load()
    statements: dict[str, int] = defaultdict(int)
    missing: dict[str, int] = defaultdict(int)
    for path in sorted(PACKAGE.rglob("*.py")):
        _, lines, _, missed, _ = cov.analysis2(str(path))
        parts = path.relative_to(PACKAGE).parts
        package = parts[0] if len(parts) > 1 else "mongobench"
        statements[package] += len(lines)
        missing[package] += len(missed)

    def percent(covered: int, total: int) -> float:
        return 100.0 * covered / total if total else 100.0

    below = []
    print(f"{'package':<16}{'statements':>12}{'missed':>8}{'covered':>9}")
    for package in sorted(statements):
        total, missed = statements[package], missing[package]
        share = percent(total - missed, total)
        floor = f"  (floor {FLOOR:.0f}%)" if package in CONTROLLERS else ""
        print(f"{package:<16}{total:>12}{missed:>8}{share:>8.1f}%{floor}")
        if package in CONTROLLERS and share < FLOOR:
            below.append(f"{package} {share:.1f}%")
    total, missed = sum(statements.values()), sum(missing.values())
    if below:
        print(f"below {FLOOR:.0f}% from unit tests alone: {', '.join(below)}", file=sys.stderr)
    print(f"unit coverage: {percent(total - missed, total):.0f}% of operator/mongobench")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
