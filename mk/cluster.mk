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

# name:version:module-dir:package:ldflags-variable
TOOL_SPECS := \
  kube-apiserver:$(K8S_VERSION):tools/k8s:k8s.io/kubernetes/cmd/kube-apiserver:K8S_LDFLAGS \
  kube-scheduler:$(K8S_VERSION):tools/k8s:k8s.io/kubernetes/cmd/kube-scheduler:K8S_LDFLAGS \
  kube-controller-manager:$(K8S_VERSION):tools/k8s:k8s.io/kubernetes/cmd/kube-controller-manager:K8S_LDFLAGS \
  etcd:$(ETCD_VERSION):tools/k8s:go.etcd.io/etcd/server/v3:ETCD_LDFLAGS \
  kwok:$(KWOK_VERSION):tools/kwok:sigs.k8s.io/kwok/cmd/kwok:KWOK_LDFLAGS \
  kwokctl:$(KWOK_VERSION):tools/kwok:sigs.k8s.io/kwok/cmd/kwokctl:KWOK_LDFLAGS \
  training-operator:$(TRAINING_OPERATOR_VERSION):tools/training-operator:github.com/kubeflow/training-operator/cmd/training-operator.v1:ETCD_LDFLAGS \
  controller-gen:$(CONTROLLER_TOOLS_VERSION):tools/controller-gen:sigs.k8s.io/controller-tools/cmd/controller-gen:ETCD_LDFLAGS

tool_field = $(word $(2),$(subst :, ,$(1)))
TOOL_NAMES := $(foreach s,$(TOOL_SPECS),$(call tool_field,$(s),1))
TOOL_BINS  := $(addprefix $(BIN)/,$(TOOL_NAMES))

##@ Testbed cluster

.PHONY: tools
tools: $(TOOL_BINS) ## Build the control plane, kwok, training-operator and controller-gen into bin/ (only what is missing or stale).

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
