"""Unit tier: a run's finer CPU resolution (spec.monitoring.cpuResolutionSeconds): the PodMonitor
the operator owns for the run's window (pure builder), its life in the run's controller against
an in-memory API (fake_kube), and the bounds admission and the parser share. The steps' queries
at that resolution are counted in test_step_queries; e2e/local/tests/test_cpu_resolution.py
proves the points per window against a real Prometheus."""

from __future__ import annotations

from typing import Any

import pytest
from fake_kube import FakeKube, unit_clock
from test_orchestrate import NS, Data, advance, benchmarkrun, finish_job, mongocluster, report

from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.api.schema import SpecError
from mongobench.benchmarkrun.act import orchestrate
from mongobench.benchmarkrun.build import cpu_monitor
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond

pytestmark = pytest.mark.unit

RUN = {
    "apiVersion": "mongobench.io/v1alpha1",
    "metadata": {"name": "r", "namespace": NS, "uid": "u1"},
}
PODMONITORS = "monitoring.coreos.com/v1/podmonitors"
CONFIG = OperatorConfig(
    prometheus_url="http://127.0.0.1:9",
    monitor_labels=(("release", "kps"),),
    node_exporter_namespace="obs",
    node_exporter_selector=(("app", "ne"),),
    node_exporter_port="metrics",
)


def monitor(seconds: int = 1, node_label: str | None = None) -> dict[str, Any]:
    return cpu_monitor.build_cpu_monitor(
        RUN,
        seconds,
        exporter_namespace="obs",
        exporter_selector={"app": "ne"},
        exporter_port="metrics",
        node_label=node_label,
        labels={"release": "kps"},
    )


def test_the_podmonitor_scrapes_node_exporter_at_the_runs_interval_under_its_own_job() -> None:
    pm = monitor(1)
    assert pm["kind"] == "PodMonitor" and pm["metadata"]["name"] == "r-cpu"
    assert pm["metadata"]["labels"]["release"] == "kps"  # what Prometheus selects monitors by
    assert pm["metadata"]["ownerReferences"][0]["uid"] == "u1"  # gone with the run
    spec = pm["spec"]
    assert spec["namespaceSelector"] == {"matchNames": ["obs"]}
    assert spec["selector"] == {"matchLabels": {"app": "ne"}}
    (endpoint,) = spec["podMetricsEndpoints"]
    assert (endpoint["port"], endpoint["interval"], endpoint["scrapeTimeout"]) == (
        "metrics",
        "1s",
        "1s",
    )
    # The run's queries select this job; the cluster's own node-exporter job is not summed in.
    assert endpoint["relabelings"] == [
        {"action": "replace", "targetLabel": "job", "replacement": "mongobench-cpu/ns/r"}
    ]
    keep = endpoint["metricRelabelings"][0]
    assert keep["action"] == "keep" and keep["regex"] == "node_cpu_seconds_total|node_uname_info"
    # Prometheus refuses a timeout above the interval; above 10 s its default is enough.
    assert monitor(30)["spec"]["podMetricsEndpoints"][0]["scrapeTimeout"] == "10s"


def test_a_label_node_mapping_gets_the_node_name_in_that_label() -> None:
    relabel = monitor(2, node_label="instance")["spec"]["podMetricsEndpoints"][0]["relabelings"]
    assert relabel[1] == {
        "action": "replace",
        "sourceLabels": ["__meta_kubernetes_pod_node_name"],
        "targetLabel": "instance",
    }


@pytest.mark.parametrize("seconds", [0, 61])
def test_a_resolution_outside_1_to_60_seconds_is_refused(seconds: int) -> None:
    spec = {"workloads": [{"name": "a"}], "monitoring": {"cpuResolutionSeconds": seconds}}
    with pytest.raises(SpecError, match=r"spec.monitoring.cpuResolutionSeconds: .* 1 to 60"):
        BenchmarkRunSpec.parse(spec)
    assert (
        BenchmarkRunSpec.parse({**spec, "monitoring": {}}).monitoring.cpu_resolution_seconds is None
    )


def _advance(
    kube: FakeKube, scraped: orchestrate.ScrapeProbe | None = None
) -> orchestrate.Outcome | None:
    """A pass of the run's controller with Prometheus configured (CONFIG)."""
    return orchestrate.advance(kube, NS, "r", CONFIG, Data(), scraped=scraped, clock=unit_clock)


def test_the_run_owns_its_podmonitor_from_its_start_to_its_end() -> None:
    kube = FakeKube(
        mongocluster(),
        benchmarkrun(repetitions=1, monitoring={"cpuResolutionSeconds": 1}),
        served=(PODMONITORS,),
    )
    _advance(kube)  # started: before the first Job
    pm = kube.get("PodMonitor", NS, "r-cpu")
    assert pm is not None
    assert pm["spec"]["podMetricsEndpoints"][0]["interval"] == "1s"
    assert pm["spec"]["namespaceSelector"] == {"matchNames": ["obs"]}
    assert cond.EVENT_CPU_RESOLUTION in kube.reasons()
    for index, phase in ((1, "load"), (2, "run")):
        report(kube, index, phase)
        finish_job(kube, index)
        outcome = _advance(kube)  # collected, then the next Job or the cleanup
    assert outcome is not None and outcome.phase == cond.RUN_SUCCEEDED
    assert kube.get("PodMonitor", NS, "r-cpu") is None
    assert kube.verbs("delete", "PodMonitor") == ["r-cpu"]


def test_without_a_podmonitor_api_the_run_goes_on_and_says_so() -> None:
    kube = FakeKube(
        mongocluster(), benchmarkrun(monitoring={"cpuResolutionSeconds": 1})
    )  # no Prometheus Operator
    _advance(kube)
    assert kube.verbs("apply", "PodMonitor") == []
    warned = [m for _, _, t, r, m in kube.events if r == cond.EVENT_CPU_RESOLUTION]
    assert warned and "no PodMonitor API" in warned[0]


def test_a_run_without_a_resolution_makes_no_podmonitor() -> None:
    kube = FakeKube(mongocluster(), benchmarkrun(), served=(PODMONITORS,))
    advance(kube)
    _advance(kube)
    assert kube.verbs("apply", "PodMonitor") == [] and kube.verbs("delete", "PodMonitor") == []


def test_the_first_job_waits_until_prometheus_has_the_runs_series() -> None:
    """The load's Job is created only once Prometheus has the fine job's series (asked by the
    job's name, only before a Job); without the option Prometheus is not asked."""
    kube = FakeKube(
        mongocluster(),
        benchmarkrun(repetitions=1, monitoring={"cpuResolutionSeconds": 1}),
        served=(PODMONITORS,),
    )
    asked: list[str] = []
    _advance(kube, lambda job: bool(asked.append(job)))  # started and prepared; not scraped
    assert asked == ["mongobench-cpu/ns/r"]
    assert kube.verbs("apply", "PodMonitor") == ["r-cpu"] and kube.verbs("apply", "Job") == []
    _advance(kube, lambda job: bool(asked.append(job)) or True)
    assert len(asked) == 2 and len(kube.verbs("apply", "Job")) == 1
    _advance(kube, lambda job: bool(asked.append(job)))  # the Job runs: nothing is asked
    assert len(asked) == 2

    plain = FakeKube(mongocluster(), benchmarkrun(repetitions=1), served=(PODMONITORS,))
    _advance(plain, lambda job: bool(asked.append(job)))
    assert len(asked) == 2 and len(plain.verbs("apply", "Job")) == 1
