# Benchmarks of the operator, the CLI and the benchmark clients (included by the root Makefile).
# Each prints figures measured side by side in one run; none asserts a time.
.PHONY: bench-reconcile bench-orchestration bench-step-window bench-scale bench-memory bench-cli \
        bench-clients bench-tls bench-method bench-validity bench-history bench-knee bench-monitoring \
        build-wireserver \
        lint-wireserver

bench-reconcile: setup ## time apply->children and count API requests of the MongoCluster reconciler
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/reconcile.py

bench-orchestration: setup ## seconds the operator adds between benchmark steps and to collect results
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/orchestration.py

bench-step-window: setup ## a-d x 2 x 2 clients: reported throughput next to operations / measured window
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/step_window.py

bench-scale: setup ## N MongoClusters + N BenchmarkRuns at once (BENCH_N, default 200): seconds, peak RSS, requests
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/scale.py

# BENCH_COMPARE: a git ref whose stack is measured first, side by side (empty: this tree alone).
BENCH_COMPARE ?=
bench-monitoring: setup ## CPU s/min, apiserver requests/min and RSS of one idle monitoring stack (node-exporters, Prometheus, its Operator, the harness) on a plane, next to the plane alone; BENCH_COMPARE=<ref> side by side; BENCH_WINDOW (60 s)
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/monitoring_cost.py $(if $(BENCH_COMPARE),--compare $(BENCH_COMPARE),)

bench-memory: setup ## the idle operator's RSS and its imports, this tree next to BENCH_BEFORE (default main)
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/memory.py

bench-cli: setup ## seconds of `mongobench list` (200 runs) and `compare` (20 runs x 6 x 5), API and archives
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/cli.py

bench-method: setup ## the method on a known truth: A/A, a 5% change, adaptive vs fixed repetitions, Duet vs RandomizedRounds (smallest change at 80% power, measured on the plane: BENCH_DUET_ROUNDS; BENCH_DUET_PLANE=0 skips it), warm-ups found, a CPU hog flagged (BENCH_NOISY_STEPS=0 skips it)
	PYTHONPATH=e2e/local:benchmarks $(VENV)/bin/python benchmarks/method.py
bench-history: setup build-java build-wireserver ## change points on a synthetic archive of 500 runs (5% shifts, CV 2%): shifts found, false changes, update time; then the knee spread of bench-knee (BENCH_KNEE=0 skips it; BENCH_SEEDS, BENCH_MAX_PVALUE, BENCH_WINDOW)
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/history.py
bench-validity: setup ## warm-up found within 2 s (simulated series) and a CPU hog on the database node flagged (real cgroups + Prometheus, ~3 min)
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/method_validity.py

bench-knee: build-java build-wireserver ## the saturation knee of one configuration searched 3 times on the local plane (wire server): spread of the knee, probes vs a grid (BENCH_KNEE_SEARCHES)
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/knee_spread.py

build-wireserver: ## build mongobench-wireserver (benchmarks/wireserver) into the tool cache (skipped when unchanged)
	@$(VENV)/bin/python benchmarks/wireserver/wireserver.py build >/dev/null

bench-clients: build-java build-wireserver ## client CPU per 1k ops and ops/s: YCSB binding vs bare Java, Locust vs bare pymongo, on a fast in-memory wire server (BENCH_SERVER=ferretdb: FerretDB)
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/clients.py

bench-tls: build-java build-wireserver ## what TLS costs the clients: YCSB binding and bare pymongo, ops/s and CPU per 1k ops, TLS vs plain side by side (wire server with a trustme certificate)
	PYTHONPATH=e2e/local $(VENV)/bin/python benchmarks/tls.py

# `make lint` also checks the wire server's Go: gofmt and go vet.
lint: lint-wireserver
lint-wireserver:
	@out=$$(gofmt -l benchmarks/wireserver); \
	  if [ -n "$$out" ]; then echo "gofmt: $$out" >&2; gofmt -d benchmarks/wireserver; exit 1; fi
	cd benchmarks/wireserver && go vet -mod=readonly ./...
