# bench-jobs targets (included by the root Makefile).
.PHONY: build-java

build-java: ## build the YCSB MongoDB binding (skipped when unchanged)
	bash hack/build-java.sh
