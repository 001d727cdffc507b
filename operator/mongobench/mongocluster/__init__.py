"""MongoCluster: pure builders, and apart from them the modules that do I/O.

Pure (a spec or observations in; manifests, names or decisions out; no API calls, no MongoDB,
no clock; a unit test proves none of them imports the Kubernetes client, kopf or pymongo):
``labels``, ``layout``, ``placement``, ``podspec``, ``statefulset``, ``service``, ``mongos``,
``pdb``, ``podmonitor``, ``networkpolicy``, ``secrets``, ``objects``, ``platform``, ``shards``,
``status``, ``rotation``, ``sync_plan`` (what a sync does with its observations), ``requeue``
(when the sync looks again), ``tls``
(certificates, flags, volumes), ``tls_renewal`` (how a renewed certificate reaches running
members), ``tls_roll`` (a running cluster's roll between TLS modes), ``tls_ca`` (a new CA
through a trust bundle), and ``generate`` and ``certificates`` (fresh secret values and
certificates: random, so only the I/O side calls them, once per Secret).
Owner references are the I/O side's to add.

I/O, through the ``KubeApi`` each function is given (mongobench.k8s.api): ``provision`` (apply
the built objects), ``reconcile`` (observe, wire, publish status and Events), ``rolling``
(member restarts), ``rotate`` (credential rotation), ``storage`` (claim growth),
``tls_secrets`` (Certificates or issued certificate Secrets), ``roll_tls`` (the steps of a roll
between TLS modes), ``wire`` (MongoDB administration
through a ``MongoAdmin`` handle), ``deletion`` (finalizer), ``interface`` (what a BenchmarkRun
may ask of its cluster: layout, administration handle, secret values).
"""

PURE_MODULES = (
    "certificates",
    "generate",
    "labels",
    "layout",
    "mongos",
    "networkpolicy",
    "objects",
    "pdb",
    "placement",
    "platform",
    "podmonitor",
    "podspec",
    "predecessor",
    "requeue",
    "rotation",
    "secrets",
    "service",
    "shards",
    "statefulset",
    "status",
    "sync_plan",
    "tls",
    "tls_ca",
    "tls_renewal",
    "tls_roll",
)
IO_MODULES = (
    "deletion",
    "interface",
    "provision",
    "reconcile",
    "roll_tls",
    "rolling",
    "rotate",
    "storage",
    "tls_secrets",
    "wire",
)
