"""BenchmarkRun: its controller, in four folders by what a module may do.

- ``build/`` (pure): what a run makes. ``jobs`` (the clients' Jobs, their RBAC and barrier),
  ``cpu_monitor`` (the PodMonitor of a finer CPU resolution), ``provenance`` (what ran, for the
  archive), ``results`` (how a step's result ConfigMaps are named and found).
- ``decide/`` (pure): what to do next. ``action`` (observed state in, the next action out: the
  rule table), ``plan`` (the steps), ``requeue`` (when the run looks again), ``queue`` (runs
  sharing a target), ``repetitions`` (adaptive repetitions), ``reruns`` and ``validity``
  (judged trials), ``knee`` (a knee search's probes), ``profiling`` (what is kept of the
  profiler).
- ``telemetry/``: Prometheus. ``profiles/resources.yaml`` (the PromQL, as data), ``cpu`` (its
  client, and the pure summaries), ``cpu_status`` (one step's queries), ``resources``, ``roles``,
  ``neighbours`` (disk, network, memory; per role; noisy neighbours).
- ``act/`` (I/O): ``orchestrate`` (observe, ask decide/action, act), ``data`` (the target
  database: prepare, clean up), ``facts`` (what the cluster and nodes are, for provenance),
  ``archive`` (uploads), ``cost`` (prices and the nodes' instance types).

A test derives from the folders that nothing in ``build/`` or ``decide/`` loads the Kubernetes
client, kopf, pymongo or an HTTP client (test_controller_folders).
"""
