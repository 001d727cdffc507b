# mongobench: one entry point per job. `make test` sets up a fresh machine and runs every tier.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := PYTHONPATH=e2e/local $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest
# Pinned tools built by hack/build-tools.sh into the cache, keyed by version.
include hack/versions.env
TOOLS := $(or $(MONGOBENCH_CACHE),$(HOME)/.cache/mongobench)/bin
HELM := $(TOOLS)/helm-$(HELM_VERSION)
HELM_DOCS := $(TOOLS)/helm-docs-$(HELM_DOCS_VERSION)
ACTIONLINT := $(TOOLS)/actionlint-$(ACTIONLINT_VERSION)
KIND_CONFIGCHECK := $(TOOLS)/kind-configcheck-$(KIND_VERSION)
CHART := charts/mongobench

.PHONY: help setup lint test test-unit test-protocol test-bench-jobs test-cluster demo dev dev-down \
        crds-check crds-sync chart-docs chart-lint manifests images kind-load test-rules test-e2e \
        e2e-kind e2e-kind-down

help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

setup: ## install everything the tests need (idempotent; seconds when warm)
	@bash hack/setup.sh all

lint: ## ruff, mypy (strict on the packages), yamllint, shellcheck, hadolint, chart, CRD copies, workflows
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/yamllint -s crds manifests .github e2e/kind
	$(VENV)/bin/shellcheck -x hack/*.sh hack/image/*.sh manifests/platforms/magnum/cluster.sh .ci/run \
	  cli/krew/package.sh cli/krew/kubectl-mongobench e2e/kind/*.sh
	$(KIND_CONFIGCHECK) e2e/kind/kind-config.yaml manifests/platforms/kind/kind-config.yaml >/dev/null
	$(VENV)/bin/hadolint Dockerfile bench-jobs/Dockerfile.ycsb bench-jobs/Dockerfile.locust
	$(MAKE) --no-print-directory crds-check chart-lint
	$(VENV)/bin/python hack/manifests.py $(HELM) --check
	$(ACTIONLINT) -shellcheck $(VENV)/bin/shellcheck .github/workflows/*.yaml

crds-check: ## the chart's CRDs are real-file copies of crds/ (the one source); fix with crds-sync
	$(VENV)/bin/python hack/crds_check.py $(HELM)

crds-sync: ## copy crds/ into the chart
	$(VENV)/bin/python hack/crds_check.py --sync

chart-docs: ## regenerate the chart's README (values table) with helm-docs
	$(HELM_DOCS) --chart-search-root charts --skip-version-footer --log-level warning

chart-lint: ## helm lint --strict, and the chart README's values table is current
	$(HELM) lint --strict $(CHART)
	@$(HELM_DOCS) --chart-search-root charts --skip-version-footer --log-level warning --dry-run \
	  | diff -u $(CHART)/README.md - \
	  || { echo "$(CHART)/README.md is stale: run make chart-docs" >&2; exit 1; }

manifests: ## regenerate the install base (chart rendered) and Argo CD's health-check ConfigMap
	$(VENV)/bin/python hack/manifests.py $(HELM)

images: ## build the operator, YCSB and Locust images (Docker or Podman), tagged with the chart's appVersion
	bash hack/images.sh build

kind-load: ## load the images into a kind cluster (KIND_CLUSTER, default mongobench)
	bash hack/images.sh kind-load

test: setup lint test-unit test-rules test-protocol test-bench-jobs test-cluster ## set up, lint, run every tier

test-unit: ## unit tier: pure builders, parsers, statistics
	$(PYTEST) -q -m unit operator/tests bench-jobs/runner/tests archive/tests cli/tests results/tests \
	  dashboards/tests alerts/tests e2e/local/tests e2e/suite e2e/kind/tests charts/tests \
	  manifests/tests

test-rules: ## the chart's alerts: promtool check rules + promtool test rules (alerts/tests)
	$(PY) alerts/check.py

test-protocol: ## protocol tier: mockupdb, FerretDB and an S3 server (moto) on loopback
	$(PYTEST) -q -m protocol operator/tests bench-jobs/runner/tests archive/tests cli/tests \
	  e2e/local/tests hack/tests

test-bench-jobs: ## the YCSB binding's own tests (Maven, JUnit)
	@if [ -x hack/build-java.sh ]; then bash hack/build-java.sh test; fi

test-cluster: ## cluster tier: real control plane + KWOK on loopback, the operator running for real
	$(PYTEST) -q -m cluster e2e/local/tests cli/tests e2e/suite e2e/kind/tests

test-e2e: ## the e2e suite alone, on the local backend (part of test-cluster)
	$(PYTEST) -q -m e2e e2e/suite

e2e-kind: ## the e2e suite on kind with real mongod (needs Docker, kind, kubectl, internet); keeps the cluster
	bash e2e/kind/e2e.sh all

e2e-kind-down: ## delete the kind cluster of e2e-kind
	bash e2e/kind/e2e.sh down

demo: setup ## the main job on the embedded default: plane, operator, Prometheus, FerretDB; two runs compared (KEEP=1 keeps it up)
	$(PY) -m localplane.demo $(if $(KEEP),--keep,)

dev: setup ## start the local control plane with CRDs and the operator; prints the kubeconfig path
	$(PY) -m localplane.dev up

dev-down: ## stop what `make dev` started
	$(PY) -m localplane.dev down
-include bench-jobs/bench-jobs.mk

bench-reconcile: setup ## time apply->children and count API requests of the MongoCluster reconciler
	PYTHONPATH=e2e/local $(VENV)/bin/python e2e/local/bench/reconcile.py

bench-orchestration: setup ## seconds the operator adds between benchmark steps and to collect results
	PYTHONPATH=e2e/local $(VENV)/bin/python e2e/local/bench/orchestration.py

bench-step-window: setup ## a-d x 2 x 2 clients: reported throughput next to operations / measured window
	PYTHONPATH=e2e/local $(VENV)/bin/python e2e/local/bench/step_window.py

bench-scale: setup ## N MongoClusters + N BenchmarkRuns at once (BENCH_N, default 200): seconds, peak RSS, requests
	PYTHONPATH=e2e/local $(VENV)/bin/python e2e/local/bench/scale.py

bench-memory: setup ## the idle operator's RSS and its imports, this tree next to BENCH_BEFORE (default main)
	PYTHONPATH=e2e/local $(VENV)/bin/python e2e/local/bench/memory.py

bench-cli: setup ## seconds of `mongobench list` (200 runs) and `compare` (20 runs x 6 x 5), API and archives
	PYTHONPATH=e2e/local $(VENV)/bin/python e2e/local/bench/cli.py
