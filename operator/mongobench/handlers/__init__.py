"""Thin kopf handlers: read, call the domain modules, write status. Importing registers them.

Each handler imports its controller (mongobench.mongocluster, .benchmarkrun, .experiment) when
first called, not with the module: an operator with nothing to do holds none of them, nor what
they load (MongoDB's administration, the results and comparison libraries, the archive). That is
~3 MiB of the idle operator's RSS (make bench-memory).
"""

from mongobench.handlers import benchmarkexperiment, benchmarkrun, mongocluster

__all__ = ["benchmarkexperiment", "benchmarkrun", "mongocluster"]
