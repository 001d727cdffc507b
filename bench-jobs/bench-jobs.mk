# bench-jobs targets (included by the root Makefile).
.PHONY: bench-clients build-java

build-java: ## build the YCSB MongoDB binding (skipped when unchanged)
	bash hack/build-java.sh

bench-clients: build-java ## client CPU per 1k ops and ops/s: YCSB binding, bare Java, Locust, bare pymongo on FerretDB
	PYTHONPATH=e2e/local $(VENV)/bin/python bench-jobs/bench_clients.py
