"""`mongobench` (also `kubectl mongobench`): list, describe, watch, compare, export and report
BenchmarkRuns from the current kube context or from archives (S3 URLs, folders); calibrate
reads an A/A calibration experiment.

Bad input (an unknown run, an unreadable archive, runs that are not comparable) is one line on
stderr and exit code 2; `watch` exits 0 when the run Succeeded, 1 when it Failed; `history
--fail-on regression` exits 3 when the newest runs sit after an unacknowledged regression.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from mongobench_cli import options, render, selector, sources
from mongobench_results import calibration, compare, duet, stats
from mongobench_results import history as history_lib
from mongobench_results import provenance as provenance_

EXIT_BAD_INPUT = 2
# `history --fail-on regression`: a change for the worse nobody acknowledged (1 stays an error).
EXIT_REGRESSION = 3

app = typer.Typer(
    name="mongobench",
    help=__doc__,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


def console(stderr: bool = False) -> Console:
    """A terminal console; wide when writing to a file or pipe, so tables do not fold."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else int(os.environ.get("COLUMNS", "220"))
    return Console(file=stream, width=width, highlight=False)


class UserError(Exception):
    pass


F = TypeVar("F", bound=Callable[..., Any])


def one_line_errors(fn: F) -> F:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (
            sources.SourceError,
            compare.ComparisonError,
            calibration.CalibrationError,
            UserError,
        ) as exc:
            message = " ".join(str(exc).split())
            console(stderr=True).print(
                f"error: {message}", style="red", markup=False, soft_wrap=True
            )
            raise typer.Exit(EXIT_BAD_INPUT) from None
        except KeyboardInterrupt:
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


# --- options shared by the commands, spelled as kubectl spells them ----------------------------

Context = Annotated[
    str | None, typer.Option("--context", help="kubeconfig context (default: the current one)")
]
Namespace = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="namespace (default: the context's, else default)"),
]
AllNamespaces = Annotated[
    bool, typer.Option("--all-namespaces", "-A", help="runs of every namespace")
]
Kubeconfig = Annotated[
    str | None,
    typer.Option("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)"),
]
Endpoint = Annotated[
    str | None,
    typer.Option(
        "--s3-endpoint",
        help="S3-compatible endpoint of s3:// archives (default: $AWS_ENDPOINT_URL_S3, AWS)",
    ),
]
Region = Annotated[str | None, typer.Option("--s3-region", help="S3 region (default: $AWS_REGION)")]


@dataclass(frozen=True)
class Target:
    """Where the commands read runs: the kube context's, or archives (s3:// or folders)."""

    context: Context = None
    namespace: Namespace = None
    kubeconfig: Kubeconfig = None
    s3_endpoint: Endpoint = None
    s3_region: Region = None

    def resolver(self) -> sources.Resolver:
        return resolver(
            context=self.context,
            namespace=self.namespace,
            all_namespaces=False,
            kubeconfig=self.kubeconfig,
            endpoint=self.s3_endpoint,
            region=self.s3_region,
        )


def resolver(
    *,
    context: str | None,
    namespace: str | None,
    all_namespaces: bool,
    kubeconfig: str | None,
    endpoint: str | None,
    region: str | None,
) -> sources.Resolver:
    return sources.Resolver(context, namespace, all_namespaces, kubeconfig, endpoint, region)


class ListFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


TableOutput = Annotated[ListFormat, typer.Option("--output", "-o")]


class DescribeFormat(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


class Test(StrEnum):
    welch = "welch"
    utest = "utest"


class Adjust(StrEnum):
    holm = "holm"
    bh = "bh"
    none = "none"


class Interval(StrEnum):
    parametric = "parametric"
    bootstrap = "bootstrap"


# --- list --------------------------------------------------------------------------------------


@app.command("list")
@one_line_errors
def list_runs(
    refs: Annotated[
        list[str] | None,
        typer.Argument(help="archive URLs or folders (default: the runs of the kube context)"),
    ] = None,
    *,
    output: TableOutput = ListFormat.table,
    label_selector: Annotated[
        str | None,
        typer.Option(
            "--selector",
            "-l",
            help="label selector on the runs' labels, as kubectl: KEY=VALUE, KEY!=VALUE, "
            "'KEY in (A,B)', 'KEY notin (A,B)', KEY, !KEY; comma-separated, all required",
        ),
    ] = None,
    spec_labels: Annotated[
        str | None,
        typer.Option(
            "--spec-label",
            help="the same selector syntax on the runs' spec.labels (the comparison labels)",
        ),
    ] = None,
    context: Context = None,
    namespace: Namespace = None,
    all_namespaces: AllNamespaces = False,
    kubeconfig: Kubeconfig = None,
    s3_endpoint: Endpoint = None,
    s3_region: Region = None,
) -> None:
    """Runs with phase, progress, target, topology, version, platform, labels, start, duration."""
    r = resolver(
        context=context,
        namespace=namespace,
        all_namespaces=all_namespaces,
        kubeconfig=kubeconfig,
        endpoint=s3_endpoint,
        region=s3_region,
    )
    labels, spec_selector = _selector(label_selector), _selector(spec_labels)
    runs = r.listing(refs or [], labels)
    if spec_selector is not None:
        runs = [x for x in runs if spec_selector.matches((x.run.get("spec") or {}).get("labels"))]
    rows = render.list_rows(runs)
    if _rows_written(rows, output):
        return
    if not rows:
        console(stderr=True).print("No BenchmarkRuns found.")
    else:
        console().print(render.list_table(rows, show_origin=bool(refs)))


def _rows_written(rows: list[dict[str, Any]], output: ListFormat) -> bool:
    """Rows as JSON, CSV or markdown when asked (True), else nothing (a table is wanted)."""
    if output == ListFormat.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif output == ListFormat.csv:
        sys.stdout.write(render.csv_text(rows))
    elif output == ListFormat.markdown:
        sys.stdout.write(render.rows_markdown(rows))
    else:
        return False
    return True


def _selector(text: str | None) -> selector.Selector | None:
    if text is None:
        return None
    try:
        return selector.parse(text)
    except selector.SelectorError as exc:
        raise UserError(str(exc)) from None


# --- describe ----------------------------------------------------------------------------------


def _one(r: sources.Resolver, ref: str) -> sources.LoadedRun:
    runs = r.resolve([ref])
    if len(runs) != 1:
        names = ", ".join(x.key for x in runs[:5])
        raise UserError(f"{ref} holds {len(runs)} runs ({names}...): name one run's folder")
    return runs[0]


@app.command()
@one_line_errors
@options.groups
def describe(
    run: Annotated[str, typer.Argument(help="run name (or namespace/name), archive URL or folder")],
    *,
    output: Annotated[DescribeFormat, typer.Option("--output", "-o")] = DescribeFormat.table,
    target: Target,
) -> None:
    """The plan, per-step results, per-workload summary, CPU, cluster snapshot, conditions and
    warnings of one run; of an experiment (experiment/NAME): its cells, deploy timings and
    comparison."""
    experiment = sources.experiment_name(run)
    if experiment is not None:
        from mongobench_cli import experiment as experiments  # noqa: PLC0415

        obj = target.resolver().kube().experiment(experiment)
        if output == DescribeFormat.json:
            sys.stdout.write(json.dumps(obj, indent=2) + "\n")
        elif output == DescribeFormat.yaml:
            sys.stdout.write(render.yaml_dump(obj))
        else:
            console().print(experiments.describe(obj))
        return
    loaded = _one(target.resolver(), run)
    if output == DescribeFormat.json:
        sys.stdout.write(json.dumps(loaded.run, indent=2) + "\n")
    elif output == DescribeFormat.yaml:
        sys.stdout.write(render.yaml_dump(loaded.run))
    else:
        console().print(render.describe(loaded))


@app.command("deploy-times")
@one_line_errors
@options.groups
def deploy_times(
    ref: Annotated[str, typer.Argument(help="experiment/NAME (live), or an archive URL or folder")],
    *,
    output: TableOutput = ListFormat.table,
    target: Target,
) -> None:
    """An experiment's deploy-time table, from the live object or from its summary in the
    archive (written when it ended): a row per cell (one factor at a time: the factor varied
    and its value, the baseline first; a factorial: every dimension's value), the pods
    deployed, the deployments averaged and the mean seconds to provisioned, configured and
    Ready."""
    from mongobench_cli import experiment as experiments  # noqa: PLC0415

    name = sources.experiment_name(ref)
    r = target.resolver()
    if name is not None:
        objs = [r.kube().experiment(name)]
    elif sources.is_archive_ref(ref):
        objs = sources.archive_experiments(ref, endpoint_url=r.endpoint_url, region=r.region)
    else:
        raise UserError(f"{ref}: give experiment/NAME or an archive URL or folder")
    for obj in objs:
        rows = experiments.deploy_table(obj)
        title = (
            f"Deploy times: experiment {obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
        )
        if output == ListFormat.json:
            sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        elif output == ListFormat.csv:
            sys.stdout.write(render.csv_text(rows, [title]))
        elif output == ListFormat.markdown:
            sys.stdout.write(render.rows_markdown(rows))
        else:
            console().print(experiments.deploy_rich(rows, title))


# --- watch -------------------------------------------------------------------------------------


@app.command()
@one_line_errors
def watch(
    run: Annotated[str, typer.Argument(help="run name (or namespace/name)")],
    *,
    interval: Annotated[float, typer.Option(help="seconds between polls")] = 2.0,
    timeout: Annotated[
        float | None, typer.Option(help="give up after this many seconds (exit 3)")
    ] = None,
    prometheus: Annotated[
        str | None,
        typer.Option(
            envvar="MONGOBENCH_PROMETHEUS_URL",
            help="Prometheus URL for the clients' live throughput",
        ),
    ] = None,
    context: Context = None,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
) -> None:
    """Live progress until the run (or experiment/NAME) ends: exit 0 when it Succeeded, 1 when
    it Failed, 3 when it was deleted or --timeout passed."""
    from mongobench_cli import watch as watching  # noqa: PLC0415

    kube = sources.KubeSource(context, namespace, False, kubeconfig)
    experiment = sources.experiment_name(run)
    if experiment is not None:
        from mongobench_cli import experiment as experiments  # noqa: PLC0415

        kube.experiment(experiment)  # unknown: one line, exit 2
        raise typer.Exit(
            experiments.follow(
                lambda: _experiment_or_none(kube, experiment),
                console(),
                interval=interval,
                timeout=timeout,
            )
        )
    kube.get_object(run)  # an unknown run is bad input: one line, exit 2

    def fetch() -> dict[str, Any] | None:
        try:
            return kube.get_object(run)
        except sources.SourceError as exc:
            if "not found" in str(exc):
                return None
            raise

    code = watching.follow(
        fetch, console(), interval=interval, timeout=timeout, prometheus=prometheus
    )
    raise typer.Exit(code)


def _experiment_or_none(kube: sources.KubeSource, name: str) -> dict[str, Any] | None:
    try:
        return kube.experiment(name)
    except sources.SourceError as exc:
        if "not found" in str(exc):
            return None
        raise


# --- compare -----------------------------------------------------------------------------------


def _comparison(
    r: sources.Resolver, refs: list[str], runs: list[sources.LoadedRun], how: Comparing
) -> compare.Comparison:
    group_by, baseline, varied = _experiment_defaults(r, refs, how.group_by, how.baseline)
    varied += _varied_by_runs(runs)
    result = compare.compare(
        [compare.RunInput(r.key, r.run) for r in runs],
        baseline=baseline,
        group_by=group_by,
        metrics=tuple(how.metric or compare.DEFAULT_METRICS),
        **_method(how, varied),
    )
    _refuse_incomparable(result.incomparable, how)
    return result


def _varied_by_runs(runs: list[sources.LoadedRun]) -> list[str]:
    from mongobench_cli import experiment as experiments  # noqa: PLC0415

    return experiments.varied_by_runs(x.run for x in runs)


def _method(how: Comparing, varied: list[str]) -> compare.Method:
    """The options of method compare and the paired table share."""
    alpha, confidence = how.verdict.alpha, how.confidence
    if not 0 < alpha < 1 or not 0 < confidence < 1:
        raise UserError("--alpha and --confidence must lie between 0 and 1")
    return compare.Method(
        alpha=alpha,
        confidence=confidence,
        test=how.verdict.test_name,
        adjust="holm" if how.adjust == Adjust.holm else "bh" if how.adjust == Adjust.bh else "none",
        ci="bootstrap" if how.ci == Interval.bootstrap else "parametric",
        include_invalid=how.include_invalid,
        varied=varied,
    )


def _refuse_incomparable(incomparable: list[str], how: Comparing) -> None:
    if incomparable and not how.allow_incomparable:
        more = f" (and {len(incomparable) - 1} more)" if len(incomparable) > 1 else ""
        raise UserError(
            f"runs are not comparable: {incomparable[0]}{more}; "
            "--allow-incomparable shows them flagged"
        )


def _experiment_defaults(
    r: sources.Resolver, refs: list[str], group_by: str | None, baseline: str | None
) -> tuple[str | None, str | None, list[str]]:
    """An experiment's runs compare by cell against its baseline unless the user says else;
    the run fields its dimensions vary (a write concern, a thread count) differ by design."""
    from mongobench_cli import experiment as experiments  # noqa: PLC0415

    named = [n for n in map(sources.experiment_name, refs) if n is not None]
    objs = [r.kube().experiment(n) for n in named] or _archived_experiments(r, refs)
    if not objs:
        return group_by, baseline, []
    if group_by is None:
        group_by = experiments.CELL_LABEL
        if baseline is None:
            baseline = experiments.baseline(objs[0])
    return group_by, baseline, [f for obj in objs for f in experiments.run_dimensions(obj)]


def _archived_experiments(r: sources.Resolver, refs: list[str]) -> list[dict[str, Any]]:
    """The summaries of the experiments archived under the refs (written when each ended; none
    under a run's folder): their runs compare as the live experiment's do."""
    found: list[dict[str, Any]] = []
    for ref in refs:
        if sources.is_archive_ref(ref):
            try:
                found += sources.archive_experiments(
                    ref, endpoint_url=r.endpoint_url, region=r.region
                )
            except sources.SourceError:
                continue
    return found


Baseline = Annotated[
    str | None,
    typer.Option(help="configuration (or run) the others are compared with (default: the first)"),
]
GroupBy = Annotated[
    str | None,
    typer.Option(
        "--group-by",
        help="pool runs into configurations by a spec label or a target dimension "
        f"({', '.join(compare.DIMENSIONS)}); several keys separated by commas (cloud,shards) "
        "pool by their combination",
    ),
]
Metrics = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        help=f"repeatable; from {', '.join(compare.METRIC_CHOICES)} "
        f"(default: {', '.join(compare.DEFAULT_METRICS)})",
    ),
]
TestOpt = Annotated[
    Test, typer.Option("--test", help="test behind the verdict: welch (mean) or utest (rank)")
]
Alpha = Annotated[float, typer.Option(help="significance level of the verdict")]
Confidence = Annotated[float, typer.Option(help="confidence level of the intervals")]
AllowIncomparable = Annotated[
    bool,
    typer.Option(help="compare runs whose workload parameters differ (rows flagged)"),
]
AdjustOpt = Annotated[
    Adjust,
    typer.Option(
        "--adjust",
        help="multiple comparisons: the table's p-values adjusted together before the verdicts "
        "(holm: family-wise error, bh: Benjamini-Hochberg false discovery rate, none)",
    ),
]
IntervalOpt = Annotated[
    Interval,
    typer.Option(
        "--ci",
        help="interval of the change: parametric (Welch; Fieller for the relative change) or "
        f"bootstrap (percentile, {stats.BOOTSTRAP_RESAMPLES} resamples, seed "
        f"{stats.BOOTSTRAP_SEED})",
    ),
]
IncludeInvalid = Annotated[
    bool,
    typer.Option(help="keep the trials the operator judged invalid in the statistics (flagged)"),
]


@dataclass(frozen=True)
class Verdict:
    """The test behind a verdict and its level: compare's, report's and calibrate's."""

    test: TestOpt = Test.welch
    alpha: Alpha = stats.DEFAULT_ALPHA

    @property
    def test_name(self) -> compare.Test:
        return "utest" if self.test == Test.utest else "welch"


@dataclass(frozen=True)
class Comparing:
    """How compare and report pool, test and show runs."""

    baseline: Baseline = None
    group_by: GroupBy = None
    metric: Metrics = None
    verdict: Verdict = field(default_factory=Verdict)  # --test and --alpha, here in --help
    confidence: Confidence = stats.DEFAULT_CONFIDENCE
    allow_incomparable: AllowIncomparable = False
    adjust: AdjustOpt = Adjust.holm
    ci: IntervalOpt = Interval.parametric
    include_invalid: IncludeInvalid = False


@app.command("compare")
@one_line_errors
@options.groups
def compare_runs(
    refs: Annotated[list[str], typer.Argument(help="run names, archive URLs or folders")],
    *,
    how: Comparing,
    output: TableOutput = ListFormat.table,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            help="the full table (mean, SD, CI, p-values, Hedges' g, flags) instead of the "
            "compact one",
        ),
    ] = False,
    pair_by: Annotated[
        str | None,
        typer.Option(
            "--pair-by",
            help="one of the --group-by keys: within each value of the others (a topology), "
            "its --baseline-value against each other value, per workload, in one table (one "
            "--metric, default throughput): the studies' AWS-vs-OpenStack layout",
        ),
    ] = None,
    baseline_value: Annotated[
        str | None,
        typer.Option(
            "--baseline-value",
            help="with --pair-by: the value the others are compared with (e.g. aws)",
        ),
    ] = None,
    shards: Annotated[
        bool,
        typer.Option(
            "--shards",
            help="instead: per sharded run (its configuration, e.g. an experiment's cell, and "
            "its shard key), the documents and chunks of each shard after its last load: the "
            "shard-key study's table",
        ),
    ] = False,
    target: Target,
) -> None:
    """Per configuration a headline against the baseline, then per workload and metric the
    verdict with its change and interval and the valid trials, within 100 columns; invalid
    trials' reasons with what to change. --wide and -o csv|json|markdown: mean, SD, n, CI,
    Welch and rank-test p-values, the p-value adjusted for the table's comparisons (Holm by
    default), Hedges' g and a benchstat-style verdict ("~" where the change is not significant
    after adjustment). Trials judged invalid are left out unless --include-invalid. An
    experiment (experiment/NAME) brings its runs, grouped by cell, against its baseline cell.
    One configuration alone (nothing to compare it with): its figures per workload and metric
    (mean, SD, interval, n, CV), as describe's summary.
    --pair-by: the paired table instead (Hedges' g with the small-sample correction)."""
    r = target.resolver()
    if shards:
        if pair_by is not None or baseline_value is not None:
            raise UserError("--shards draws the shard distribution alone: leave out --pair-by")
        _shards(r.resolve(refs), output)
        return
    if pair_by is not None or baseline_value is not None:
        _pairs_check(how, pair_by, baseline_value)
        _pairs_out(
            r, refs, how, pair_by=pair_by or "", baseline_value=baseline_value or "", output=output
        )
        return
    runs = r.resolve(refs)
    result = _comparison(r, refs, runs, how)
    differences = _provenance_differences(result, runs)
    paired = _duet(runs)
    if output == ListFormat.json:
        sys.stdout.write(render.compare_json(result, differences, paired))
    elif output == ListFormat.csv:
        sys.stdout.write(render.compare_csv(result, differences))
    elif output == ListFormat.markdown:
        sys.stdout.write(render.compare_markdown(result, differences))
    else:
        _compare_tables(result, runs, differences, wide=wide)
        if paired is not None:
            console().print(render.duet_table(paired.to_dict()))


def _duet(runs: list[sources.LoadedRun]) -> duet.Result | None:
    """The paired comparison of the duet runs among these (order Duet), None without any."""
    from mongobench_cli.experiment import CELL_LABEL  # noqa: PLC0415

    sides: dict[int, str] = {}
    for lr in runs:
        spec = lr.run.get("spec") or {}
        if spec.get("duet"):
            side = int(spec["duet"]["side"])
            name = (spec.get("labels") or {}).get(CELL_LABEL) or "AB"[side]
            sides.setdefault(side, str(name))
    if not sides:
        return None
    return duet.compare([lr.run for lr in runs], sides.get(0, "A"), sides.get(1, "B"))


def _compare_tables(
    result: compare.Comparison,
    runs: list[sources.LoadedRun],
    differences: list[provenance_.Difference],
    *,
    wide: bool,
) -> None:
    if wide:
        console().print(render.compare_table(result))
    elif len(result.configurations) < 2:
        # Nothing to judge against: its figures are the answer (a study's own table).
        console().print(render.summary_table(result))
    else:
        console().print(render.compare_compact(result))
    distribution = render.distribution_summary(runs)
    if distribution is not None:
        console().print(distribution)
    for line in render.provenance_differences(differences, result.baseline):
        console().print(line)


def _pairs_out(
    r: sources.Resolver,
    refs: list[str],
    how: Comparing,
    *,
    pair_by: str,
    baseline_value: str,
    output: ListFormat,
) -> None:
    runs = r.resolve(refs)
    paired = _paired(r, refs, runs, how, pair_by=pair_by, baseline_value=baseline_value)
    writers = {
        ListFormat.json: render.pairs_json,
        ListFormat.csv: render.pairs_csv,
        ListFormat.markdown: render.pairs_markdown,
    }
    if output in writers:
        sys.stdout.write(writers[output](paired))
    else:
        console().print(render.pairs_table(paired))


def _shards(runs: list[sources.LoadedRun], output: ListFormat) -> None:
    rows = render.shard_rows(runs)
    if not rows:
        raise UserError("no sharded run with a shard distribution among these runs")
    if not _rows_written(rows, output):
        console().print(render.shards_table(rows))


def _pairs_check(how: Comparing, pair_by: str | None, baseline_value: str | None) -> None:
    """The paired table's options, refused before anything is read."""
    if pair_by is None:
        raise UserError("--baseline-value needs --pair-by (the key whose values it names)")
    if baseline_value is None:
        raise UserError(f"--pair-by {pair_by} needs --baseline-value (one of its values)")
    if how.group_by is None:
        raise UserError(f"--pair-by {pair_by} needs --group-by with {pair_by} among its keys")
    if how.baseline is not None:
        raise UserError("--baseline names a configuration; with --pair-by use --baseline-value")
    if len(how.metric or ()) > 1:
        raise UserError("--pair-by draws one metric a table: give --metric once")


def _paired(
    r: sources.Resolver,
    refs: list[str],
    runs: list[sources.LoadedRun],
    how: Comparing,
    *,
    pair_by: str,
    baseline_value: str,
) -> compare.Pairs:
    _, _, varied = _experiment_defaults(r, refs, how.group_by, None)
    varied += _varied_by_runs(runs)
    result = compare.pairs(
        [compare.RunInput(x.key, x.run) for x in runs],
        group_by=how.group_by or "",
        pair_by=pair_by,
        baseline_value=baseline_value,
        metric=(how.metric or ["throughput"])[0],
        **_method(how, varied),
    )
    _refuse_incomparable(result.incomparable, how)
    return result


def _provenance_differences(
    result: compare.Comparison, runs: list[sources.LoadedRun]
) -> list[provenance_.Difference]:
    """Which facts of what ran differ from the baseline's, per configuration."""
    by_key = sources.by_key(runs)
    return provenance_.differences(
        {
            c.name: [by_key[k].provenance() if k in by_key else None for k in c.run_keys]
            for c in result.configurations
        },
        result.baseline,
    )


# --- rerun -------------------------------------------------------------------------------------


@app.command()
@one_line_errors
def rerun(
    archive: Annotated[str, typer.Argument(help="an archived run: s3://... or a folder")],
    *,
    name: Annotated[
        str | None, typer.Option("--name", help="the new run's name (default NAME-rerun)")
    ] = None,
    target_namespace: Annotated[
        str | None,
        typer.Option("--target-namespace", help="namespace set on the manifests (default none)"),
    ] = None,
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", help="write mongocluster.yaml and benchmarkrun.yaml here"),
    ] = None,
    s3_endpoint: Endpoint = None,
    s3_region: Region = None,
) -> None:
    """The manifests (MongoCluster and BenchmarkRun, new names) that recreate an archived run
    from its provenance: the specs as they were resolved, images pinned by digest, seeds kept.
    To stdout as YAML documents, or into --output-dir; apply them with kubectl."""
    from mongobench_cli import rerun as reruns  # noqa: PLC0415

    _refuse(ref_problem("rerun", {"archive": archive}))
    found = sources.archive_runs(archive, endpoint_url=s3_endpoint, region=s3_region)
    if len(found) != 1:
        names = ", ".join(f"{r.namespace}/{r.name}" for r in found[:5])
        raise UserError(f"{archive} holds {len(found)} runs ({names}...): name one run's folder")
    (loaded,) = found
    prov = loaded.provenance_loader() if loaded.provenance_loader else None
    try:
        made = reruns.manifests(
            loaded.run, prov, loaded.cluster, name=name, namespace=target_namespace
        )
    except ValueError as exc:
        raise UserError(f"{archive}: {exc}") from exc
    for note in made.notes:
        console(stderr=True).print(f"note: {note}")
    if output_dir is None:
        sys.stdout.write("---\n".join(render.yaml_dump(o) for o in made.objects))
        return
    output_dir.mkdir(parents=True, exist_ok=True)
    for obj in made.objects:
        path = output_dir / f"{obj['kind'].lower()}.yaml"
        path.write_text(render.yaml_dump(obj))
        console(stderr=True).print(f"wrote {path}")


# --- export ------------------------------------------------------------------------------------


@app.command("export")
@one_line_errors
@options.groups
def export_runs(
    refs: Annotated[list[str], typer.Argument(help="run names, archive URLs or folders")],
    *,
    out: Annotated[str, typer.Option("--output", "-o", help="folder or s3://BUCKET/PREFIX")],
    target: Target,
) -> None:
    """steps.csv and steps.json (one row per step: configuration next to numbers) and every
    run in the archive layout (full result documents with HDR histograms, CPU)."""
    from mongobench_cli import export  # noqa: PLC0415

    runs = target.resolver().resolve(refs)
    counts = export.export(runs, out, endpoint_url=target.s3_endpoint, region=target.s3_region)
    console().print(
        f"exported {counts['runs']} runs, {counts['steps']} steps, "
        f"{counts['documents']} result documents to {out}",
        markup=False,
    )


# --- report ------------------------------------------------------------------------------------


@app.command("report")
@one_line_errors
@options.groups
def report_runs(
    refs: Annotated[list[str], typer.Argument(help="run names, archive URLs or folders")],
    *,
    out: Annotated[Path, typer.Option("--output", "-o", help="folder to write")],
    how: Comparing,
    calibration_ref: Annotated[
        str | None,
        typer.Option(
            "--calibration",
            help="the A/A calibration the study ran under (experiment/NAME); default: the one "
            f"its experiment's annotation {calibration.ANNOTATION} names",
        ),
    ] = None,
    target: Target,
) -> None:
    """One self-contained HTML file (report.html) plus PNG figures. It opens with the question
    (the configurations, what differs) and the answer (a headline per configuration, the
    changes with their intervals in a forest plot, the verdicts, what to change for invalid
    trials); then the figures: throughput and latency with CI error bars, latency percentile
    curves from the merged HDR histograms, CPU per node and step, scaling plots when the runs
    differ in one dimension, and the A/A calibration the study ran under (false-positive rate,
    minimum detectable effect) when there is one; then the tables, the warnings by kind and
    each run's trials."""
    sources.require_extra("matplotlib", "report", "mongobench report draws with matplotlib")
    from mongobench_cli import report  # noqa: PLC0415 - matplotlib loads only here

    _refuse(ref_problem("report", {"calibration_ref": calibration_ref}))
    r = target.resolver()
    runs = r.resolve(refs)
    # The report shows every role's CPU (cores) beside the default metrics.
    metric = how.metric or [*compare.DEFAULT_METRICS, *compare.ROLE_CPU_METRICS]
    result = _comparison(r, refs, runs, replace(how, metric=metric))
    experiments = [
        r.kube().experiment(n) for n in map(sources.experiment_name, refs) if n is not None
    ]
    # An archive's experiment summaries (written as each ended) bring their deploy times.
    for ref in filter(sources.is_archive_ref, refs):
        try:
            experiments += sources.archive_experiments(
                ref, endpoint_url=r.endpoint_url, region=r.region
            )
        except sources.SourceError:
            continue  # runs archived without their experiment
    from mongobench_cli import calibration as rendering  # noqa: PLC0415

    if calibration_ref is None:
        found = rendering.named(experiments)
        calibration_ref = f"experiment/{found}" if found else None
    calibrated = None
    if calibration_ref is not None:
        cal = _calibration(r, [calibration_ref], window=3, metric=None, verdict=how.verdict)
        calibrated = (calibration_ref, cal)
    written = report.write(runs, result, out, experiments, calibrated)
    console().print(f"wrote {written.html} and {len(written.figures)} figures", markup=False)


# --- object kinds --------------------------------------------------------------------------------


def ref_problem(command: str, params: Mapping[str, Any]) -> str | None:
    """Why a command's references name the wrong kind of object, told from their form alone
    (before any request), or None. `params` are the command's parsed parameters; the
    documentation's test calls this with what click parsed from each documented command."""
    if command == "rerun":
        archive = str(params.get("archive"))
        if not sources.is_archive_ref(archive):
            return f"{archive}: give an archived run (s3://BUCKET/PREFIX/... or a folder)"
    elif command == "calibrate":
        return _calibration_problem(list(params.get("refs") or []))
    elif command == "report" and params.get("calibration_ref"):
        return _calibration_problem([str(params["calibration_ref"])])
    return None


def _calibration_problem(refs: list[str]) -> str | None:
    # A name alone is a BenchmarkRun, one cell of the A/A pair: never a calibration. The user
    # meant the experiment (`mongobench calibrate NAME` looked up a run NAME, not found).
    if len(refs) != 1:
        return None
    (ref,) = refs
    if sources.is_archive_ref(ref) or sources.experiment_name(ref) is not None:
        return None
    return (
        f"{ref} names one BenchmarkRun, one cell of an A/A calibration: give the calibration "
        f"experiment, experiment/{ref} (or the runs of both its cells)"
    )


def _refuse(problem: str | None) -> None:
    if problem is not None:
        raise UserError(problem)


# --- calibrate ---------------------------------------------------------------------------------


Window = Annotated[
    int,
    typer.Option(
        help="rounds per A/A comparison: the n a side a study would use (false-positive rate "
        "and the MDE at that n)"
    ),
]
CalibrationMetrics = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        help=f"repeatable; from {', '.join(compare.METRIC_CHOICES)} "
        f"(default: {', '.join(calibration.DEFAULT_METRICS)})",
    ),
]


def _calibration(
    r: sources.Resolver,
    refs: list[str],
    *,
    window: int,
    metric: list[str] | None,
    verdict: Verdict,
) -> calibration.Calibration:
    if not 0 < verdict.alpha < 1:
        raise UserError("--alpha must lie between 0 and 1")
    runs = r.resolve(refs)
    return calibration.calibrate(
        [compare.RunInput(x.key, x.run) for x in runs],
        window=window,
        metrics=tuple(metric or calibration.DEFAULT_METRICS),
        alpha=verdict.alpha,
        test=verdict.test_name,
    )


@app.command("calibrate")
@one_line_errors
@options.groups
def calibrate(
    refs: Annotated[
        list[str],
        typer.Argument(help="the A/A calibration experiment (experiment/NAME), or its runs"),
    ],
    *,
    window: Window = calibration.DEFAULT_WINDOW,
    metric: CalibrationMetrics = None,
    verdict: Verdict,
    output: TableOutput = ListFormat.table,
    target: Target,
) -> None:
    """A/A calibration: from an experiment with `calibration: true` (the same configuration as
    cells calibration=a and calibration=b, on two clusters), per workload and metric: the
    false-positive rate of compare's verdicts over windows of rounds, and the minimum
    detectable effect at the observed noise (80% power, compare's alpha)."""
    _refuse(ref_problem("calibrate", {"refs": refs}))
    result = _calibration(target.resolver(), refs, window=window, metric=metric, verdict=verdict)
    from mongobench_cli import calibration as rendering  # noqa: PLC0415

    name = " ".join(refs)
    if output == ListFormat.json:
        sys.stdout.write(rendering.as_json(result, name))
    elif output == ListFormat.table:
        console().print(rendering.table(result, name))
    else:  # markdown (csv: the JSON has every figure)
        sys.stdout.write(rendering.markdown(result, name))


# --- completion --------------------------------------------------------------------------------

# The shells' scripts call `mongobench` back with this variable set (typer's completion protocol).
COMPLETE_VAR = "_MONGOBENCH_COMPLETE"


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


# --- history -----------------------------------------------------------------------------------


class FailOn(StrEnum):
    regression = "regression"


@app.command("history")
@one_line_errors
def history_cmd(
    archive: Annotated[str, typer.Argument(help="the archive: s3://BUCKET/PREFIX or a folder")],
    *,
    series: Annotated[
        list[str] | None,
        typer.Option(
            "--series",
            help="repeatable: a key the series are split by besides topology, workload and "
            "metric (a label of the runs, else a dimension: shards, members, version, ...)",
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            help=f"repeatable; from {', '.join(compare.METRIC_CHOICES)} "
            f"(default: {', '.join(history_lib.DEFAULT_METRICS)})",
        ),
    ] = None,
    max_pvalue: Annotated[
        float, typer.Option("--max-pvalue", help="significance of a change point (Otava's)")
    ] = history_lib.Method.max_pvalue,
    window: Annotated[
        int, typer.Option("--window", help="Otava's sliding window, in runs", min=4)
    ] = history_lib.Method.window,
    output: TableOutput = ListFormat.table,
    report_dir: Annotated[
        Path | None,
        typer.Option("--report", help="write DIR/history.html with a plot per series"),
    ] = None,
    grafana: Annotated[
        Path | None,
        typer.Option(
            "--grafana",
            help="write every point and change as flat JSON rows for Grafana's Infinity data "
            "source (the archive also keeps a copy: history/grafana.json)",
        ),
    ] = None,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="ignore the archive's cache and pass every run")
    ] = False,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="do not write the cache back to the archive")
    ] = False,
    fail_on: Annotated[
        FailOn | None,
        typer.Option(
            "--fail-on",
            help="regression: exit 3 when the newest runs sit after a change for the worse "
            "that no acknowledgement silences (a CI gate)",
        ),
    ] = None,
    acks: Annotated[
        list[Path] | None,
        typer.Option(
            "--acks",
            help="repeatable: a YAML file of acknowledged changes (acknowledgements: [{series, "
            "run, reason, by}]), besides the archive's history/acks.yaml",
        ),
    ] = None,
    s3_endpoint: Endpoint = None,
    s3_region: Region = None,
) -> None:
    """Every archived run's figures as time series per (topology, workload, metric) and any
    --series keys, in the order the runs started, and the change points in them (Apache Otava's
    E-Divisive means): the change of the mean, the runs either side, and the provenance fields
    that changed there. The series are cached in the archive (history/series.json) and updated
    with the runs archived since. Acknowledged changes (history/acks.yaml in the archive,
    --acks files) are shown apart and do not fail --fail-on regression."""
    from mongobench_cli import history as history_view  # noqa: PLC0415

    sources.require_extra("otava.analysis", "history", "mongobench history needs Apache Otava")
    if report_dir is not None:
        sources.require_extra("matplotlib", "report", "history --report draws with matplotlib")
    method = history_lib.Method(max_pvalue=max_pvalue, window=window)
    j = history_view.update(
        archive,
        series or [],
        metric or list(history_lib.DEFAULT_METRICS),
        method,
        acks=acks or [],
        endpoint_url=s3_endpoint,
        region=s3_region,
        rebuild=rebuild,
        write=not read_only,
    )
    u = j.update
    if grafana is not None:
        history_view.write_grafana(u, grafana)
    if report_dir is not None:
        from mongobench_cli import report  # noqa: PLC0415 - matplotlib loads only here

        written = report.write_history(u, report_dir, history_view.summary_line(u))
        console(stderr=True).print(f"wrote {written.html}", markup=False)
    if output == ListFormat.json:
        sys.stdout.write(history_view.to_json(j))
    else:
        console().print(history_view.summary_line(u), markup=False)
        console().print(history_view.changes_table(u, j.verdict))
    if fail_on is not None:
        # The verdict goes where a CI log shows it; stdout stays JSON with -o json.
        gate = console(stderr=output == ListFormat.json)
        for line in history_view.gate_lines(j.verdict):
            gate.print(line, markup=False, soft_wrap=True)
        if j.verdict.standing:
            raise typer.Exit(EXIT_REGRESSION)


@app.command()
def completion(shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish")]) -> None:
    """Print the shell completion script. bash: `source <(mongobench completion bash)` in
    ~/.bashrc; zsh: `mongobench completion zsh > "${fpath[1]}/_mongobench"`; fish:
    `mongobench completion fish > ~/.config/fish/completions/mongobench.fish`."""
    # typer's own scripts (what its --show-completion prints), for the name `mongobench`.
    from typer._completion_shared import get_completion_script  # noqa: PLC0415

    script = get_completion_script(prog_name="mongobench", complete_var=COMPLETE_VAR, shell=shell)
    sys.stdout.write(script + "\n")


def kubectl_complete() -> None:
    """`kubectl_complete-mongobench`: kubectl (1.26+) runs it to complete `kubectl mongobench
    ...` with the words typed so far (the last one being completed) and reads cobra's format:
    one candidate a line, then `:<directive>` (4: no file completion)."""
    from typer._completion_classes import BashComplete, completion_init  # noqa: PLC0415

    completion_init()
    words = sys.argv[1:]
    command = typer.main.get_command(app)
    found = BashComplete(command, {}, "kubectl mongobench", COMPLETE_VAR).get_completions(
        words[:-1], words[-1] if words else ""
    )
    sys.stdout.write("".join(f"{item.value}\n" for item in found) + ":4\n")


def main() -> None:
    # typer's completion classes answer the scripts' callbacks (click's own would be used
    # otherwise, with another output format); registering them is a dictionary update.
    from typer._completion_classes import completion_init  # noqa: PLC0415

    completion_init()
    invoked = Path(sys.argv[0]).name
    app(
        prog_name="kubectl mongobench" if invoked == "kubectl-mongobench" else "mongobench",
        complete_var=COMPLETE_VAR,
    )


if __name__ == "__main__":
    main()
