# JobSet's controller and the Kubeflow Trainer v2 controller for the testbed's TrainJobs
# (tools/jobset, tools/trainer: each its own main around the upstream controllers, built from
# the module versions go.mod pins), and JobSet's CRDs from the same module source. The
# Trainer's CRDs are mk/cluster.mk's bin/trainer-crds (TRAINER_VERSION, the same version).
# See docs/testbed.md.

JOBSET_VERSION       := $(shell sed -n 's/^[[:space:]]*sigs.k8s.io\/jobset \(v[^ ]*\).*/\1/p' tools/jobset/go.mod)
TRAINER_TOOL_VERSION := $(shell sed -n 's/^[[:space:]]*github.com\/kubeflow\/trainer\/v2 \(v[^ ]*\).*/\1/p' tools/trainer/go.mod)

$(BIN)/jobset-controller: tools/jobset/go.mod tools/jobset/go.sum $(wildcard tools/jobset/*.go)
	@echo "build jobset-controller $(JOBSET_VERSION)"
	cd tools/jobset && $(TOOLS_ENV) $(GO) build $(TOOLS_GOFLAGS) -ldflags '-s -w' -o $@ .

$(BIN)/trainer-controller-manager: tools/trainer/go.mod tools/trainer/go.sum $(wildcard tools/trainer/*.go)
	@echo "build trainer-controller-manager $(TRAINER_TOOL_VERSION)"
	cd tools/trainer && $(TOOLS_ENV) $(GO) build $(TOOLS_GOFLAGS) -ldflags '-s -w' -o $@ .

JOBSET_CRDS := $(BIN)/jobset-crds
$(JOBSET_CRDS)/.version: tools/jobset/go.mod
	@rm -rf $(JOBSET_CRDS) && mkdir -p $(JOBSET_CRDS)
	dir=$$(cd tools/jobset && GOWORK=off $(GO) list -m -f '{{.Dir}}' sigs.k8s.io/jobset) && \
	  cp $$dir/config/components/crd/bases/jobset.x-k8s.io_*.yaml $(JOBSET_CRDS)/ && chmod u+w $(JOBSET_CRDS)/*.yaml
	@echo '$(JOBSET_VERSION)' > $@

# The Trainer's controller must be of the version whose CRDs the testbed installs.
.PHONY: check-trainer-version
check-trainer-version:
	@test '$(TRAINER_TOOL_VERSION)' = '$(TRAINER_VERSION)' || \
	  { echo "tools/trainer pins $(TRAINER_TOOL_VERSION), TRAINER_VERSION is $(TRAINER_VERSION)"; exit 1; }

tools: $(BIN)/jobset-controller $(BIN)/trainer-controller-manager $(JOBSET_CRDS)/.version check-trainer-version
