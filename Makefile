# mongobench: one entry point per job. `make test` sets up a fresh machine and runs every tier.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := PYTHONPATH=e2e/local $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest

.PHONY: help setup lint test test-unit test-protocol test-bench-jobs test-cluster dev dev-down \
        crds-check

help: ## list targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

setup: ## install everything the tests need (idempotent; seconds when warm)
	@bash hack/setup.sh all

lint: ## ruff, mypy (strict on the packages), yamllint, shellcheck, hadolint
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/yamllint -s crds manifests
	$(VENV)/bin/shellcheck -x hack/*.sh .ci/run
	$(VENV)/bin/hadolint Dockerfile bench-jobs/Dockerfile.ycsb bench-jobs/Dockerfile.locust

test: setup lint test-unit test-protocol test-bench-jobs test-cluster ## set up, lint, run every tier

test-unit: ## unit tier: pure builders, parsers, statistics
	$(PYTEST) -q -m unit operator/tests bench-jobs/runner/tests dashboards/tests e2e/local/tests

test-protocol: ## protocol tier: pymongo against mockupdb and FerretDB on loopback
	$(PYTEST) -q -m protocol operator/tests bench-jobs/runner/tests e2e/local/tests

test-bench-jobs: ## the YCSB binding's own tests (Maven, JUnit)
	@if [ -x hack/build-java.sh ]; then bash hack/build-java.sh test; fi

test-cluster: ## cluster tier: real control plane + KWOK on loopback, the operator running for real
	$(PYTEST) -q -m cluster e2e/local/tests

dev: setup ## start the local control plane with CRDs and the operator; prints the kubeconfig path
	$(PY) -m localplane.dev up

dev-down: ## stop what `make dev` started
	$(PY) -m localplane.dev down
-include bench-jobs/bench-jobs.mk

bench-reconcile: setup ## time apply->children and count API requests of the MongoCluster reconciler
	PYTHONPATH=e2e/local $(VENV)/bin/python e2e/local/bench/reconcile.py

bench-orchestration: setup ## seconds the operator adds between benchmark steps and to collect results
	PYTHONPATH=e2e/local $(VENV)/bin/python e2e/local/bench/orchestration.py
