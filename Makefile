# PickyMan: a preemptive, checkpoint-aware GPU scheduler for Kubeflow training jobs.
#
# Each area of the project keeps its targets in mk/<area>.mk; this file holds the common
# targets. Targets documented with '## text' appear in `make help`.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

GO        ?= go
BIN       ?= $(CURDIR)/bin
SHARED    ?= $(CURDIR)/../shared
TRACES    ?= $(SHARED)/traces
PKGS      ?= ./...
# An execution count, not a duration: Go 1.26's fuzzing coordinator can fail a target with a
# bare "context deadline exceeded" when a duration runs out (golang/go#75804, fixed in 1.27).
FUZZTIME  ?= 10000x
export PICKYMAN_TRACES := $(TRACES)

# Targets that `make test` runs after the unit tests; mk/*.mk files append to it.
TEST_TARGETS :=

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

include $(sort $(wildcard mk/*.mk))

##@ Development

.PHONY: fmt
fmt: ## Run gofmt on the code.
	$(GO) fmt $(PKGS)

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet $(PKGS)

.PHONY: test-unit
test-unit: ## Run the unit tests with the race detector.
	$(GO) test -race -count=1 $(PKGS)

.PHONY: test
test: vet check-generated lint test-unit fuzz $(TEST_TARGETS) ## Run every test: vet, generated-file check, lint, unit (-race, with the import rules), fuzz, and the suites of mk/*.mk.

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 10000x: executions) each.
	@set -e; for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f\$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

.PHONY: check-generated
check-generated: generate ## Fail if generated files differ from what is committed.
	@if [ -n "$$(git status --porcelain -- $(GENERATED_PATHS) 2>/dev/null)" ]; then \
	  echo "generated files are stale; run 'make generate' and commit:"; git status --porcelain -- $(GENERATED_PATHS); exit 1; fi

.PHONY: lint
lint: $(BIN)/golangci-lint ## Run golangci-lint v2.15.0 (.golangci.yml: the standard linters and ginkgolinter, every build tag).
	$(BIN)/golangci-lint run ./...

$(BIN)/golangci-lint:
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

##@ Build

.PHONY: build
build: ## Build the binaries into bin/.
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./testbed/cmd/pickyman $(BUILD_CMDS)

.PHONY: build-pickyman
build-pickyman: ## Build bin/pickyman alone (simulator, trace tools, testbed; not the agent).
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./testbed/cmd/pickyman

.PHONY: demo
demo: build-pickyman ## Run the main job: the baselines and PickyMan on the generated default trace on 16x8; verdict, table, report in out/demo/.
	$(BIN)/pickyman simulate --out out/demo $(DEMO_FLAGS)

.PHONY: clean
clean: ## Remove build outputs (not the cached tool binaries).
	rm -rf out/
