"""Thin kopf handlers: read, call the domain modules, write status. Importing registers them."""

from mongobench.handlers import benchmarkexperiment, benchmarkrun, mongocluster

__all__ = ["benchmarkexperiment", "benchmarkrun", "mongocluster"]
