# The node agent: binary, Debian's PyTorch for the real-training test, and that test.

BUILD_CMDS += ./agent/cmd/pickyman-agent ./testbed/cmd/pickyman-testbed-agent
TEST_TARGETS += test-agent-integration test-agent-torch

AGENT_PYTHON ?= /usr/bin/python3

##@ Agent

.PHONY: agent-deps
agent-deps: ## Install Debian's python3-torch, and venv, pip and setuptools for the client's install test (no-op when present).
	@if $(AGENT_PYTHON) -c 'import torch, torch.distributed as d, setuptools, pip, ensurepip; assert d.is_gloo_available()' 2>/dev/null; then \
	  echo "agent-deps: PyTorch, venv, pip and setuptools already usable with $(AGENT_PYTHON)"; \
	else \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends python3-torch python3-venv python3-pip python3-setuptools; \
	fi

.PHONY: test-agent
test-agent: ## Run the agent's unit tests with the race detector.
	$(GO) test -race -count=1 ./agent/...

.PHONY: test-agent-integration
test-agent-integration: $(BIN)/kube-apiserver $(BIN)/etcd ## Run the agent's coordinator and the testbed agent against kube-apiserver and etcd from bin/.
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags integration -count=1 -timeout 10m -v ./agent/test/integration/... ./testbed/agentsim/

.PHONY: test-agent-torch
test-agent-torch: agent-deps test-agent-traffic ## Run the agent end to end with real torchrun DDP jobs (and first make test-agent-traffic, on a real node): checkpoint on request, resume, compare with the overhead model; shrink 2->1 and grow 1->2 from checkpoints; SIGTERM saves mid-epoch and resumes; the Python client's unit tests, offline install into a venv, peer check and weights-only checkpoints.
	$(GO) test -tags torch -count=1 -v -timeout 20m -run 'TestTorchCheckpointAndResume|TestTorchResizeFromCheckpoint|TestTorchSigtermCheckpointsAtOnce|TestPythonClientAndCheckpointSafety|TestPythonClientUnitTests|TestPythonPackageInstalls' ./agent/test/torch/

.PHONY: run-agent-testbed
run-agent-testbed: ## Run the testbed agent (simulated training on the kwok nodes) against the current kubeconfig (TIME_SCALE=60 by default).
	$(GO) run ./testbed/cmd/pickyman-testbed-agent --time-scale $${TIME_SCALE:-60} --metrics-addr 127.0.0.1:9400

.PHONY: bench-agent
bench-agent: $(BIN)/kube-apiserver $(BIN)/etcd ## Measure one agent's API requests at steady state (8 pods with 1-minute epochs; 16 with 5-second epochs): prints "agent API requests/s: X" per case.
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags integration -count=1 -timeout 10m -run '^$$' -bench '^BenchmarkAgentRequests$$' -benchtime 1x ./agent/test/integration/ 2>&1 | grep -av '^[IEW][0-9]\{4\} '
