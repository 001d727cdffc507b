"""Backends of the e2e suite: the interface (base), the custom resources (manifests), what the
scenarios ask MongoDB (mongo), and the two implementations (local, kind)."""
