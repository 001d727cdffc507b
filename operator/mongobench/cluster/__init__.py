"""Pure builders: a MongoClusterSpec in, Kubernetes manifests out (no API calls, no clock,
no randomness; ``generate`` makes secret values and is called by the reconciler only).

Owner references are the reconciler's to add.
"""
