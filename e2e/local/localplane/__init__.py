"""Test support for the local tier: a real control plane, KWOK nodes, FerretDB, Prometheus.

Lives with the tests; the product (operator/, bench-jobs/) never imports it.
"""
