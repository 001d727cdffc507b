"""MongoCluster: pure builders, and apart from them the modules that do I/O.

Pure (a spec or observations in; manifests, names or decisions out; no API calls, no MongoDB,
no clock; a unit test proves none of them imports the Kubernetes client, kopf or pymongo):
``labels``, ``layout``, ``placement``, ``podspec``, ``statefulset``, ``service``, ``mongos``,
``pdb``, ``podmonitor``, ``networkpolicy``, ``secrets``, ``objects``, ``platform``, ``shards``,
``status``, ``rotation``, ``sync_plan`` (what a sync does with its observations), and
``generate`` (fresh secret values: random, so only ``provision`` calls it, once per Secret).
Owner references are the I/O side's to add.

I/O, through the ``KubeApi`` each function is given (mongobench.k8s.api): ``provision`` (apply
the built objects), ``reconcile`` (observe, wire, publish status and Events), ``rolling``
(member restarts), ``rotate`` (credential rotation), ``storage`` (claim growth), ``wire``
(MongoDB administration through a ``MongoAdmin`` handle), ``deletion`` (finalizer).
"""

PURE_MODULES = (
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
    "rotation",
    "secrets",
    "service",
    "shards",
    "statefulset",
    "status",
    "sync_plan",
)
IO_MODULES = ("deletion", "provision", "reconcile", "rolling", "rotate", "storage", "wire")
