# Generated code: deepcopy functions, CRDs and RBAC from +kubebuilder markers.
# GENERATED_PATHS lists what `make check-generated` compares with git.
GENERATED_PATHS := api config/crd/bases config/rbac/role.yaml
CONTROLLER_GEN ?= $(BIN)/controller-gen

##@ Generated code

.PHONY: generate
generate: manifests ## Regenerate deepcopy functions, CRDs and RBAC.
	$(CONTROLLER_GEN) object paths=./api/...

# RBAC markers: the operator's in operator/internal/controller/rbac.go, and a job kind's next to
# its adapter where the kind is not a dependency of this module (TrainJob).
.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Regenerate the CRDs (config/crd/bases) and the operator's RBAC (config/rbac/role.yaml).
	$(CONTROLLER_GEN) crd paths=./api/v1alpha1/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=operator paths="./operator/internal/controller/...;./operator/pkg/jobframework/..." output:rbac:artifacts:config=config/rbac

# $(BIN)/controller-gen is built by `make tools` (mk/cluster.mk) from the pinned tools module.
