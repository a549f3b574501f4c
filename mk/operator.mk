# The operator: binary, webhook manifests, integration tests against a real kube-apiserver and
# etcd (envtest, binaries from `make tools`), local run and deployment. See docs/operator.md.

BUILD_CMDS += ./operator/cmd/pickyman-operator
GENERATED_PATHS += config/webhook/manifests.yaml
KUSTOMIZE ?= $(GO) run sigs.k8s.io/kustomize/kustomize/v5@v5.7.1
OPERATOR_CONFIG ?=
INTEGRATION_TIMEOUT ?= 20m

##@ Operator

# The webhook configurations come from the +kubebuilder:webhook markers.
generate: webhook-manifests
.PHONY: webhook-manifests
webhook-manifests: $(CONTROLLER_GEN) ## Regenerate config/webhook/manifests.yaml from the webhook markers.
	$(CONTROLLER_GEN) webhook paths=./operator/internal/webhook/... output:webhook:artifacts:config=config/webhook

.PHONY: test-integration
test-integration: $(BIN)/kube-apiserver $(BIN)/etcd $(TRAINER_CRDS)/.version ## Run the operator's integration tests against kube-apiserver and etcd from bin/.
	KUBEBUILDER_ASSETS=$(BIN) TRAINER_CRDS=$(TRAINER_CRDS) $(GO) test -tags integration -count=1 -timeout $(INTEGRATION_TIMEOUT) -v ./operator/internal/integration/...

TEST_TARGETS += test-integration

.PHONY: run
run: ## Run the operator locally against the current kubeconfig (no webhooks; OPERATOR_CONFIG=file).
	$(GO) run ./operator/cmd/pickyman-operator --webhooks=false $(if $(OPERATOR_CONFIG),--config $(OPERATOR_CONFIG))

.PHONY: deploy
deploy: ## Deploy CRDs, RBAC, the operator and its webhooks to the current kubeconfig's cluster.
	$(KUSTOMIZE) build config/default | kubectl apply --server-side -f -

.PHONY: undeploy
undeploy: ## Remove what deploy created.
	$(KUSTOMIZE) build config/default | kubectl delete --ignore-not-found -f -
