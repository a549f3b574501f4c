# Generated code: deepcopy functions, CRDs and RBAC from +kubebuilder markers.
# GENERATED_PATHS lists what `make check-generated` compares with git.
GENERATED_PATHS := api config/crd/bases config/rbac/role.yaml
CONTROLLER_GEN_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(BIN)/controller-gen

##@ Generated code

.PHONY: generate
generate: manifests ## Regenerate deepcopy functions, CRDs and RBAC.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Regenerate the CRDs (config/crd/bases) and the operator's RBAC (config/rbac/role.yaml).
	$(CONTROLLER_GEN) crd paths=./api/v1alpha1/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=pickyman-operator paths=./operator/internal/controller/... output:rbac:artifacts:config=config/rbac

$(CONTROLLER_GEN):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
