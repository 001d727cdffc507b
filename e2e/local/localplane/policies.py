"""Specs' policies the cluster-tier tests share."""

from __future__ import annotations

from typing import Any

# A BenchmarkRun validity policy under which every trial of this plane counts: its clients
# share the database's 2 cores, so the default policy judges its trials client-bound (the
# truth, shown in test_trial_validity.py), and a busy host makes them noisy or unsteady now and
# then. Every check is still made with the default thresholds and what it finds is shown
# ("accepted: ClientBound" in status, describe, compare and the report); none excludes a
# trial. For tests about something else (stopping rules, calibration, the knee's search).
LENIENT_VALIDITY: dict[str, Any] = {
    "accept": ["ClientBound", "NoisyNode", "NotSteady", "Errors", "LittlesLaw"],
}
