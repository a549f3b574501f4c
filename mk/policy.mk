# The PickyMan policy: its results table and benchmark (docs/policy.md).

POLICY_OUT     ?= out/policy
POLICY_BENCH   ?= 200x
POLICY_PKGS    := ./operator/pkg/predictor/... ./operator/pkg/overhead/... ./operator/pkg/profile/... ./operator/pkg/policies/pickyman/...

##@ Policy

.PHONY: test-policy
test-policy: ## Run the predictor, overhead model, profile database and PickyMan tests with the race detector.
	$(GO) test -race -count=1 $(POLICY_PKGS)

.PHONY: bench-policy
bench-policy: ## Benchmark one PickyMan decision: 10,000 running and 5,000 waiting jobs on 2,000 nodes.
	@mkdir -p $(POLICY_OUT)
	$(GO) test -run '^$$' -bench BenchmarkSchedule -benchmem -benchtime $(POLICY_BENCH) ./operator/pkg/policies/pickyman/ | tee $(POLICY_OUT)/bench.txt

.PHONY: accuracy-policy
accuracy-policy: ## Prediction and overhead accuracy on a profiled workload in the simulator.
	@mkdir -p $(POLICY_OUT)
	$(GO) test -count=1 -v -run TestPredictionAndOverheadAccuracy ./testbed/sim/ | tee $(POLICY_OUT)/accuracy.txt

# policy-run NAME, SIMULATE-ARGS: one results run, table in $(POLICY_OUT)/NAME.txt.
define policy-run
	@echo "== $(1): pickyman simulate --policies all $(2)"
	$(BIN)/pickyman simulate --policies all $(2) --out $(POLICY_OUT)/$(1) | tee $(POLICY_OUT)/$(1).txt
endef

OPENB := $(TRACES)/alibaba-openb

.PHONY: results-policy
results-policy: build ## Every policy and ablation on the traces of docs/policy.md, then the benchmark and accuracy runs; output in $(POLICY_OUT)/.
	@mkdir -p $(POLICY_OUT)
	$(call policy-run,tiresias60,--trace $(TRACES)/tiresias/60_job.csv --cluster 2x4)
	$(call policy-run,philly-week,--trace $(TRACES)/philly-adaptdl/philly.csv --cluster 64x8 --window 1176h:1344h)
	$(call policy-run,generated,--cluster 8x8)
	$(call policy-run,openb,--trace $(OPENB)/v2023_openb_pod_list_default.csv --cluster $(OPENB)/v2023_openb_node_list_gpu_node.csv)
	$(call policy-run,openb-4x8,--trace $(OPENB)/v2023_openb_pod_list_default.csv --cluster 4x8)
	$(call policy-run,philly,--trace $(TRACES)/philly-adaptdl/philly.csv --cluster 112x8)
	$(GO) run ./hack/restable $(addprefix $(POLICY_OUT)/,tiresias60 philly-week generated openb openb-4x8 philly) > $(POLICY_OUT)/tables.md
	$(GO) run ./hack/restable -openb $(OPENB)/v2023_openb_pod_list_default.csv $(POLICY_OUT)/openb-4x8 >> $(POLICY_OUT)/tables.md
	$(MAKE) --no-print-directory bench-policy accuracy-policy

# Elastic rows of docs/policy.md: half of the jobs of 2 GPUs or more elastic (--elastic 0.5),
# bounds half to once (grow1) or twice (grow2) their request.
ELASTIC_POLICIES ?= fifo,tiresias,kueue,pickyman,pickyman-rigid

.PHONY: results-elastic
results-elastic: build ## Elastic rows of docs/policy.md: half of the multi-GPU jobs elastic, with and without growth beyond the request; output in $(POLICY_OUT)/.
	@mkdir -p $(POLICY_OUT)
	$(call policy-run,tiresias60-elastic,--trace $(TRACES)/tiresias/60_job.csv --cluster 2x4 --elastic 0.5 --policies $(ELASTIC_POLICIES))
	$(call policy-run,philly-week-elastic,--trace $(TRACES)/philly-adaptdl/philly.csv --cluster 64x8 --window 1176h:1344h --elastic 0.5 --policies $(ELASTIC_POLICIES))
	$(call policy-run,philly-week-elastic-grow2,--trace $(TRACES)/philly-adaptdl/philly.csv --cluster 64x8 --window 1176h:1344h --elastic 0.5 --elastic-grow 2 --policies pickyman,pickyman-rigid)
	$(call policy-run,generated-elastic,--cluster 8x8 --elastic 0.5 --policies $(ELASTIC_POLICIES))
	$(call policy-run,generated-elastic-grow2,--cluster 8x8 --elastic 0.5 --elastic-grow 2 --policies pickyman,pickyman-rigid)

# The settings compared in docs/policy.md ("Settings compared", "Why SRTF waits less"): the
# defaults, the options that look past the waiting job alone (budgetEvery, exchange, both),
# next to oracle srtf, tiresias and fifo, over three seeds on the contended runs. Each run
# also writes a report per seed (its Pareto plot: mean wait against GPU-hours lost) to
# $(POLICY_OUT)/sweep/<run>/seed-N/report.html. The full philly.csv (one seed, minutes per
# variant) only with SWEEP_FULL=1.
SWEEP_VARIANTS ?= pickyman pickyman|budgetEvery=1h pickyman|exchange=2 pickyman|budgetEvery=1h;exchange=2 srtf tiresias fifo
SWEEP_SEEDS    ?= 1,2,3
SWEEP_FULL     ?=
SWEEP          := $(GO) run ./hack/sweep
SWEEP_ARGS      = -seeds $(SWEEP_SEEDS) -variants '$(SWEEP_VARIANTS)' -pairs 'pickyman,srtf'

.PHONY: sweep-policy
sweep-policy: ## Compare PickyMan settings over several seeds on the contended runs of docs/policy.md; output in $(POLICY_OUT)/sweep.md and $(POLICY_OUT)/sweep/.
	@mkdir -p $(POLICY_OUT)
	$(SWEEP) -trace $(TRACES)/tiresias/60_job.csv -cluster 2x4 $(SWEEP_ARGS) -out $(POLICY_OUT)/sweep/tiresias60 > $(POLICY_OUT)/sweep.md
	$(SWEEP) -trace $(TRACES)/philly-adaptdl/philly.csv -cluster 64x8 -window 1176:1344 $(SWEEP_ARGS) -out $(POLICY_OUT)/sweep/philly-week >> $(POLICY_OUT)/sweep.md
	$(SWEEP) -cluster 8x8 $(SWEEP_ARGS) -out $(POLICY_OUT)/sweep/generated >> $(POLICY_OUT)/sweep.md
	$(SWEEP) -trace $(OPENB)/v2023_openb_pod_list_default.csv -cluster 4x8 $(SWEEP_ARGS) -out $(POLICY_OUT)/sweep/openb-4x8 >> $(POLICY_OUT)/sweep.md
	$(if $(SWEEP_FULL),$(SWEEP) -trace $(TRACES)/philly-adaptdl/philly.csv -cluster 112x8 -seeds 1 -variants '$(SWEEP_VARIANTS)' -out $(POLICY_OUT)/sweep/philly >> $(POLICY_OUT)/sweep.md)
