"""The scheduler's runtime, apart from the Kubernetes client (k8s/) and the controllers: when a
resource is looked at again and what wakes it, shared by every controller.

- ``ticker``: periodic work per resource, kept by key (kopf's timers kept every body), driven by
  the controllers' ``controller.Result`` (``Ticker.requeue``).
- ``wakeups``: work woken by another resource's event, by key and coalesced, retried with a
  per-key backoff (controller-runtime's work queue).
- ``dependents``: resources that wait on another's state (a run on its cluster, a queued run on
  the run ahead of it), woken by its events.
- ``bodies``: the latest body of each watched resource, fed by its events, instead of GETs.
- ``peering``: kopf's peering pauses and resumes the ticker and the wake-ups with its watches.
- ``locks``: one pass of a resource at a time, whatever woke it.
"""
