# The local testbed cluster: control-plane binaries built from Go modules (tools/*), a kwokctl
# cluster with fake GPU nodes, the real training-operator, envtest and the e2e suites.
# See docs/testbed.md.

K8S_VERSION               ?= v1.37.2
ETCD_VERSION              ?= v3.7.3
KWOK_VERSION              ?= v0.8.0
TRAINING_OPERATOR_VERSION ?= v1.8.1
CONTROLLER_TOOLS_VERSION  ?= v0.23.0

# Tool builds share two cores with everything else: at most two packages at a time.
TOOLS_GOFLAGS ?= -p 2 -trimpath
TOOLS_ENV     ?= CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off
STAMPS        := $(BIN)/.stamps

K8S_VERSION_PKG := k8s.io/component-base/version
K8S_MINOR       := $(word 2,$(subst ., ,$(K8S_VERSION)))
K8S_LDFLAGS     := -s -w -X $(K8S_VERSION_PKG).gitVersion=$(K8S_VERSION) -X $(K8S_VERSION_PKG).gitMajor=1 \
                   -X $(K8S_VERSION_PKG).gitMinor=$(K8S_MINOR) -X $(K8S_VERSION_PKG).gitTreeState=clean \
                   -X $(K8S_VERSION_PKG).buildDate=1970-01-01T00:00:00Z
ETCD_LDFLAGS    := -s -w
KWOK_LDFLAGS    := -s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$(KWOK_VERSION:v%=%) \
                   -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$(K8S_VERSION:v%=%)

# name:version:module-dir:package:ldflags-variable (envtest's two first, so integration tests
# can run while the rest builds)
TOOL_SPECS := \
  kube-apiserver:$(K8S_VERSION):tools/k8s:k8s.io/kubernetes/cmd/kube-apiserver:K8S_LDFLAGS \
  etcd:$(ETCD_VERSION):tools/k8s:go.etcd.io/etcd/server/v3:ETCD_LDFLAGS \
  kube-scheduler:$(K8S_VERSION):tools/k8s:k8s.io/kubernetes/cmd/kube-scheduler:K8S_LDFLAGS \
  kube-controller-manager:$(K8S_VERSION):tools/k8s:k8s.io/kubernetes/cmd/kube-controller-manager:K8S_LDFLAGS \
  kwok:$(KWOK_VERSION):tools/kwok:sigs.k8s.io/kwok/cmd/kwok:KWOK_LDFLAGS \
  kwokctl:$(KWOK_VERSION):tools/kwok:sigs.k8s.io/kwok/cmd/kwokctl:KWOK_LDFLAGS \
  training-operator:$(TRAINING_OPERATOR_VERSION):tools/training-operator:github.com/kubeflow/training-operator/cmd/training-operator.v1:ETCD_LDFLAGS \
  controller-gen:$(CONTROLLER_TOOLS_VERSION):tools/controller-gen:sigs.k8s.io/controller-tools/cmd/controller-gen:ETCD_LDFLAGS

tool_field = $(word $(2),$(subst :, ,$(1)))
TOOL_NAMES := $(foreach s,$(TOOL_SPECS),$(call tool_field,$(s),1))
TOOL_BINS  := $(addprefix $(BIN)/,$(TOOL_NAMES))

##@ Testbed cluster

.PHONY: tools
tools: $(TOOL_BINS) ## Build the control plane, the real nodes' kubelet and kube-proxy, kwok, training-operator, KubeRay's controllers, Kueue's controller manager and controller-gen into bin/, with the Trainer's CRDs (only what is missing or stale).

# One stamp per binary holds the version it was built at. The stamp is rewritten only when the
# wanted version changes, so the binary is rebuilt only then, or when its tools module changes.
define TOOL_RULE
$(STAMPS)/$(call tool_field,$(1),1): FORCE
	@mkdir -p $(STAMPS); v='$(call tool_field,$(1),2)'; \
	  if [ "$$$$(cat $$@ 2>/dev/null)" != "$$$$v" ]; then echo "$$$$v" > $$@; fi

$(BIN)/$(call tool_field,$(1),1): $(STAMPS)/$(call tool_field,$(1),1) $(call tool_field,$(1),3)/go.mod $(call tool_field,$(1),3)/go.sum
	@echo "build $(call tool_field,$(1),1) $(call tool_field,$(1),2)"
	cd $(call tool_field,$(1),3) && $(TOOLS_ENV) $(GO) build $(TOOLS_GOFLAGS) \
	  -ldflags '$$($(call tool_field,$(1),5))' -o $$@ $(call tool_field,$(1),4)
	@touch $$@
endef
$(foreach s,$(TOOL_SPECS),$(eval $(call TOOL_RULE,$(s))))

.PHONY: FORCE
FORCE:

# The training-operator's CRDs, copied from its module source at the pinned version.
TRAINING_OPERATOR_CRDS := $(BIN)/training-operator-crds
$(TRAINING_OPERATOR_CRDS)/.version: $(STAMPS)/training-operator tools/training-operator/go.mod
	@rm -rf $(TRAINING_OPERATOR_CRDS) && mkdir -p $(TRAINING_OPERATOR_CRDS)
	dir=$$(cd tools/training-operator && GOWORK=off $(GO) list -m -f '{{.Dir}}' github.com/kubeflow/training-operator) && \
	  cp $$dir/manifests/base/crds/kubeflow.org_*.yaml $(TRAINING_OPERATOR_CRDS)/ && chmod u+w $(TRAINING_OPERATOR_CRDS)/*.yaml
	@echo '$(TRAINING_OPERATOR_VERSION)' > $@

tools: $(TRAINING_OPERATOR_CRDS)/.version

# KubeRay's RayCluster and RayJob controllers with the testbed dashboard (tools/kuberay: its own
# main, KubeRay's controllers unmodified), and KubeRay's CRDs from the same module source.
KUBERAY_VERSION := $(shell sed -n 's/^[[:space:]]*github.com\/ray-project\/kuberay\/ray-operator \(v[^ ]*\).*/\1/p' tools/kuberay/go.mod)
$(BIN)/kuberay-operator: tools/kuberay/go.mod tools/kuberay/go.sum $(wildcard tools/kuberay/*.go)
	@echo "build kuberay-operator $(KUBERAY_VERSION)"
	cd tools/kuberay && $(TOOLS_ENV) $(GO) build $(TOOLS_GOFLAGS) -ldflags '-s -w' -o $@ .
KUBERAY_CRDS := $(BIN)/kuberay-crds
$(KUBERAY_CRDS)/.version: tools/kuberay/go.mod
	@rm -rf $(KUBERAY_CRDS) && mkdir -p $(KUBERAY_CRDS)
	dir=$$(cd tools/kuberay && GOWORK=off $(GO) list -m -f '{{.Dir}}' github.com/ray-project/kuberay/ray-operator) && \
	  cp $$dir/config/crd/bases/ray.io_*.yaml $(KUBERAY_CRDS)/ && chmod u+w $(KUBERAY_CRDS)/*.yaml
	@echo '$(KUBERAY_VERSION)' > $@
tools: $(BIN)/kuberay-operator $(KUBERAY_CRDS)/.version

# Kubeflow Trainer v2's CRDs (TrainJob), for the operator's integration tests. The trainer's Go
# API imports JobSet, so its module is not a dependency of this one: `go mod download` fetches
# the module's zip alone (it does not resolve the module's dependencies) from the Go module
# proxy, and the CRDs are copied from it.
TRAINER_VERSION ?= v2.0.0
TRAINER_CRDS    := $(BIN)/trainer-crds
$(STAMPS)/trainer-crds: FORCE
	@mkdir -p $(STAMPS); if [ "$$(cat $@ 2>/dev/null)" != '$(TRAINER_VERSION)' ]; then echo '$(TRAINER_VERSION)' > $@; fi
$(TRAINER_CRDS)/.version: $(STAMPS)/trainer-crds
	@rm -rf $(TRAINER_CRDS) && mkdir -p $(TRAINER_CRDS)
	dir=$$(GOWORK=off $(GO) mod download -json github.com/kubeflow/trainer/v2@$(TRAINER_VERSION) | \
	  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && test -n "$$dir" && \
	  cp $$dir/manifests/base/crds/trainer.kubeflow.org_*.yaml $(TRAINER_CRDS)/ && chmod u+w $(TRAINER_CRDS)/*.yaml
	@echo '$(TRAINER_VERSION)' > $@
tools: $(TRAINER_CRDS)/.version

# Cluster bring-up. CLUSTER_FLAGS are passed to `pickyman cluster up`, e.g.
#   make cluster-up CLUSTER_FLAGS="--pool 4x8:A100 --pool 2x4:V100"
CLUSTER_NAME  ?= pickyman
CLUSTER_FLAGS ?= --nodes 4 --gpus-per-node 8 --gpu-model A100
PICKYMAN_RUN  := $(GO) run ./testbed/cmd/pickyman

.PHONY: cluster-up
cluster-up: tools build-pickyman ## Bring the local testbed cluster up (idempotent); prints the kubeconfig path.
	$(PICKYMAN_RUN) cluster --name $(CLUSTER_NAME) up $(CLUSTER_FLAGS)

.PHONY: cluster-down
cluster-down: ## Take the local testbed cluster down; fails if a process or port is left.
	$(PICKYMAN_RUN) cluster --name $(CLUSTER_NAME) down

.PHONY: cluster-status
cluster-status: ## Show the local testbed cluster's processes, nodes and GPUs.
	$(PICKYMAN_RUN) cluster --name $(CLUSTER_NAME) status

# The testbed's own integration tests (build tag "integration", as the operator's) run against
# envtest on the built binaries; mk/operator.mk runs the operator's.
.PHONY: test-envtest
test-envtest: $(BIN)/kube-apiserver $(BIN)/etcd ## Run the testbed's integration tests (envtest on bin/kube-apiserver and bin/etcd).
	CI=$${CI:-true} KUBEBUILDER_ASSETS=$(BIN) $(GO) test -race -count=1 -tags integration ./testbed/envtest/... ./testbed/cluster/...

E2E_FLAGS ?= -ginkgo.v
# Specs labelled "scale" measure rather than test: they build only with the tag scale, which
# make scale-cluster sets; the label filter keeps the others out of that run.
E2E_LABELS ?= !scale

.PHONY: test-cluster
test-cluster: tools build images realnode-deps ## Run the e2e suites on a local testbed cluster that the suite brings up and down, with PickyMan installed by its installer on a real node (PICKYMAN_E2E_PROCESSES=1: local processes).
	env -u KUBECONFIG $(GO) test -v -count=1 -timeout 30m -tags e2e ./e2e -args -ginkgo.label-filter='$(E2E_LABELS)' $(E2E_FLAGS)

.PHONY: e2e
e2e: ## Run the e2e suites against the current kubeconfig (KUBECONFIG or ~/.kube/config).
	$(GO) test -v -count=1 -timeout 30m -tags e2e ./e2e -args -kubeconfig=$${KUBECONFIG:-$$HOME/.kube/config} -ginkgo.label-filter='$(E2E_LABELS)' $(E2E_FLAGS)

.PHONY: scale-cluster
scale-cluster: tools build images realnode-deps ## Measure the operator and testbed agent on 1,000 fake nodes with 5,000 jobs (PICKYMAN_SCALE_NODES/JOBS; PICKYMAN_SCALE_UNTIL=admitted stops after the admissions); figures in out/scale.txt.
	env -u KUBECONFIG $(GO) test -v -count=1 -timeout 100m -tags e2e,scale ./e2e -args -ginkgo.label-filter=scale $(E2E_FLAGS)

TEST_TARGETS += test-envtest test-cluster

# kind (needs internet and a container engine; not run in CI): kwok and the training-operator
# from their published manifests, PickyMan from the same images and installer (testbed
# overlay) as the local testbed, the fake GPU nodes from the same Go code, the kubeconfig in
# the same shape as the local cluster's. make e2e then runs the same specs.
KIND_VERSION    ?= v0.32.0
KIND_CLUSTER    ?= pickyman
KIND_KUBECONFIG ?= $(CURDIR)/.cache/pickyman/kind/$(KIND_CLUSTER)/kubeconfig.yaml
KWOK_RELEASE    := https://github.com/kubernetes-sigs/kwok/releases/download/$(KWOK_VERSION)
KIND_POOLS      ?= --pool 4x8:A100

.PHONY: kind-up
kind-up: images ## Create a kind cluster with kwok, the training-operator, PickyMan from its installer (images loaded from bin/images) and fake GPU nodes (needs internet and a container engine).
	@mkdir -p $(dir $(KIND_KUBECONFIG))
	$(GO) run sigs.k8s.io/kind@$(KIND_VERSION) create cluster --name $(KIND_CLUSTER) --kubeconfig $(KIND_KUBECONFIG)
	kubectl --kubeconfig $(KIND_KUBECONFIG) apply -f $(KWOK_RELEASE)/kwok.yaml
	kubectl --kubeconfig $(KIND_KUBECONFIG) apply -k config/kwok
	kubectl --kubeconfig $(KIND_KUBECONFIG) apply --server-side -k "github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=$(TRAINING_OPERATOR_VERSION)"
	kubectl --kubeconfig $(KIND_KUBECONFIG) -n kubeflow rollout status deployment/training-operator --timeout=5m
	$(GO) run sigs.k8s.io/kind@$(KIND_VERSION) load image-archive $(IMAGES_DIR)/pickyman-operator.tar --name $(KIND_CLUSTER)
	$(GO) run sigs.k8s.io/kind@$(KIND_VERSION) load image-archive $(IMAGES_DIR)/pickyman-agent.tar --name $(KIND_CLUSTER)
	$(GO) run sigs.k8s.io/kind@$(KIND_VERSION) load image-archive $(IMAGES_DIR)/pickyman-testbed-agent.tar --name $(KIND_CLUSTER)
	# kind's node is the "real node" of the testbed overlay: PickyMan's pods run there.
	kubectl --kubeconfig $(KIND_KUBECONFIG) label node --all --overwrite pickyman.dev/real-node=true
	$(GO) run ./hack/installer --kustomization config/overlays/testbed --operator-image $(IMG) --agent-image $(AGENT_IMG) --testbed-agent-image $(TESTBED_AGENT_IMG) | \
	  kubectl --kubeconfig $(KIND_KUBECONFIG) apply --server-side -f -
	kubectl --kubeconfig $(KIND_KUBECONFIG) -n pickyman-system rollout status deployment/pickyman-operator --timeout=5m
	$(PICKYMAN_RUN) cluster nodes --kubeconfig $(KIND_KUBECONFIG) $(KIND_POOLS)
	@echo "export KUBECONFIG=$(KIND_KUBECONFIG); make e2e"

.PHONY: kind-down
kind-down: ## Delete the kind cluster.
	$(GO) run sigs.k8s.io/kind@$(KIND_VERSION) delete cluster --name $(KIND_CLUSTER)
