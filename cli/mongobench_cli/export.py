"""`mongobench export`: one row per step with the full configuration next to the numbers
(steps.csv, steps.json), and the run itself in the archive layout (run.json, cluster.json, every
client document with its HDR histograms, merged documents, resources, manifest last), so an
export folder is an archive root that `compare`, `report` and `list` read back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mongobench_cli.render import csv_text
from mongobench_cli.sources import LoadedRun, SourceError
from mongobench_results import records

if TYPE_CHECKING:  # the archive package is imported only when an export runs
    from mongobench_archive import Root, RunWriter

OPERATION_STATS = ("count", "errors", "avg", "min", "p50", "p95", "p99", "p999", "max")


def step_rows(run: LoadedRun) -> list[dict[str, Any]]:
    """Pure: every step of the run (measured or not) with its configuration."""
    obj = run.run
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    shape = records.shape(obj).dimensions()
    rows = []
    for s in records.steps(obj):
        res = s.result or {}
        row: dict[str, Any] = {
            "origin": run.origin,
            "namespace": meta.get("namespace"),
            "run": meta.get("name"),
            "uid": meta.get("uid"),
            "runPhase": (obj.get("status") or {}).get("phase"),
            **shape,
            "target": (spec.get("clusterRef") or {}).get("name") or "external",
        }
        if s.workload:
            params = records.workload_parameters(obj, str(s.workload))
        else:
            params = records.workload_parameters(obj, "")
        row |= {k: _cell(v) for k, v in params.items()}
        row |= {k: _cell(v) for k, v in records.concurrency(obj).items()}
        row |= {"database": spec.get("database", "ycsb"), "collection": spec.get("collection")}
        row |= {f"label.{k}": v for k, v in sorted((spec.get("labels") or {}).items())}
        row |= {
            "step": s.index,
            "stepLabel": s.label,
            "kind": s.kind,
            "workload": s.workload,
            "repetition": s.repetition,
            "phase": s.phase,
            "startTime": s.start.isoformat() if s.start else None,
            "completionTime": s.end.isoformat() if s.end else None,
            "stepSeconds": s.seconds,
            "windowSeconds": records.window_seconds(res) if res else None,
            "throughput": records.throughput(res) if res else None,
            "operationsTotal": res.get("operationsTotal"),
            "clients": res.get("clients"),
            "littlesLawRatio": records.littles_law(res).get("ratio"),
            "littlesLawOk": records.littles_law(res).get("ok"),
            "startSkewSeconds": res.get("startSkewSeconds"),
        }
        for op, figures in sorted((res.get("operations") or {}).items()):
            for stat in OPERATION_STATS:
                if stat in figures:
                    row[f"{op}.{stat}"] = figures[stat]
        cpu = s.cpu or {}
        for group, name in (("cluster", "cpuDatabase"), ("clients", "cpuClients")):
            g = cpu.get(group) or {}
            row[f"{name}.avg"] = g.get("avg")
            row[f"{name}.max"] = g.get("max")
        row |= records.step_summary(s)
        row["message"] = s.message
        rows.append(row)
    return rows


def _cell(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return value


def archive_run_object(run: LoadedRun) -> dict[str, Any]:
    """run.json: the object minus server bookkeeping and kubectl's last-applied copy."""
    obj = run.run
    meta = obj.get("metadata") or {}
    annotations = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k != "kubectl.kubernetes.io/last-applied-configuration"
    }
    keep = ("name", "namespace", "uid", "labels", "creationTimestamp")
    return {
        "apiVersion": obj.get("apiVersion", "mongobench.io/v1alpha1"),
        "kind": obj.get("kind", "BenchmarkRun"),
        "metadata": {**{k: meta[k] for k in keep if k in meta}, "annotations": annotations},
        "spec": obj.get("spec") or {},
        "status": obj.get("status") or {},
    }


def export(
    runs: Sequence[LoadedRun],
    out: str,
    *,
    endpoint_url: str | None = None,
    region: str | None = None,
) -> dict[str, int]:
    """Write the export to a folder or an archive URL (s3://BUCKET/PREFIX); returns counts."""
    try:
        from mongobench_archive import ArchiveError, open_root  # noqa: PLC0415
    except ImportError as exc:  # pragma: no cover
        raise SourceError(f"export needs mongobench-archive ({exc})") from exc
    if "://" not in out:
        try:
            Path(out).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SourceError(f"cannot create {out}: {exc.strerror}") from exc
    rows: list[dict[str, Any]] = []
    documents = 0
    try:
        root = open_root(out, endpoint_url=endpoint_url, region=region)
        for run in runs:
            rows.extend(step_rows(run))
            documents += _write_run(root, run)
        # The tables sit beside the run folders; readers look only at run manifests.
        root.store.put("steps.csv", csv_text(rows).encode())
        root.store.put("steps.json", (json.dumps(rows, indent=2, default=str) + "\n").encode())
    except ArchiveError as exc:
        raise SourceError(str(exc)) from exc
    except OSError as exc:
        raise SourceError(f"cannot write {out}: {exc.strerror or exc}") from exc
    return {"runs": len(runs), "steps": len(rows), "documents": documents}


def _write_run(root: Root, run: LoadedRun) -> int:
    """One run in the archive layout, manifest last; returns how many client documents."""
    obj = archive_run_object(run)
    writer = root.writer(run.namespace, run.name, run.uid)
    writer.put_json("run.json", obj)
    cluster = run.cluster_document()
    if cluster:
        writer.put_json("cluster.json", cluster)
    provenance = run.provenance_loader() if run.provenance_loader else None
    if provenance:  # what ran travels with the run (a status summary is in run.json already)
        writer.put_json("provenance.json", provenance)
    documents = sum(_write_step(writer, run, s.index) for s in records.steps(obj))
    phase = str(obj["status"].get("phase") or "Pending")
    writer.put_manifest(obj, phase, phase in records.TERMINAL)
    return documents


def _write_step(writer: RunWriter, run: LoadedRun, index: int) -> int:
    """A step's client documents, merged document and resources; returns how many clients."""
    folder = f"steps/{index:03d}"
    docs = run.step_documents(index)
    for i, doc in enumerate(docs):
        client = (doc.get("client") or {}).get("index")
        writer.put_json(f"{folder}/client-{client if client is not None else i}.json", doc)
    merged = run.merged(index) if docs else None
    if merged:
        writer.put_json(f"{folder}/merged.json", merged)
    resources = run.resources(index)
    if resources:
        writer.put_json(f"{folder}/resources.json", resources)
    return len(docs)
