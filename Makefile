# mongobench: one entry point per job. `make test` sets up a fresh machine and runs every tier.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := PYTHONPATH=e2e/local $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest
# Pinned tools built by hack/build-tools.sh into the cache, keyed by version.
include hack/versions.env
include hack/project.env
TOOLS := $(or $(MONGOBENCH_CACHE),$(HOME)/.cache/mongobench)/bin
HELM := $(TOOLS)/helm-$(HELM_VERSION)
HELM_DOCS := $(TOOLS)/helm-docs-$(HELM_DOCS_VERSION)
ACTIONLINT := $(TOOLS)/actionlint-$(ACTIONLINT_VERSION)
KIND_CONFIGCHECK := $(TOOLS)/kind-configcheck-$(KIND_VERSION)
CHART := charts/mongobench
CHARTS := charts/mongobench-crds charts/mongobench
.PHONY: help setup lint test test-unit test-unit-later test-packaging coverage test-protocol test-bench-jobs test-cluster \
        demo setup-demo setup-gitops test-gitops dev dev-down \
        crds-check crds-sync chart-docs chart-lint manifests images kind-load test-rules test-e2e \
        e2e-kind e2e-kind-down cli-dist cli-krew docs docs-gen

help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

setup: ## install everything the tests need (idempotent; seconds when warm)
	@bash hack/setup.sh all

lint: ## ruff, mypy (strict on the packages), yamllint, shellcheck, hadolint, chart, CRD copies, workflows, Go, docs
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/yamllint -s crds manifests .github e2e/kind
	$(VENV)/bin/shellcheck -x hack/*.sh hack/image/*.sh manifests/platforms/magnum/*.sh .ci/run \
	  cli/release.sh e2e/kind/*.sh
	$(KIND_CONFIGCHECK) e2e/kind/kind-config.yaml manifests/platforms/kind/kind-config.yaml >/dev/null
	$(VENV)/bin/hadolint Dockerfile bench-jobs/Dockerfile.ycsb bench-jobs/Dockerfile.locust
	$(MAKE) --no-print-directory crds-check chart-lint
	$(VENV)/bin/python hack/manifests.py $(HELM) --check
	$(ACTIONLINT) -shellcheck $(VENV)/bin/shellcheck .github/workflows/*.yaml manifests/ci/github-actions-regression-gate.yaml
	$(VENV)/bin/python hack/docs_gen.py --check
	$(MKDOCS) build --strict --quiet

# The documentation site (mkdocs.yml, docs/): strict, so a broken link, a missing page or anchor
# fails; built into site/ (git-ignored). Material's notice about MkDocs 2 is not a warning of ours.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs

docs-gen: ## regenerate docs/reference/api.md (from crds/) and cli.md (from the CLI)
	$(VENV)/bin/python hack/docs_gen.py

docs: docs-gen ## regenerate the references and build the documentation site into site/ (open site/index.html)
	$(MKDOCS) build --strict

crds-check: ## the CRD chart's files are real-file copies of crds/ (the one source); fix with crds-sync
	$(VENV)/bin/python hack/crds_check.py $(HELM)

crds-sync: ## copy crds/ into the CRD chart (charts/mongobench-crds/files)
	$(VENV)/bin/python hack/crds_check.py --sync

chart-docs: ## regenerate the charts' READMEs (values tables) with helm-docs
	$(HELM_DOCS) --chart-search-root charts --skip-version-footer --log-level warning

chart-lint: ## helm lint --strict, and each chart README's values table is current
	@set -e; for chart in $(CHARTS); do \
	  $(HELM) lint --strict $$chart; \
	  $(HELM_DOCS) --chart-search-root $$chart --skip-version-footer --log-level warning --dry-run \
	    | diff -u $$chart/README.md - \
	    || { echo "$$chart/README.md is stale: run make chart-docs" >&2; exit 1; }; \
	done

manifests: ## regenerate the kustomize install (CRDs and base, the charts rendered) and Argo CD's health-check ConfigMap
	$(VENV)/bin/python hack/manifests.py $(HELM)

cli-dist: ## the CLI's wheels and sdists (mongobench-cli, -results, -archive) in dist/cli (uv build)
	bash cli/release.sh wheels dist/cli

# The release tag's spelling (vX.Y.Z) of the CLI's version; the archives' URL prefix of a release.
CLI_VERSION ?= v$(shell sed -n 's/^version = "\(.*\)"$$/\1/p' cli/pyproject.toml)
CLI_URL ?= $(PROJECT_URL)/releases/download/$(CLI_VERSION)

cli-krew: cli-dist ## this host's self-contained kubectl-mongobench (PyInstaller), krew archive and manifest in dist/cli
	bash cli/release.sh archive $(CLI_VERSION) dist/cli
	bash cli/release.sh manifest $(CLI_VERSION) $(CLI_URL) dist/cli

images: ## build the operator, YCSB and Locust images (Docker or Podman), tagged with the chart's appVersion
	bash hack/images.sh build

kind-load: ## load the images into a kind cluster (KIND_CLUSTER, default mongobench)
	bash hack/images.sh kind-load

# pytest-xdist workers of the unit, protocol and cluster tiers (TEST_WORKERS=0: one process).
# The protocol and cluster tiers mostly wait (on JVMs, Locust, servers, the apiserver: a slow
# cluster test's process tree used about 0.2 of a core over its wall time, the whole protocol
# tier 3.5 CPU-minutes): one worker more there, unless TEST_WORKERS=0. The protocol tier on
# this shared 2-core host: 398 s on 2 workers, 240 s on 3.
TEST_WORKERS ?= 2
PROTOCOL_WORKERS ?= $(if $(filter 0,$(TEST_WORKERS)),0,3)
CLUSTER_WORKERS ?= $(if $(filter 0,$(TEST_WORKERS)),0,3)

test: setup lint test-unit test-unit-later test-packaging test-rules test-protocol test-bench-jobs test-cluster ## set up, lint, run every tier

UNIT_TESTS := operator/tests bench-jobs/runner/tests archive/tests cli/tests results/tests benchmarks/tests dashboards/tests \
  alerts/tests e2e/local/tests e2e/suite e2e/kind/tests charts/tests manifests/tests hack/tests

# On TEST_WORKERS workers too: it computes (about 140 CPU-s), and two workers took it from
# 540 s to 377 s on this shared host.
test-unit: ## unit tier: pure builders, parsers, statistics
	$(PYTEST) -q -m unit -n $(TEST_WORKERS) $(UNIT_TESTS)

# The unit tier again with the wall clock LATER_DAYS ahead (localplane.clock_ahead): a test that
# passes only near the date it was written (a certificate issued "now" and judged at a fixed date)
# fails here, the day it is written, not ten days later on every machine.
LATER_DAYS ?= 400
test-unit-later: ## the unit tier again with the wall clock a year ahead: no test may depend on today's date
	MONGOBENCH_CLOCK_AHEAD_DAYS=$(LATER_DAYS) $(PYTEST) -q -m unit -n $(TEST_WORKERS) \
	  -p localplane.clock_ahead -p no:cacheprovider $(UNIT_TESTS)

# The one tier that reaches the package index (the issue it answers: uv.lock's pins and overrides
# do not travel with the wheels): the CLI's wheels installed by pip into fresh virtualenvs, core
# and each extra, third-party packages resolved from the index; prints each install's size.
# pip's cache is MONGOBENCH_CACHE/pip: a warm run downloads only the index pages (about 80 s on
# two workers on this 2-core host; 3.5 minutes cold).
test-packaging: ## packaging tier: the CLI's wheels pip-installed from the package index, per extra
	$(PYTEST) -q -m packaging -n 2 -rA cli/tests/test_packaging.py

coverage: ## the unit tier under coverage.py: per package of operator/mongobench (controllers >= 85%)
	$(VENV)/bin/coverage run --data-file=.coverage-unit --source=operator/mongobench \
	  -m pytest -q -m unit -p no:cacheprovider $(UNIT_TESTS)
	$(VENV)/bin/python hack/coverage_report.py .coverage-unit

test-rules: ## the chart's alerts: promtool check rules + promtool test rules (alerts/tests)
	$(PY) alerts/check.py

# Its files wait on JVMs, Locust and servers too: the same workers (one FerretDB each).
test-protocol: ## protocol tier: mockupdb, FerretDB and an S3 server (moto) on loopback
	$(PYTEST) -q -m protocol -n $(PROTOCOL_WORKERS) --dist loadfile --durations=10 operator/tests \
	  bench-jobs/runner/tests archive/tests cli/tests e2e/local/tests hack/tests

test-bench-jobs: ## the YCSB binding's own tests (Maven, JUnit)
	@if [ -x hack/build-java.sh ]; then bash hack/build-java.sh test; fi

# The cluster tier mostly waits (on the apiserver, JVMs, timers): its files run on
# CLUSTER_WORKERS pytest-xdist workers, each with its own plane and Prometheus on free ports
# (--dist loadfile keeps a file's module fixtures on one worker; the slowest files go first,
# localplane.pytest_plugin's SLOWEST_FIRST, which --no-loadscope-reorder keeps: by default
# xdist hands out the files with the most tests first). test_cpu_profile.py compares this
# host's busy and idle CPU windows, so it runs alone afterwards.
CPU_PROFILE := e2e/local/tests/test_cpu_profile.py
test-cluster: ## cluster tier: real control plane + KWOK on loopback, the operator running for real
	$(PYTEST) -q -m cluster -n $(CLUSTER_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 --ignore=$(CPU_PROFILE) \
	  e2e/local/tests cli/tests e2e/suite e2e/kind/tests
	$(PYTEST) -q -m cluster $(CPU_PROFILE)

test-e2e: ## the e2e suite alone, on the local backend (part of test-cluster)
	$(PYTEST) -q -m e2e e2e/suite

e2e-kind: ## the e2e suite on kind with real mongod (needs Docker, kind, kubectl, internet); keeps the cluster
	bash e2e/kind/e2e.sh all

e2e-kind-down: ## delete the kind cluster of e2e-kind
	bash e2e/kind/e2e.sh down

# Argo CD is left out of `make setup`: its cold build takes about 14.5 CPU-minutes (as much as
# every other tool together), which would put a new machine's `make test` near CI's limit. Its
# tests (GITOPS_TESTS) skip, naming this target, where it is not built; on a machine that built
# it once (CI's) `make test` runs them.
GITOPS_TESTS := manifests/tests/test_health_lua.py e2e/local/tests/test_argocd.py e2e/local/tests/test_gitops_superseded.py
setup-gitops: ## build Argo CD and its kustomize for the GitOps tests (about 12 minutes cold; seconds when built)
	@bash hack/setup.sh gitops

test-gitops: setup setup-gitops ## the GitOps tests: the real Argo CD's health checks and syncs on the local plane
	$(PYTEST) -q -m "unit or cluster" -n 2 --dist loadfile $(GITOPS_TESTS)

setup-demo: ## install only what `make demo` runs (the control plane, FerretDB, the YCSB binding, Debian's packages)
	@bash hack/setup.sh demo

demo: setup-demo ## the main job on the embedded default: is FerretDB faster on PostgreSQL than on SQLite? three runs compared (KEEP=1 keeps it up)
	$(PY) -m localplane.demo $(if $(KEEP),--keep,) $(DEMO_ARGS)

dev: setup ## start the local control plane with CRDs and the operator; prints the kubeconfig path
	$(PY) -m localplane.dev up

dev-down: ## stop what `make dev` started
	$(PY) -m localplane.dev down
-include bench-jobs/bench-jobs.mk
-include benchmarks/benchmarks.mk
