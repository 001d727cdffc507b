"""mongobench's Grafana dashboards as code (grafana-foundation-sdk builders) and their JSON.

    python dashboards/generate.py           write dashboards/json/*.json and the chart's copy
    python dashboards/generate.py --check   exit 1 if a committed file differs from the code

The JSON is written with sorted keys and a fixed indent, so a change to the code shows as a
readable diff of the committed files. Every PromQL expression names only series that mongobench
or node-exporter really exports; e2e/local/tests/test_dashboards.py runs each one against a real
Prometheus scraping those exporters.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from grafana_foundation_sdk.builders import bargauge, stat, statetimeline, table, timeseries
from grafana_foundation_sdk.builders import common as common_b
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus as prom
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import prometheus as prom_models
from grafana_foundation_sdk.models.dashboard import (
    AnnotationContainer,
    AnnotationQuery,
    Dashboard,
    DashboardCursorSync,
    DataSourceRef,
    DataTransformerConfig,
    DynamicConfigValue,
    Panel,
    RowPanel,
    Threshold,
    ThresholdsMode,
    ValueMap,
    ValueMappingResult,
    VariableModel,
    VariableRefresh,
    VariableSort,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# Helm's .Files sees only files inside the chart, so the chart carries a copy.
OUTPUT_DIRS = (HERE / "json", REPO / "charts" / "mongobench" / "dashboards")

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
TAGS = ["mongobench"]

# Bar gauges, stats and tables show the newest value only; gauges of finished runs are constant.
LAST = ["lastNotNull"]


def render(board: Dashboard) -> str:
    """The committed form: sorted keys, two-space indent, trailing newline."""
    return json.dumps(board, cls=JSONEncoder, sort_keys=True, indent=2) + "\n"


# ---------------------------------------------------------------------------------------------
# Shared pieces


def datasource_variable() -> dash.DatasourceVariable:
    return dash.DatasourceVariable("datasource").label("Data source").type("prometheus")


def label_variable(
    name: str, label: str, query: str, *, multi: bool = True, include_all: bool = True
) -> dash.QueryVariable:
    """A variable from label_values(); "All" is the regex .*, which also matches series that
    lack the label (every panel filters with =~)."""
    var = (
        dash.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(query)
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
        .multi(multi)
        .include_all(include_all)
    )
    if include_all:
        var = var.all_value(".*")
    return var


def target(expr: str, legend: str = "", *, ref: str = "A", instant: bool = False) -> prom.Dataquery:
    query = prom.Dataquery().expr(expr).ref_id(ref).datasource(DATASOURCE)
    if legend:
        query = query.legend_format(legend)
    return query.instant() if instant else query.range()


def table_target(expr: str, ref: str) -> prom.Dataquery:
    return target(expr, ref=ref, instant=True).format(prom_models.PromQueryFormat.TABLE)


def thresholds(*steps: tuple[float | None, str]) -> dash.ThresholdsConfig:
    return (
        dash.ThresholdsConfig()
        .mode(ThresholdsMode.ABSOLUTE)
        .steps([Threshold(value=v, color=c) for v, c in steps])
    )


def legend() -> common_b.VizLegendOptions:
    return (
        common_b.VizLegendOptions()
        .display_mode(common.LegendDisplayMode.TABLE)
        .placement(common.LegendPlacement.BOTTOM)
        .show_legend(True)
        .calcs(["lastNotNull", "max"])
    )


def graph(title: str, description: str, unit: str, *targets: prom.Dataquery) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .legend(legend())
        .tooltip(common_b.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI))
        .fill_opacity(10)
        .span(12)
        .height(8)
    )
    for t in targets:
        panel = panel.with_target(t)
    return panel


def bars(title: str, description: str, unit: str, *targets: prom.Dataquery) -> bargauge.Panel:
    panel = (
        bargauge.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .orientation(common.VizOrientation.HORIZONTAL)
        .display_mode(common.BarGaugeDisplayMode.GRADIENT)
        .reduce_options(common_b.ReduceDataOptions().calcs(LAST).values(False))
        .min(0)
        .span(12)
        .height(9)
    )
    for t in targets:
        panel = panel.with_target(t)
    return panel


def single(title: str, description: str, unit: str, expr: str) -> stat.Panel:
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .reduce_options(common_b.ReduceDataOptions().calcs(LAST).values(False))
        .graph_mode(common.BigValueGraphMode.AREA)
        .with_target(target(expr, instant=False))
        .span(6)
        .height(4)
    )


def merged_table(
    title: str,
    description: str,
    queries: Sequence[tuple[str, str]],
    hide: Sequence[str] = (),
) -> table.Panel:
    """Instant table queries joined row-wise on their labels (Grafana's "merge"); each query's
    value column is renamed to its given column name."""
    refs = [chr(ord("A") + i) for i in range(len(queries))]
    panel = (
        table.Panel()
        .show_header(True)
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .span(24)
        .height(9)
        .with_transformation(DataTransformerConfig(id_val="merge", options={}))
        .with_transformation(
            DataTransformerConfig(
                id_val="organize",
                options={
                    "excludeByName": {name: True for name in ("Time", "__name__", *hide)},
                    "renameByName": {
                        f"Value #{ref}": column
                        for ref, (column, _) in zip(refs, queries, strict=True)
                    },
                },
            )
        )
    )
    for ref, (_, expr) in zip(refs, queries, strict=True):
        panel = panel.with_target(table_target(expr, ref))
    return panel


def row(title: str) -> dash.Row:
    return dash.Row(title)


def board(
    uid: str,
    title: str,
    description: str,
    variables: Sequence[Builder[VariableModel]],
    content: Sequence[Builder[Panel] | dash.Row],
    *,
    time_from: str = "now-1h",
    refresh: str = "1m",
) -> Dashboard:
    b = (
        dash.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(TAGS)
        .editable()
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .timezone("browser")
        .time(time_from, "now")
        .refresh(refresh)
        .with_variable(datasource_variable())
    )
    for v in variables:
        b = b.with_variable(v)
    for item in content:
        b = b.with_row(item) if isinstance(item, dash.Row) else b.with_panel(item)
    built = b.build()
    _number_panels(built)
    return built


def _number_panels(built: Dashboard) -> None:
    """Stable panel ids 1..n in layout order (Grafana would otherwise invent them)."""
    next_id = 1
    for p in built.panels or []:
        p.id_val = next_id
        next_id += 1
        if isinstance(p, RowPanel):
            for inner in p.panels:
                inner.id_val = next_id
                next_id += 1


# ---------------------------------------------------------------------------------------------
# a. Benchmark comparison: finished BenchmarkRuns side by side (operator's run gauges)

RUN_SEL = 'namespace=~"$namespace", run=~"$run", workload=~"$workload"'
RUN_BY = "{{run}} / {{workload}}"


def benchmark_comparison() -> Dashboard:
    mean = f"mongobench_run_throughput_ops_per_second{{{RUN_SEL}}}"
    sd = f"mongobench_run_throughput_sd_ops_per_second{{{RUN_SEL}}}"
    reps = f"mongobench_run_repetitions{{{RUN_SEL}}}"

    def latency(stat_name: str) -> str:
        # `stat` is dropped so the avg and p99 columns of one operation merge into one row.
        return (
            "max without (stat) "
            f'(mongobench_run_latency_microseconds{{{RUN_SEL}, stat="{stat_name}"}})'
        )

    variables = [
        label_variable(
            "namespace", "Namespace", "label_values(mongobench_run_repetitions, namespace)"
        ),
        label_variable(
            "run",
            "BenchmarkRun",
            'label_values(mongobench_run_repetitions{namespace=~"$namespace"}, run)',
        ),
        label_variable(
            "workload",
            "Workload",
            'label_values(mongobench_run_repetitions{namespace=~"$namespace", run=~"$run"}, '
            "workload)",
        ),
    ]
    content: list[Builder[Panel] | dash.Row] = [
        row("Throughput"),
        bars(
            "Mean throughput per run and workload",
            "Mean over the run's succeeded repetitions of each workload's throughput.",
            "ops",
            target(mean, RUN_BY, instant=True),
        ),
        bars(
            "Coefficient of variation (SD / mean)",
            "Run-to-run noise of the throughput: sample SD over the repetitions divided by "
            "their mean. Runs with one repetition have no SD and are absent.",
            "percentunit",
            target(f"{sd} / {mean}", RUN_BY, instant=True),
        ).thresholds(thresholds((None, "green"), (0.05, "yellow"), (0.1, "red"))),
        merged_table(
            "Throughput summary",
            "Mean, sample SD, coefficient of variation and n (succeeded repetitions) per run "
            "and workload, with the target's cluster, topology and platform.",
            [
                ("mean ops/s", mean),
                ("SD ops/s", sd),
                ("CV", f"{sd} / {mean}"),
                ("n", reps),
            ],
            hide=("job", "instance", "pod", "service", "container", "endpoint"),
        )
        .override_by_name("CV", [_unit("percentunit")])
        .override_by_name("mean ops/s", [_unit("ops")])
        .override_by_name("SD ops/s", [_unit("ops")]),
        bars(
            "Mean throughput by topology and platform",
            "Average over the selected runs of the mean throughput, per topology, platform "
            "and workload.",
            "ops",
            target(
                "avg by (topology, platform, workload) "
                f"(mongobench_run_throughput_ops_per_second{{{RUN_SEL}}})",
                "{{topology}} on {{platform}} / {{workload}}",
                instant=True,
            ),
        ),
        bars(
            "Runs per topology and platform",
            "How many of the selected runs each topology/platform/workload mean stands on.",
            "none",
            target(
                "count by (topology, platform, workload) "
                f"(mongobench_run_throughput_ops_per_second{{{RUN_SEL}}})",
                "{{topology}} on {{platform}} / {{workload}}",
                instant=True,
            ),
        ),
        row("Latency"),
        bars(
            "p99 latency per run, workload and operation",
            "Mean over the repetitions of each operation's p99 latency.",
            "µs",
            target(
                f'mongobench_run_latency_microseconds{{{RUN_SEL}, stat="p99"}}',
                "{{run}} / {{workload}} / {{operation}}",
                instant=True,
            ),
        ),
        bars(
            "Average latency per run, workload and operation",
            "Mean over the repetitions of each operation's average latency.",
            "µs",
            target(
                f'mongobench_run_latency_microseconds{{{RUN_SEL}, stat="avg"}}',
                "{{run}} / {{workload}} / {{operation}}",
                instant=True,
            ),
        ),
        merged_table(
            "Latency per operation",
            "Average and p99 latency (means over the repetitions) per run, workload and operation.",
            [("avg µs", latency("avg")), ("p99 µs", latency("p99"))],
            hide=("job", "instance", "pod", "service", "container", "endpoint"),
        )
        .override_by_name("avg µs", [_unit("µs")])
        .override_by_name("p99 µs", [_unit("µs")]),
    ]
    return board(
        "mongobench-benchmark-comparison",
        "mongobench / Benchmark comparison",
        "Finished BenchmarkRuns side by side: throughput mean, SD, CV and n per workload, "
        "latency per operation, and throughput by topology and platform (the operator's "
        "mongobench_run_* gauges).",
        variables,
        content,
        time_from="now-6h",
    )


def _unit(unit: str) -> DynamicConfigValue:
    return DynamicConfigValue(id_val="unit", value=unit)


# ---------------------------------------------------------------------------------------------
# b. Benchmark clients (live): the runner's --metrics-port series while a run is in progress

CLIENT_SEL = 'namespace=~"$namespace"'
# The live series carry no workload label: the client's info series (value 1) adds it, joined on
# the scrape target (instance, job), which identifies one client process in any scrape config.
CLIENT_JOIN = (
    " * on (instance, job) group_left (driver, phase, workload, client) "
    'mongobench_client_info{namespace=~"$namespace", workload=~"$workload", phase=~"$phase"}'
)


def clients(metric: str) -> str:
    return f"{metric}{{{CLIENT_SEL}}}{CLIENT_JOIN}"


def benchmark_clients() -> Dashboard:
    variables = [
        label_variable("namespace", "Namespace", "label_values(mongobench_client_info, namespace)"),
        label_variable(
            "workload",
            "Workload",
            'label_values(mongobench_client_info{namespace=~"$namespace"}, workload)',
        ),
        label_variable(
            "phase",
            "Phase",
            'label_values(mongobench_client_info{namespace=~"$namespace"}, phase)',
        ),
    ]
    content: list[Builder[Panel] | dash.Row] = [
        single(
            "Running clients",
            "Clients whose driver is running now.",
            "none",
            f"sum({clients('mongobench_client_running')})",
        ),
        single(
            "Throughput (all clients)",
            "Sum over the clients of their last status interval's throughput.",
            "ops",
            f"sum({clients('mongobench_client_throughput_ops_per_second')})",
        ),
        single(
            "Operations completed",
            "Operations completed so far, all clients and types.",
            "short",
            f"sum({clients('mongobench_client_operations')})",
        ),
        single(
            "Elapsed",
            "Seconds since the longest-running selected client started its driver.",
            "s",
            f"max({clients('mongobench_client_elapsed_seconds')})",
        ),
        graph(
            "Throughput per workload and phase",
            "Sum over the clients of the throughput of their last status interval.",
            "ops",
            target(
                "sum by (workload, phase) "
                f"({clients('mongobench_client_throughput_ops_per_second')})",
                "{{workload}} {{phase}}",
            ),
        ),
        graph(
            "Throughput per client",
            "Each client's throughput over its last status interval.",
            "ops",
            target(
                clients("mongobench_client_throughput_ops_per_second"),
                "{{workload}} {{phase}} client {{client}}",
            ),
        ),
        graph(
            "Operations per second by type",
            "Rate of completed operations by type, summed over the clients.",
            "ops",
            target(
                "sum by (operation, workload, phase) ("
                'rate(mongobench_client_operation_total{namespace=~"$namespace"}'
                f"[$__rate_interval]){CLIENT_JOIN})",
                "{{operation}} ({{workload}} {{phase}})",
            ),
        ),
        graph(
            "Operations completed",
            "Running total of operations per client (all types).",
            "short",
            target(clients("mongobench_client_operations"), "client {{client}} ({{workload}})"),
        ),
        row("Latency"),
        graph(
            "Average latency per operation (since start)",
            "Mean latency of all operations of a type since the client started.",
            "µs",
            target(
                clients("mongobench_client_latency_avg_microseconds"),
                "{{operation}} client {{client}}",
            ),
        ),
        graph(
            "Maximum latency per operation (since start)",
            "Largest latency of an operation type since the client started.",
            "µs",
            target(
                clients("mongobench_client_latency_max_microseconds"),
                "{{operation}} client {{client}}",
            ),
        ),
        graph(
            "Interval latency quantiles (worst client)",
            "p90, p99 and p99.9 of the last status interval; the maximum over the clients, "
            "since quantiles cannot be averaged.",
            "µs",
            target(
                "max by (operation, quantile) "
                f"({clients('mongobench_client_interval_latency_microseconds')})",
                "{{operation}} q{{quantile}}",
            ),
        ).span(24),
    ]
    return board(
        "mongobench-benchmark-clients",
        "mongobench / Benchmark clients (live)",
        "Live metrics of the running benchmark clients (runner --metrics-port): throughput, "
        "operations, latency per operation and running clients.",
        variables,
        content,
        time_from="now-30m",
        refresh="10s",
    )


# ---------------------------------------------------------------------------------------------
# c. Operator: reconcile rates, errors and durations

OP_SEL = 'kind=~"$kind"'


def operator() -> Dashboard:
    total = f"mongobench_reconciles_total{{{OP_SEL}}}"
    errors = f'mongobench_reconciles_total{{{OP_SEL}, outcome="error"}}'
    retries = f'mongobench_reconciles_total{{{OP_SEL}, outcome="retry"}}'
    buckets = f"mongobench_reconcile_duration_seconds_bucket{{{OP_SEL}}}"

    def quantile(q: str) -> str:
        return (
            f"histogram_quantile({q}, sum by (kind, handler, le) "
            f"(rate({buckets}[$__rate_interval])))"
        )

    variables = [
        label_variable("kind", "Resource kind", "label_values(mongobench_reconciles_total, kind)"),
    ]
    content: list[Builder[Panel] | dash.Row] = [
        single(
            "Operator replicas",
            "Operator processes exporting metrics (one active, the others on standby).",
            "none",
            "count(mongobench_operator_info)",
        ),
        single(
            "Reconciles/s",
            "Handler invocations per second, all kinds and outcomes.",
            "reqps",
            f"sum(rate({total}[$__rate_interval]))",
        ),
        single(
            "Errors/s",
            "Handler invocations per second that raised an error (retries not counted).",
            "reqps",
            f"sum(rate({errors}[$__rate_interval]))",
        ).thresholds(thresholds((None, "green"), (0.001, "red"))),
        single(
            "Error ratio",
            "Share of handler invocations that ended in an error.",
            "percentunit",
            f"sum(rate({errors}[$__rate_interval])) / sum(rate({total}[$__rate_interval]))",
        ).thresholds(thresholds((None, "green"), (0.01, "red"))),
        table.Panel()
        .show_header(True)
        .title("Operator version")
        .description("mongobench_operator_info: one row per operator process.")
        .datasource(DATASOURCE)
        .with_target(table_target("mongobench_operator_info", "A"))
        .with_transformation(
            DataTransformerConfig(
                id_val="organize",
                options={"excludeByName": {"Time": True, "Value": True, "__name__": True}},
            )
        )
        .span(24)
        .height(5),
        graph(
            "Reconciles/s by kind, handler and outcome",
            "Handler invocations per second; outcome is ok, retry (kopf TemporaryError), error,"
            " or skipped (an event the handler dropped without a reconcile).",
            "reqps",
            target(
                f"sum by (kind, handler, outcome) (rate({total}[$__rate_interval]))",
                "{{kind}}/{{handler}} {{outcome}}",
            ),
        ),
        graph(
            "Errors and retries/s by handler",
            "Invocations per second that raised (error) or asked to be retried (retry).",
            "reqps",
            target(
                f"sum by (kind, handler) (rate({errors}[$__rate_interval]))",
                "{{kind}}/{{handler}} error",
            ),
            target(
                f"sum by (kind, handler) (rate({retries}[$__rate_interval]))",
                "{{kind}}/{{handler}} retry",
                ref="B",
            ),
        ),
        graph(
            "Error ratio by handler",
            "Errors divided by all invocations of the handler.",
            "percentunit",
            target(
                f"sum by (kind, handler) (rate({errors}[$__rate_interval])) / "
                f"sum by (kind, handler) (rate({total}[$__rate_interval]))",
                "{{kind}}/{{handler}}",
            ),
        ),
        graph(
            "Handler duration p50 / p95",
            "Quantiles of one handler invocation's wall time, from the histogram's buckets.",
            "s",
            target(quantile("0.5"), "{{kind}}/{{handler}} p50"),
            target(quantile("0.95"), "{{kind}}/{{handler}} p95", ref="B"),
        ),
        graph(
            "Handler duration mean",
            "Mean wall time of one handler invocation.",
            "s",
            target(
                "sum by (kind, handler) (rate(mongobench_reconcile_duration_seconds_sum"
                f"{{{OP_SEL}}}[$__rate_interval])) / sum by (kind, handler) "
                f"(rate(mongobench_reconcile_duration_seconds_count{{{OP_SEL}}}"
                "[$__rate_interval]))",
                "{{kind}}/{{handler}}",
            ),
        ),
    ]
    return board(
        "mongobench-operator",
        "mongobench / Operator",
        "The operator's own metrics: reconciles by kind, handler and outcome, errors, handler "
        "durations and the running version.",
        variables,
        content,
    )


# ---------------------------------------------------------------------------------------------
# d. Nodes CPU: node-exporter's node_cpu_seconds_total, the shape of bench/profiles/resources.yaml

# As the profile's default "uname" node mapping: node_uname_info's nodename is the host name
# (the Kubernetes node name), whatever the scrape config made `instance`.
IDLE_MODE = 'mode="idle"'
SPLIT_MODES = 'mode=~"user|system|iowait|steal"'
NODE_JOIN = ' * on (instance, job) group_left (nodename) node_uname_info{nodename=~"$node"}'


def node_cpu(selector: str = "") -> str:
    """CPU-seconds per second per node (and per mode when the caller groups by it)."""
    matchers = f"{{{selector}}}" if selector else ""
    return f"rate(node_cpu_seconds_total{matchers}[$__rate_interval]){NODE_JOIN}"


def nodes_cpu() -> Dashboard:
    all_modes = f"sum by (nodename) ({node_cpu()})"
    idle = f"sum by (nodename) ({node_cpu(IDLE_MODE)})"
    split = f"sum by (nodename, mode) ({node_cpu(SPLIT_MODES)})"
    variables = [
        label_variable("node", "Node", "label_values(node_uname_info, nodename)"),
    ]
    content: list[Builder[Panel] | dash.Row] = [
        graph(
            "CPU busy per node",
            "100 - idle, in percent of all the node's CPUs; normalised by the total of all "
            "modes as mongobench's own CPU accounting does (iowait, steal, nice, irq count as "
            "busy).",
            "percent",
            target(f"100 * (1 - {idle} / {all_modes})", "{{nodename}}"),
        )
        .min(0)
        .max(100),
        graph(
            "CPU by mode (user / system / iowait / steal)",
            "The split mongobench reports per benchmark step, in percent of all the node's CPUs.",
            "percent",
            target(
                f"100 * {split} / ignoring (mode) group_left {all_modes}", "{{nodename}} {{mode}}"
            ),
        )
        .stacking(common_b.StackingConfig().mode(common.StackingMode.NORMAL))
        .min(0)
        .max(100),
        bars(
            "CPU busy now",
            "Latest busy percentage per node.",
            "percent",
            target(f"100 * (1 - {idle} / {all_modes})", "{{nodename}}", instant=True),
        )
        .max(100)
        .thresholds(thresholds((None, "green"), (70, "yellow"), (90, "red"))),
        bars(
            "CPUs per node",
            "Logical CPUs node-exporter reports per node.",
            "none",
            target(
                'count by (nodename) (node_cpu_seconds_total{mode="idle"} * on (instance, job) '
                'group_left (nodename) node_uname_info{nodename=~"$node"})',
                "{{nodename}}",
                instant=True,
            ),
        ),
    ]
    return board(
        "mongobench-nodes-cpu",
        "mongobench / Nodes CPU",
        "Per-node CPU utilisation with the user/system/iowait/steal split, from node-exporter "
        "(the same expressions' shape as the operator's CPU accounting profile).",
        variables,
        content,
    )


# ---------------------------------------------------------------------------------------------
# e. MongoDB cluster: mongodb_exporter's series per MongoCluster, replica set and member

# Pod labels the cluster's PodMonitor copies onto every series (podTargetLabels).
CLUSTER_LABEL = "mongobench_io_cluster"
REPLSET_LABEL = "mongobench_io_replset"
MONGO_SEL = (
    f'namespace=~"$namespace", {CLUSTER_LABEL}=~"$cluster", {REPLSET_LABEL}=~"$replset", '
    'pod=~"$member"'
)
# mongos pods belong to no replica set: sharding panels filter by cluster only.
CLUSTER_SEL = f'namespace=~"$namespace", {CLUSTER_LABEL}=~"$cluster"'
# replSetGetStatus myState / stateStr numbers (MongoDB's documented member states).
MEMBER_STATES = {
    0: ("STARTUP", "blue"),
    1: ("PRIMARY", "green"),
    2: ("SECONDARY", "light-green"),
    3: ("RECOVERING", "yellow"),
    5: ("STARTUP2", "blue"),
    6: ("UNKNOWN", "orange"),
    7: ("ARBITER", "purple"),
    8: ("DOWN", "red"),
    9: ("ROLLBACK", "orange"),
    10: ("REMOVED", "dark-red"),
}


def mongo(metric: str, selector: str = MONGO_SEL, extra: str = "") -> str:
    """A mongodb_exporter series filtered by the dashboard's variables (and ``extra``)."""
    return f"{metric}{{{selector}{', ' + extra if extra else ''}}}"


def mongo_rate(metric: str, by: str, extra: str = "", selector: str = MONGO_SEL) -> str:
    return f"sum by ({by}) (rate({mongo(metric, selector, extra)}[$__rate_interval]))"


def mongo_variables() -> list[dash.QueryVariable]:
    up = "mongodb_up"
    return [
        label_variable(
            "namespace", "Namespace", f'label_values({up}{{{CLUSTER_LABEL}!=""}}, namespace)'
        ),
        label_variable(
            "cluster",
            "MongoCluster",
            f'label_values({up}{{namespace=~"$namespace", {CLUSTER_LABEL}!=""}}, {CLUSTER_LABEL})',
        ),
        label_variable(
            "replset",
            "Replica set",
            f'label_values({up}{{namespace=~"$namespace", {CLUSTER_LABEL}=~"$cluster"}}, '
            f"{REPLSET_LABEL})",
        ),
        label_variable(
            "member",
            "Member",
            f'label_values({up}{{namespace=~"$namespace", {CLUSTER_LABEL}=~"$cluster", '
            f'{REPLSET_LABEL}=~"$replset"}}, pod)',
        ),
    ]


def member_state_timeline() -> statetimeline.Panel:
    mappings = [
        ValueMap(
            options={
                str(n): ValueMappingResult(text=text, color=color, index=i)
                for i, (n, (text, color)) in enumerate(MEMBER_STATES.items())
            }
        )
    ]
    return (
        statetimeline.Panel()
        .title("Member state over time")
        .description(
            "Each member's replica-set state as it reports it (replSetGetStatus myState): "
            "elections, rollbacks and members that fell out show as colour changes."
        )
        .datasource(DATASOURCE)
        .with_target(
            target(f"max by (pod) ({mongo('mongodb_mongod_replset_my_state')})", "{{pod}}")
        )
        .mappings(mappings)  # type: ignore[arg-type]
        .show_value(common.VisibilityMode.NEVER)
        .fill_opacity(80)
        .line_width(0)
        .span(24)
        .height(7)
    )


def mongodb_server_panels() -> list[Builder[Panel] | dash.Row]:
    """What the database does, on the cluster dashboard and the benchmark-run view alike."""
    ops = mongo_rate("mongodb_ss_opcounters", "legacy_op_type")
    return [
        row("Operations"),
        graph(
            "Operations by type",
            "opcounters (serverStatus): insert, query, update, delete, getmore and command "
            "operations per second, summed over the selected members.",
            "ops",
            target(ops, "{{legacy_op_type}}"),
        ),
        graph(
            "Document operations",
            "Documents inserted, returned, updated and deleted per second "
            "(serverStatus metrics.document): what the operations touched.",
            "ops",
            target(mongo_rate("mongodb_ss_metrics_document", "doc_op_type"), "{{doc_op_type}}"),
        ),
        graph(
            "Operations per member",
            "All opcounters per second, per member: where the load lands.",
            "ops",
            target(mongo_rate("mongodb_ss_opcounters", "pod"), "{{pod}}"),
        ),
        graph(
            "Average latency by operation type",
            "Server-side latency (serverStatus opLatencies): time spent per read, write and "
            "command, averaged over the rate interval.",
            "µs",
            target(
                f"{mongo_rate('mongodb_ss_opLatencies_latency', 'op_type')} / "
                f"{mongo_rate('mongodb_ss_opLatencies_ops', 'op_type')}",
                "{{op_type}}",
            ),
        ),
        row("Queues, connections and tickets"),
        graph(
            "Active readers and writers",
            "Clients performing reads and writes now (globalLock.activeClients).",
            "short",
            target(mongo("mongodb_ss_globalLock_activeClients_readers"), "{{pod}} readers"),
            target(
                mongo("mongodb_ss_globalLock_activeClients_writers"), "{{pod}} writers", ref="B"
            ),
        ),
        graph(
            "Queued readers and writers",
            "Operations waiting for a lock (globalLock.currentQueue): sustained queues mean "
            "the server, not the client, limits throughput.",
            "short",
            target(
                mongo("mongodb_ss_globalLock_currentQueue", extra='count_type=~"readers|writers"'),
                "{{pod}} {{count_type}}",
            ),
        ),
        graph(
            "Connections",
            "Open client connections per member (connections.current).",
            "short",
            target(mongo("mongodb_ss_connections", extra='conn_type="current"'), "{{pod}}"),
        ),
        graph(
            "WiredTiger tickets in use",
            "Read and write tickets out of the storage engine's pool "
            "(concurrentTransactions / queues.execution): all out means operations wait.",
            "short",
            target(mongo("mongodb_ss_wt_concurrentTransactions_out"), "{{pod}} {{txn_rw}}"),
            target(
                mongo("mongodb_ss_wt_concurrentTransactions_totalTickets"),
                "{{pod}} {{txn_rw}} total",
                ref="B",
            ),
        ),
        row("Network and memory"),
        graph(
            "Network in / out",
            "Bytes per second the members received and sent (serverStatus network).",
            "Bps",
            target(mongo_rate("mongodb_ss_network_bytesIn", "pod"), "{{pod}} in"),
            target(mongo_rate("mongodb_ss_network_bytesOut", "pod"), "{{pod}} out", ref="B"),
        ),
        graph(
            "Resident memory",
            "Resident set size of each mongod/mongos (serverStatus mem.resident, MiB).",
            "bytes",
            target(f"{mongo('mongodb_ss_mem_resident')} * 1024 * 1024", "{{pod}}"),
        ),
        row("WiredTiger cache"),
        graph(
            "Cache used and dirty",
            "Bytes in the WiredTiger cache and the dirty part of them, against the configured "
            "maximum (storage.wiredTigerCacheSizeGB).",
            "bytes",
            target(mongo("mongodb_ss_wt_cache_bytes_currently_in_the_cache"), "{{pod}} used"),
            target(
                mongo("mongodb_ss_wt_cache_tracked_dirty_bytes_in_the_cache"),
                "{{pod}} dirty",
                ref="B",
            ),
            target(
                mongo("mongodb_ss_wt_cache_maximum_bytes_configured"), "{{pod}} maximum", ref="C"
            ),
        ),
        graph(
            "Read into cache",
            "Bytes per second read from disk into the cache: reads the cache could not serve "
            "(cache misses), the storage I/O a benchmark pays for.",
            "Bps",
            target(mongo_rate("mongodb_ss_wt_cache_bytes_read_into_cache", "pod"), "{{pod}}"),
        ),
    ]


def mongodb_cluster() -> Dashboard:
    content: list[Builder[Panel] | dash.Row] = [
        single(
            "Members up",
            "Members (and mongos) whose exporter reaches them.",
            "none",
            f"sum({mongo('mongodb_up')})",
        ),
        single(
            "Members down",
            "Members whose exporter answers but cannot reach them.",
            "none",
            f"count({mongo('mongodb_up')} == 0) or vector(0)",
        ).thresholds(thresholds((None, "green"), (1, "red"))),
        single(
            "Primaries",
            "Members that report themselves PRIMARY: one per replica set.",
            "none",
            f"count({mongo('mongodb_mongod_replset_my_state')} == 1)",
        ),
        single(
            "Max replication lag",
            "The largest lag of a secondary behind its primary, over the selected sets.",
            "s",
            f"max({mongo('mongodb_mongod_replset_member_replication_lag')})",
        ).thresholds(thresholds((None, "green"), (10, "yellow"), (30, "red"))),
        *mongodb_server_panels(),
        row("Replication"),
        graph(
            "Replication lag per member",
            "How far each secondary's last applied operation is behind its primary's, as "
            "the members report it (the MongoDBReplicationLagHigh alert's series).",
            "s",
            target(
                f"max by (set, name) ({mongo('mongodb_mongod_replset_member_replication_lag')})",
                "{{set}} {{name}}",
            ),
        ),
        graph(
            "Oplog window per member",
            "Time between the oldest and the newest entry of each member's oplog: a secondary "
            "that falls further behind than this needs a full resync.",
            "s",
            target(
                f"{mongo('mongodb_mongod_replset_oplog_head_timestamp')} - "
                f"{mongo('mongodb_mongod_replset_oplog_tail_timestamp')}",
                "{{pod}}",
            ),
        ),
        member_state_timeline(),
        row("Sharding"),
        bars(
            "Chunks per shard",
            "Chunks of all sharded collections on each shard, as the mongos routers see the "
            "config servers (balance: similar bars).",
            "none",
            target(
                "max by (shard) "
                f"({mongo('mongodb_mongos_sharding_shard_chunks_total', CLUSTER_SEL)})",
                "{{shard}}",
                instant=True,
            ),
        ),
        graph(
            "Chunk moves (last 10 minutes)",
            "Migrations and splits the config servers' changelog recorded in the last 10 "
            "minutes (moveChunk.commit is a finished migration).",
            "short",
            target(
                "max by (event) "
                f"({mongo('mongodb_mongos_sharding_changelog_10min_total', CLUSTER_SEL)})",
                "{{event}}",
            ),
        ),
        row("Slow operations"),
        graph(
            "Slow operations (profiler)",
            "Operations the profiler recorded in the last 30 s per member and database "
            "(needs profiling level 1 and slowms on the mongod).",
            "short",
            target(
                f"sum by (pod, database) ({mongo('mongodb_profile_slow_query_count')})",
                "{{pod}} {{database}}",
            ),
        ),
        graph(
            "Operations running longer than a minute",
            "Active operations (currentOp) that have run for over a minute, by member, type "
            "and namespace, with how long they have run.",
            "µs",
            target(
                f"max by (pod, op, ns) ({mongo('mongodb_currentop_query_uptime')})",
                "{{pod}} {{op}} {{ns}}",
            ),
        ),
    ]
    return board(
        "mongobench-mongodb-cluster",
        "mongobench / MongoDB cluster",
        "One MongoCluster from mongodb_exporter's series: operations, latency, queues, "
        "connections, tickets, network, memory, WiredTiger cache, replication, sharding and "
        "slow operations, per replica set and member.",
        mongo_variables(),
        content,
    )


# ---------------------------------------------------------------------------------------------
# f. Benchmark run: what the database did during each step of a BenchmarkRun


class PromAnnotation(AnnotationQuery):
    """A Prometheus annotation query. The SDK's AnnotationQuery model lacks the keys Grafana's
    Prometheus data source reads (titleFormat, textFormat, tagKeys, step); this adds them."""

    def __init__(self, name: str, expr: str, *, title: str, text: str, tags: str) -> None:
        super().__init__(
            name=name, datasource=DATASOURCE, enable=True, icon_color="purple", expr=expr
        )
        self.title_format, self.text_format, self.tag_keys = title, text, tags

    def to_json(self) -> dict[str, object]:
        return {
            **super().to_json(),
            "titleFormat": self.title_format,
            "textFormat": self.text_format,
            "tagKeys": self.tag_keys,
            "step": "15s",
        }


STEP_ANNOTATION = (
    "max by (run, step, workload) "
    '(mongobench_run_step_running{namespace=~"$namespace", run=~"$run"})'
)


def benchmark_run() -> Dashboard:
    variables = [
        label_variable("namespace", "Namespace", "label_values(mongobench_run_phase, namespace)"),
        label_variable(
            "run",
            "BenchmarkRun",
            'label_values(mongobench_run_phase{namespace=~"$namespace"}, run)',
            multi=False,
            include_all=False,
        ),
        label_variable(
            "cluster",
            "MongoCluster",
            f'label_values(mongodb_up{{namespace=~"$namespace", {CLUSTER_LABEL}!=""}}, '
            f"{CLUSTER_LABEL})",
        ),
        # Hidden: the server panels filter by them; the run view shows the whole cluster.
        dash.ConstantVariable("replset").value(".*"),
        dash.ConstantVariable("member").value(".*"),
    ]
    content: list[Builder[Panel] | dash.Row] = [
        graph(
            "Client throughput",
            "Operations per second the run's benchmark clients report (runner --metrics-port), "
            "summed over the clients, per workload and phase.",
            "ops",
            target(
                "sum by (workload, phase) ("
                'mongobench_client_throughput_ops_per_second{namespace=~"$namespace"} '
                "* on (instance, job) group_left (workload, phase) "
                'mongobench_client_info{namespace=~"$namespace"})',
                "{{workload}} {{phase}}",
            ),
        ),
        graph(
            "Run phase",
            "The BenchmarkRun's phase over time (1 while in it).",
            "none",
            target('mongobench_run_phase{namespace=~"$namespace", run=~"$run"}', "{{phase}}"),
        ),
        *mongodb_server_panels(),
        row("Replication"),
        graph(
            "Replication lag per member",
            "How far each secondary is behind its primary during the run.",
            "s",
            target(
                f"max by (set, name) ({mongo('mongodb_mongod_replset_member_replication_lag')})",
                "{{set}} {{name}}",
            ),
        ),
    ]
    built = board(
        "mongobench-benchmark-run",
        "mongobench / Benchmark run",
        "What the database did during each step of a BenchmarkRun: the run's steps as "
        "annotations (mongobench_run_step_running) over the MongoDB server panels of its "
        "cluster and the clients' throughput.",
        variables,
        content,
        time_from="now-3h",
        refresh="30s",
    )
    built.annotations = AnnotationContainer(
        list_val=[
            PromAnnotation(
                "BenchmarkRun steps",
                STEP_ANNOTATION,
                title="{{step}}",
                text="{{run}} workload {{workload}}",
                tags="workload",
            )
        ]
    )
    return built


# ---------------------------------------------------------------------------------------------

DASHBOARDS: dict[str, Callable[[], Dashboard]] = {
    "benchmark-comparison": benchmark_comparison,
    "benchmark-clients": benchmark_clients,
    "operator": operator,
    "nodes-cpu": nodes_cpu,
    "mongodb-cluster": mongodb_cluster,
    "benchmark-run": benchmark_run,
}


def generate() -> dict[str, str]:
    """File name -> committed text, for every dashboard."""
    return {f"{name}.json": render(build()) for name, build in DASHBOARDS.items()}


def stale_files(dirs: Sequence[Path] = OUTPUT_DIRS) -> list[tuple[Path, str | None]]:
    """(path, text it should have, or None if it should not exist) for every file that differs
    from what the code generates."""
    files = generate()
    stale: list[tuple[Path, str | None]] = []
    for out in dirs:
        for name, text in files.items():
            path = out / name
            if not path.is_file() or path.read_text() != text:
                stale.append((path, text))
        existing = sorted(p.name for p in out.glob("*.json")) if out.is_dir() else []
        stale += [(out / name, None) for name in existing if name not in files]
    return stale


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def main(argv: Sequence[str] | None = None, dirs: Sequence[Path] = OUTPUT_DIRS) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="fail if committed JSON differs from the code"
    )
    args = parser.parse_args(argv)
    stale = stale_files(dirs)
    if args.check:
        if stale:
            print("dashboards out of date (run `python dashboards/generate.py`):", file=sys.stderr)
            for path, text in stale:
                why = "not generated by the code" if text is None else "differs or missing"
                print(f"  {_shown(path)}: {why}", file=sys.stderr)
            return 1
        return 0
    for path, text in stale:
        if text is None:
            path.unlink()
            print(f"removed {_shown(path)}")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {_shown(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
