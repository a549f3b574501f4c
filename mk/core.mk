##@ Scheduling core

.PHONY: bench-core
bench-core: ## Benchmark gang placement and one Schedule cycle of each baseline (300 nodes x 8 GPUs, 2,000 running, 5,000 queued).
	$(GO) test -run '^$$' -bench 'BenchmarkPlaceGang|BenchmarkSchedule' -benchmem ./operator/pkg/sched/ ./operator/pkg/policies/
