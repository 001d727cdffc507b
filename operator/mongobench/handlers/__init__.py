"""Thin kopf handlers: read, call the domain modules, write status. Importing registers them."""

from mongobench.handlers import benchmarkrun, mongocluster

__all__ = ["benchmarkrun", "mongocluster"]
