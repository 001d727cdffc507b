"""Pure builders: a MongoCluster's spec in, Kubernetes objects, names and values out (no API
calls, no MongoDB, no clock; see the package's docstring)."""
