# Simulator, metrics and report (testbed/sim, testbed/metrics, testbed/report).

##@ Simulator

.PHONY: test-sim
test-sim: ## Every policy on the Tiresias 60-job trace, the baselines and pickyman on the full philly.csv (PHILLY_ALL=1: ablations too), invariants on (needs ../shared/traces; fails without it when CI is set).
	$(GO) test -count=1 -timeout 90m -run '^(TestTiresias60|TestPhilly)$$' -v ./testbed/sim/ $(if $(PHILLY_ALL),-args -philly.all) | grep -E '^(---|ok|FAIL|PASS)|^ *--- |philly: '

.PHONY: bench-sim
bench-sim: ## Simulator speed: jobs/s and events/s per policy on the full philly.csv (cluster: docs/simulator.md).
	$(GO) test -run '^$$' -bench '^BenchmarkSimulate' -benchtime 1x -timeout 30m ./testbed/sim/

TEST_TARGETS += test-sim
