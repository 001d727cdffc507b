"""Where runs come from: the Kubernetes API (the current kube context, as kubectl) or archives
(an S3 URL or a folder, through mongobench_archive). Every failure is a SourceError with a
one-line message for the user.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from mongobench_cli.selector import Selector
from mongobench_results.configmaps import LABEL_RESULT, assemble
from mongobench_results.merge import merge_documents

GROUP, VERSION, PLURAL = "mongobench.io", "v1alpha1", "benchmarkruns"
TIMEOUT = 15


class SourceError(Exception):
    """A run or archive that cannot be read; str() is one line for the user."""


def require_extra(module: str, extra: str, what: str) -> None:
    """`pip install mongobench-cli` leaves the Kubernetes client, plotting and change points to
    extras: a command that needs one fails in one line naming the extra, before reading a run."""
    try:
        importlib.import_module(module)
    except ImportError:
        raise SourceError(
            f"{what}: pip install 'mongobench-cli[{extra}]' "
            "(the kubectl-mongobench executable has it)"
        ) from None


Loader = Callable[[int], Any]


@dataclass
class LoadedRun:
    """A BenchmarkRun with lazy access to its full per-step documents."""

    run: dict[str, Any]
    origin: str  # "context <name>" or the archive root
    cluster: dict[str, Any] | None = None
    documents_loader: Loader | None = field(default=None, repr=False)
    merged_loader: Loader | None = field(default=None, repr=False)
    resources_loader: Loader | None = field(default=None, repr=False)
    target_loader: Callable[[], dict[str, Any] | None] | None = field(default=None, repr=False)
    provenance_loader: Callable[[], dict[str, Any] | None] | None = field(default=None, repr=False)
    key: str = ""

    @property
    def namespace(self) -> str:
        return str(self.run.get("metadata", {}).get("namespace", ""))

    @property
    def name(self) -> str:
        return str(self.run.get("metadata", {}).get("name", ""))

    @property
    def uid(self) -> str:
        return str(self.run.get("metadata", {}).get("uid", ""))

    def step_documents(self, index: int) -> list[dict[str, Any]]:
        return list(self.documents_loader(index)) if self.documents_loader else []

    def merged(self, index: int) -> dict[str, Any] | None:
        """The step's merged document (HDR histograms of all clients summed exactly)."""
        if self.merged_loader is not None:
            got = self.merged_loader(index)
            if got:
                return dict(got)
        docs = self.step_documents(index)
        if not docs:
            return None
        try:
            return dict(merge_documents(docs))
        except ValueError as exc:
            raise SourceError(f"run {self.name} step {index}: cannot merge results: {exc}") from exc

    def cluster_document(self) -> dict[str, Any] | None:
        """cluster.json: the snapshot and, while it exists, the MongoCluster's spec and status
        (the archive's own document when the run came from one)."""
        if self.cluster:
            return self.cluster
        snapshot = (self.run.get("status") or {}).get("clusterSnapshot")
        target = self.target_loader() if self.target_loader else None
        if not snapshot and not target:
            return None
        doc: dict[str, Any] = {"snapshot": snapshot}
        if target:
            meta = target.get("metadata") or {}
            keep = ("name", "namespace", "uid", "generation", "labels", "creationTimestamp")
            doc["mongoCluster"] = {
                "apiVersion": target.get("apiVersion"),
                "kind": target.get("kind"),
                "metadata": {k: meta[k] for k in keep if k in meta},
                "spec": target.get("spec") or {},
                "status": target.get("status") or {},
            }
        return doc

    def provenance(self) -> dict[str, Any] | None:
        """What ran: the archive's provenance.json, else the summary in the run's status."""
        if self.provenance_loader is not None:
            got = self.provenance_loader()
            if got:
                return dict(got)
        summary = (self.run.get("status") or {}).get("provenance")
        return dict(summary) if summary else None

    def resources(self, index: int) -> dict[str, Any] | None:
        if self.resources_loader is not None:
            got = self.resources_loader(index)
            if got:
                return dict(got)
        for step in (self.run.get("status") or {}).get("steps") or []:
            if step.get("index") == index and step.get("cpu"):
                return {"cpu": step["cpu"]}
        return None


def assign_keys(runs: Sequence[LoadedRun]) -> None:
    """Short unique keys: the name, else namespace/name, else namespace/name@origin."""
    names: dict[str, int] = {}
    qualified: dict[str, int] = {}
    for r in runs:
        names[r.name] = names.get(r.name, 0) + 1
        qualified[f"{r.namespace}/{r.name}"] = qualified.get(f"{r.namespace}/{r.name}", 0) + 1
    for r in runs:
        q = f"{r.namespace}/{r.name}"
        if names[r.name] == 1:
            r.key = r.name
        elif qualified[q] == 1:
            r.key = q
        else:
            r.key = f"{q}@{r.origin}"
    seen: dict[str, int] = {}
    for r in runs:  # the same run given twice: still distinct keys
        seen[r.key] = seen.get(r.key, 0) + 1
        if seen[r.key] > 1:
            r.key = f"{r.key}#{seen[r.key]}"


# --- the Kubernetes API ------------------------------------------------------------------------


def _api_message(exc: Exception) -> str:
    from kubernetes.client.exceptions import ApiException  # noqa: PLC0415

    if isinstance(exc, ApiException):
        reason = exc.reason or ""
        try:
            import json  # noqa: PLC0415

            reason = json.loads(exc.body or "{}").get("message") or reason
        except (ValueError, AttributeError):
            pass
        return f"the Kubernetes API answered {exc.status}: {reason}"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"cannot reach the Kubernetes API: {text[:300]}"


class KubeSource:
    """BenchmarkRuns of the current (or a named) kube context, like kubectl."""

    def __init__(
        self,
        context: str | None = None,
        namespace: str | None = None,
        all_namespaces: bool = False,
        kubeconfig: str | None = None,
    ) -> None:
        require_extra("kubernetes", "cluster", "reading runs from a cluster needs its client")
        from kubernetes import client, config  # noqa: PLC0415 - only when the API is used
        from kubernetes.config.config_exception import ConfigException  # noqa: PLC0415

        kubeconfig = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
        try:
            self.api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, context=context, persist_config=False
            )
            contexts, active = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
                config_file=kubeconfig
            )
        except ConfigException as exc:
            if context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
                config.load_incluster_config()  # type: ignore[no-untyped-call]
                self.api_client = client.ApiClient()
                contexts, active = [], {}
            else:
                raise SourceError(f"no usable kube context: {exc}") from exc
        except OSError as exc:
            raise SourceError(f"cannot read the kubeconfig: {exc}") from exc
        chosen = active
        if context is not None:
            chosen = next((c for c in contexts if c.get("name") == context), active)
        self.context = str((chosen or {}).get("name") or "in-cluster")
        self.namespace = (
            namespace or ((chosen or {}).get("context") or {}).get("namespace") or "default"
        )
        self.all_namespaces = all_namespaces
        self.custom = client.CustomObjectsApi(self.api_client)
        self.core = client.CoreV1Api(self.api_client)
        self._configmaps: dict[str, list[dict[str, Any]]] = {}

    @property
    def origin(self) -> str:
        return f"context {self.context}"

    def _call(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        try:
            return fn(*args, _request_timeout=TIMEOUT, **kw)
        except Exception as exc:  # the client raises many kinds; every one is one line here
            from kubernetes.client.exceptions import ApiException  # noqa: PLC0415

            if isinstance(exc, ApiException) and exc.status == 404:
                raise  # the caller says what was not found
            raise SourceError(_api_message(exc)) from exc

    def list_objects(
        self, namespace: str | None = None, labels: Selector | None = None
    ) -> list[dict[str, Any]]:
        """The BenchmarkRuns of the namespace (or every namespace with -A); `labels` goes to the
        API as labelSelector, so the server selects on the objects' labels as kubectl does."""
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415

        selected = {"label_selector": str(labels)} if labels else {}
        try:
            if self.all_namespaces and namespace is None:
                got = self._call(
                    self.custom.list_cluster_custom_object, GROUP, VERSION, PLURAL, **selected
                )
            else:
                got = self._call(
                    self.custom.list_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    namespace or self.namespace,
                    PLURAL,
                    **selected,
                )
        except ApiException as exc:  # 404 on a list: the CRD is missing
            raise SourceError(
                f"context {self.context} has no BenchmarkRun resource (are the mongobench CRDs "
                f"installed?): {exc.reason}"
            ) from exc
        items = [dict(i) for i in got.get("items") or []]
        items.sort(
            key=lambda o: (o["metadata"].get("creationTimestamp") or "", o["metadata"]["name"])
        )
        return items

    def get_object(self, name: str) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415

        namespace, _, bare = name.rpartition("/")
        namespace = namespace or self.namespace
        try:
            got = self._call(
                self.custom.get_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, bare
            )
        except ApiException as exc:
            raise SourceError(
                f'benchmarkrun "{bare}" not found in namespace "{namespace}" '
                f"(context {self.context})"
            ) from exc
        return dict(got)

    def _result_configmaps(self, namespace: str) -> list[dict[str, Any]]:
        if namespace not in self._configmaps:
            got = self._call(
                self.core.list_namespaced_config_map, namespace, label_selector=LABEL_RESULT
            )
            self._configmaps[namespace] = [
                {"metadata": {"labels": cm.metadata.labels or {}}, "data": cm.data or {}}
                for cm in got.items
            ]
        return self._configmaps[namespace]

    def loaded(self, obj: dict[str, Any]) -> LoadedRun:
        namespace = obj["metadata"]["namespace"]
        clients = int(((obj.get("spec") or {}).get("clients") or {}).get("parallelism") or 1)
        steps = {s.get("index"): s for s in (obj.get("status") or {}).get("steps") or []}

        def documents(index: int) -> list[dict[str, Any]]:
            job = (steps.get(index) or {}).get("job")
            if not job:
                return []
            return assemble(self._result_configmaps(namespace), job, clients).documents

        def target() -> dict[str, Any] | None:
            name = ((obj.get("spec") or {}).get("clusterRef") or {}).get("name")
            if not name:
                return None
            try:
                got = self.custom.get_namespaced_custom_object(
                    GROUP, VERSION, namespace, "mongoclusters", name, _request_timeout=TIMEOUT
                )
            except Exception:  # gone or not readable: the snapshot in status still tells
                return None
            return dict(cast(Mapping[str, Any], got))

        return LoadedRun(obj, self.origin, documents_loader=documents, target_loader=target)

    def runs(self, labels: Selector | None = None) -> list[LoadedRun]:
        return [self.loaded(o) for o in self.list_objects(labels=labels)]

    def experiment(self, name: str) -> dict[str, Any]:
        """A BenchmarkExperiment (namespace/NAME or NAME)."""
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415

        namespace, _, bare = name.rpartition("/")
        namespace = namespace or self.namespace
        try:
            got = self._call(
                self.custom.get_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                "benchmarkexperiments",
                bare,
            )
        except ApiException as exc:
            raise SourceError(
                f'benchmarkexperiment "{bare}" not found in namespace "{namespace}" '
                f"(context {self.context})"
            ) from exc
        return dict(got)

    def experiment_runs(self, name: str) -> list[LoadedRun]:
        """The runs an experiment created (and has not deleted), in creation order."""
        obj = self.experiment(name)
        namespace = obj["metadata"]["namespace"]
        got = self._call(
            self.custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            label_selector=f"mongobench.io/experiment={obj['metadata']['name']}",
        )
        items = sorted(
            (dict(i) for i in got.get("items") or []), key=lambda o: o["metadata"]["name"]
        )
        return [self.loaded(o) for o in items]

    def run(self, name: str) -> LoadedRun:
        return self.loaded(self.get_object(name))


# --- archives ----------------------------------------------------------------------------------


def is_archive_ref(ref: str) -> bool:
    return "://" in ref or ref.startswith((".", "/", "~")) or Path(ref).exists()


def archive_runs(
    ref: str, *, endpoint_url: str | None = None, region: str | None = None
) -> list[LoadedRun]:
    """Every run under an archive root (S3 URL or folder: a whole archive, a namespace or a
    single run's folder)."""
    try:
        import mongobench_archive as archive  # noqa: PLC0415
    except ImportError as exc:  # pragma: no cover - the distribution depends on it
        raise SourceError(f"{ref}: reading archives needs mongobench-archive ({exc})") from exc
    if "://" not in ref:
        ref = str(Path(ref).expanduser())
    try:
        root = archive.open_root(ref, endpoint_url=endpoint_url, region=region)
        found = root.runs()
    except archive.ArchiveError as exc:
        raise SourceError(str(exc)) from exc
    if not found:
        raise SourceError(f"{ref}: no archived run (no manifest.json) under it")
    out = []
    for a in found:
        out.append(_from_archive(a, ref, archive.ArchiveError))
    return out


def archive_experiments(
    ref: str, *, endpoint_url: str | None = None, region: str | None = None
) -> list[dict[str, Any]]:
    """Every BenchmarkExperiment summary under an archive root (written when each ended)."""
    import mongobench_archive as archive  # noqa: PLC0415

    if "://" not in ref:
        ref = str(Path(ref).expanduser())
    try:
        found = archive.open_root(ref, endpoint_url=endpoint_url, region=region).experiments()
    except archive.ArchiveError as exc:
        raise SourceError(str(exc)) from exc
    if not found:
        raise SourceError(
            f"{ref}: no archived experiment (no experiment-manifest.json) under it; an "
            "experiment's summary is written when it ends"
        )
    return found


def _from_archive(a: Any, origin: str, error: type[Exception]) -> LoadedRun:
    def guarded(fn: Callable[[int], Any]) -> Callable[[int], Any]:
        def call(index: int) -> Any:
            try:
                return fn(index)
            except error as exc:
                raise SourceError(str(exc)) from exc

        return call

    try:
        run, cluster = dict(a.run), a.cluster
    except error as exc:
        raise SourceError(str(exc)) from exc
    return LoadedRun(
        run,
        origin,
        cluster=dict(cluster) if cluster else None,
        documents_loader=guarded(a.step_documents),
        merged_loader=guarded(a.merged),
        resources_loader=guarded(a.resources),
        provenance_loader=lambda: guarded(lambda _: a.provenance)(0),
    )


@dataclass
class Resolver:
    """Turns command-line references into runs: archive URLs/paths, else run names (optionally
    namespace/name) in the kube context, created only when a name needs it."""

    context: str | None = None
    namespace: str | None = None
    all_namespaces: bool = False
    kubeconfig: str | None = None
    endpoint_url: str | None = None
    region: str | None = None
    _kube: KubeSource | None = None

    def kube(self) -> KubeSource:
        if self._kube is None:
            self._kube = KubeSource(
                self.context, self.namespace, self.all_namespaces, self.kubeconfig
            )
        return self._kube

    def resolve(self, refs: Iterable[str]) -> list[LoadedRun]:
        refs = list(refs)
        names = [r for r in refs if not is_archive_ref(r) and experiment_name(r) is None]
        # Many runs of one namespace: one list instead of a request per run.
        listed: dict[str, dict[str, Any]] = {}
        if len(names) > 3:
            kube = self.kube()
            namespaces = {n.rpartition("/")[0] or kube.namespace for n in names}
            if len(namespaces) == 1:
                ns = namespaces.pop()
                for obj in kube.list_objects(ns):
                    listed[f"{ns}/{obj['metadata']['name']}"] = obj
        out: list[LoadedRun] = []
        for ref in refs:
            if is_archive_ref(ref):
                out.extend(archive_runs(ref, endpoint_url=self.endpoint_url, region=self.region))
                continue
            experiment = experiment_name(ref)
            if experiment is not None:
                out.extend(self.kube().experiment_runs(experiment))
                continue
            kube = self.kube()
            qualified = ref if "/" in ref else f"{kube.namespace}/{ref}"
            if qualified in listed:
                out.append(kube.loaded(listed[qualified]))
            else:
                out.append(kube.run(ref))  # also says clearly when it does not exist
        assign_keys(out)
        return out

    def listing(self, refs: Sequence[str], labels: Selector | None = None) -> list[LoadedRun]:
        """`list`: the runs of the context (selected by the API), or of the archives given
        (selected here, on each stored run's metadata.labels)."""
        if refs:
            runs = [
                r
                for r in self.resolve(refs)
                if labels is None or labels.matches(r.run.get("metadata", {}).get("labels"))
            ]
        else:
            runs = self.kube().runs(labels)
        assign_keys(runs)
        return runs


EXPERIMENT_PREFIXES = ("experiment/", "bmx/", "benchmarkexperiment/")


def experiment_name(ref: str) -> str | None:
    """NAME (or namespace/NAME) when `ref` names a BenchmarkExperiment, else None."""
    for prefix in EXPERIMENT_PREFIXES:
        if ref.startswith(prefix):
            return ref.removeprefix(prefix)
    return None


def by_key(runs: Iterable[LoadedRun]) -> Mapping[str, LoadedRun]:
    return {r.key: r for r in runs}
