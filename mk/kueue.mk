# Kueue's controller manager (sigs.k8s.io/kueue, unmodified) for the local testbed, built from
# its own tools module (tools/kueue), with its CRDs and webhook configurations copied from the
# same module source at the pinned version. The testbed runs it on request (pickyman cluster up
# --kueue, pickyman replay --scheduler kueue). See docs/testbed.md.

KUEUE_VERSION := $(shell sed -n 's/^[[:space:]]*require sigs.k8s.io\/kueue \(v[^ ]*\).*/\1/p; s/^[[:space:]]*sigs.k8s.io\/kueue \(v[^ ]*\).*/\1/p' tools/kueue/go.mod)
KUEUE_DIR     := $(BIN)/kueue

$(BIN)/kueue-manager: tools/kueue/go.mod tools/kueue/go.sum
	@echo "build kueue-manager $(KUEUE_VERSION)"
	cd tools/kueue && $(TOOLS_ENV) $(GO) build $(TOOLS_GOFLAGS) -ldflags '-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$(KUEUE_VERSION)' \
	  -o $@ sigs.k8s.io/kueue/cmd/kueue

$(KUEUE_DIR)/.version: tools/kueue/go.mod
	@rm -rf $(KUEUE_DIR) && mkdir -p $(KUEUE_DIR)/crds $(KUEUE_DIR)/webhook
	dir=$$(cd tools/kueue && GOWORK=off $(GO) list -m -f '{{.Dir}}' sigs.k8s.io/kueue) && \
	  cp $$dir/config/components/crd/bases/kueue.x-k8s.io_*.yaml $(KUEUE_DIR)/crds/ && \
	  cp $$dir/config/components/webhook/manifests.yaml $(KUEUE_DIR)/webhook/ && chmod -R u+w $(KUEUE_DIR)
	@echo '$(KUEUE_VERSION)' > $@

.PHONY: kueue
kueue: $(BIN)/kueue-manager $(KUEUE_DIR)/.version ## Build Kueue's controller manager into bin/kueue-manager, with its CRDs and webhooks in bin/kueue/ (part of make tools).

tools: kueue
