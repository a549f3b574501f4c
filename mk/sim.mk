# Simulator, metrics and report (testbed/sim, testbed/metrics, testbed/report).

##@ Simulator

.PHONY: test-sim
test-sim: ## Every policy on the Tiresias 60-job trace, the baselines and pickyman on the full philly.csv (PHILLY_ALL=1: ablations too), invariants on (needs ../shared/traces; fails without it when CI is set).
	$(GO) test -count=1 -timeout 90m -run '^(TestTiresias60|TestPhilly)$$' -v ./testbed/sim/ $(if $(PHILLY_ALL),-args -philly.all) | grep -E '^(---|ok|FAIL|PASS)|^ *--- |philly: '

.PHONY: bench-sim
bench-sim: build ## Simulator cost per run and policy: events per job, cycles, wall seconds, max RSS (Tiresias 60 jobs on 1x4, generated at load 2 on 8x8, philly.csv on 64x8, the baselines on 112x8; docs/simulator.md).
	$(GO) run ./hack/benchsim -pickyman $(BIN)/pickyman -traces $(TRACES) $(if $(BENCH_SIM_RUNS),-only $(BENCH_SIM_RUNS))

TEST_TARGETS += test-sim
