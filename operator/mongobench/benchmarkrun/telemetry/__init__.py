"""Prometheus: the PromQL a step's figures need (profiles/, as data), the client that asks it,
and the pure summaries of its answers."""
