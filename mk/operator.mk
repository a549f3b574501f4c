# The operator: binary, webhook manifests, integration tests against a real kube-apiserver and
# etcd (envtest, binaries from `make tools`), local run and deployment. See docs/operator.md.

BUILD_CMDS += ./operator/cmd/pickyman-operator
GENERATED_PATHS += config/webhook/manifests.yaml
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

# The operator's admission stage alone (no training-operator, no agents): the benchmark prints
# admissions/s, cycle p99 ms and the p99 of each cycle stage; the operator's log is left out.
.PHONY: bench-admission
bench-admission: $(BIN)/kube-apiserver $(BIN)/etcd $(TRAINER_CRDS)/.version ## Operator admission stage on kube-apiserver: 1,000 cordoned nodes, 5,000 queued one-GPU jobs, all uncordoned at once (PICKYMAN_STAGE_NODES/JOBS/QPS/JOB_CONCURRENCY/WRITE_CONCURRENCY); figures in out/admission.txt.
	@mkdir -p out
	KUBEBUILDER_ASSETS=$(BIN) TRAINER_CRDS=$(TRAINER_CRDS) $(GO) test -tags integration -count=1 -timeout 45m -run '^$$' \
	  -bench '^BenchmarkAdmissionStage$$' -benchtime 1x ./operator/internal/integration/ 2>&1 | grep -av '^[IEW][0-9]\{4\} ' | tee out/admission.txt

.PHONY: run
run: ## Run the operator locally against the current kubeconfig (no webhooks; OPERATOR_CONFIG=file).
	$(GO) run ./operator/cmd/pickyman-operator --webhooks=false $(if $(OPERATOR_CONFIG),--config $(OPERATOR_CONFIG))

# The installer: config/default with the images of IMG and AGENT_IMG (mk/images.mk), one YAML
# stream. It names the images of one build, so it is written, not committed.
INSTALLER      ?= dist/install.yaml
INSTALLER_BASE ?= config/default

.PHONY: build-installer
build-installer: ## Write dist/install.yaml: CRDs, RBAC, operator, webhooks and agent with IMG and AGENT_IMG (INSTALLER_BASE=config/overlays/cert-manager for cert-manager).
	@mkdir -p $(dir $(INSTALLER))
	$(GO) run ./hack/installer --kustomization $(INSTALLER_BASE) --operator-image $(IMG) --agent-image $(AGENT_IMG) -o $(INSTALLER)
	@echo "wrote $(INSTALLER) (operator $(IMG), agent $(AGENT_IMG))"

.PHONY: deploy
deploy: build-installer ## Install PickyMan (dist/install.yaml with IMG and AGENT_IMG) on the current kubeconfig's cluster.
	kubectl apply --server-side -f $(INSTALLER)
	kubectl -n pickyman-system rollout status deployment/pickyman-operator --timeout=5m

.PHONY: undeploy
undeploy: ## Remove everything deploy installed.
	kubectl delete --ignore-not-found --wait -f $(INSTALLER)
