"""MongoCluster: its controller, in three folders by what a module may do.

- ``build/`` (pure): the Kubernetes objects and values a spec asks for. Labels, layout,
  placement, pod spec, StatefulSets, Services, mongos, PodDisruptionBudgets, the PodMonitor,
  NetworkPolicies, Secrets' shapes, TLS certificates' names, flags and volumes (``tls``), and the
  fresh secret values and certificates (``generate``, ``certificates``: random, so only ``act/``
  calls them, once per Secret). A new object kind gets its builder here.
- ``decide/`` (pure): what to do next from what was observed. ``status`` (the status and its
  conditions, ``compute_status(now)``), ``sync_plan`` (what a sync does with its observations),
  ``requeue`` (when the controller looks again), ``rotation`` (a credential rotation's steps),
  ``shards`` (adding and draining shards), ``predecessor`` (a deleted namesake's leftovers),
  ``tls_roll`` (a running cluster's roll between TLS modes), ``tls_renewal`` (how a renewed
  certificate reaches running members), ``tls_ca`` (a new CA through a trust bundle). A new
  rule about when or whether to act goes here.
- ``act/`` (I/O, through the ``KubeApi`` each function is given and a ``MongoAdmin`` handle):
  ``reconcile`` (observe, decide, act: the sync), ``provision`` (apply the built objects),
  ``rolling`` (member restarts), ``rotate`` (carry a rotation out), ``roll_tls`` (carry a TLS
  roll out), ``tls_secrets`` (Certificates or issued certificate Secrets), ``storage`` (claim
  growth), ``wire`` (MongoDB administration), ``deletion`` (the finalizer).

``interface`` is what a BenchmarkRun may ask of its cluster (layout, administration handle,
secret values): the one door into ``act/`` from another controller. Owner references are
``act/``'s to add. Unit tests derive the rules from the folders: nothing in ``build/`` or
``decide/`` loads the Kubernetes client, kopf or pymongo, and no other controller imports
``act/`` (test_controller_folders, test_imports).
"""
