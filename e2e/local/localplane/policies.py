"""Specs' policies the cluster-tier tests share."""

from __future__ import annotations

from typing import Any

# A BenchmarkRun validity policy no trial of this plane fails, short of a level shift in its
# throughput: its clients share the database's 2 cores, so the default policy judges its trials
# client-bound (the truth, shown in test_trial_validity.py). For tests about something else
# (stopping rules, calibration) whose every trial must count. neighbourCpuFraction stays below
# clientCpuFraction, as admission requires.
LENIENT_VALIDITY: dict[str, Any] = {
    "clientCpuFraction": 1.0,
    "stealPercent": 100,
    "throttledFraction": 1.0,
    "neighbourCpuFraction": 0.99,
    "errorRate": 1.0,
    "maxWarmupFraction": 0.99,
    "littlesLaw": False,
}
