# bench-jobs targets (included by the root Makefile).
.PHONY: bench-clients build-java build-wireserver lint-wireserver

build-java: ## build the YCSB MongoDB binding (skipped when unchanged)
	bash hack/build-java.sh

build-wireserver: ## build mongobench-wireserver (bench-jobs/wireserver) into the tool cache (skipped when unchanged)
	@$(VENV)/bin/python bench-jobs/wireserver/wireserver.py build >/dev/null

bench-clients: build-java build-wireserver ## client CPU per 1k ops and ops/s: YCSB binding vs bare Java, Locust vs bare pymongo, on a fast in-memory wire server (BENCH_SERVER=ferretdb: FerretDB)
	PYTHONPATH=e2e/local $(VENV)/bin/python bench-jobs/bench_clients.py

# `make lint` also checks the wire server's Go: gofmt and go vet.
lint: lint-wireserver
lint-wireserver:
	@out=$$(gofmt -l bench-jobs/wireserver); \
	  if [ -n "$$out" ]; then echo "gofmt: $$out" >&2; gofmt -d bench-jobs/wireserver; exit 1; fi
	cd bench-jobs/wireserver && go vet -mod=readonly ./...
