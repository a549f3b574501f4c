# Real nodes beside the kwok nodes (testbed/cluster/realnode.go, docs/testbed.md): a kubelet
# and kube-proxy built from tools/k8s like the control plane, Debian's containerd 1.6, runc and
# CNI plugins, and the sandbox image's pause binary from testbed/cluster/pause. `make tools`
# builds them; the e2e suites (make test-cluster) run PickyMan on such a node, and
# make test-realnode (in make test) checks the node alone.

REALNODE_APT_PACKAGES ?= containerd runc containernetworking-plugins iptables conntrack iproute2
REALNODE_HOST_TOOLS   := containerd containerd-shim-runc-v2 runc ctr iptables iptables-save ip6tables ip6tables-save conntrack ip
REALNODE_CNI_PLUGINS  := bridge host-local loopback

# Built like TOOL_SPECS (mk/cluster.mk's TOOL_RULE: a version stamp per binary, rebuilt when
# the version or tools/k8s/go.{mod,sum} changes).
REALNODE_TOOL_SPECS := \
  kubelet:$(K8S_VERSION):tools/k8s:k8s.io/kubernetes/cmd/kubelet:K8S_LDFLAGS \
  kube-proxy:$(K8S_VERSION):tools/k8s:k8s.io/kubernetes/cmd/kube-proxy:K8S_LDFLAGS
$(foreach s,$(REALNODE_TOOL_SPECS),$(eval $(call TOOL_RULE,$(s))))

# The control plane the real-node test brings up (no training-operator, no KubeRay).
REALNODE_CONTROL_PLANE := $(addprefix $(BIN)/,kube-apiserver etcd kube-scheduler kube-controller-manager kwok kwokctl)

##@ Real nodes

.PHONY: realnode-deps
realnode-deps: ## Install Debian's containerd, runc, CNI plugins, iptables and conntrack for the real nodes (no-op when present).
	@missing=; \
	for t in $(REALNODE_HOST_TOOLS); do command -v $$t >/dev/null 2>&1 || PATH=$$PATH:/usr/sbin:/sbin command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	for p in $(REALNODE_CNI_PLUGINS); do [ -x /usr/lib/cni/$$p ] || [ -x /opt/cni/bin/$$p ] || missing="$$missing cni/$$p"; done; \
	if [ -z "$$missing" ]; then \
	  echo "realnode-deps: containerd, runc, CNI plugins and iptables already installed"; \
	else \
	  echo "realnode-deps: missing$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends $(REALNODE_APT_PACKAGES); \
	fi

# The sandbox ("pause") container's binary; the testbed writes it into an image archive and
# imports it into each real node's containerd.
$(BIN)/pause: testbed/cluster/pause/main.go
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $@ ./testbed/cluster/pause

tools: $(BIN)/kubelet $(BIN)/kube-proxy $(BIN)/pause

.PHONY: realnode-tools
realnode-tools: $(BIN)/kubelet $(BIN)/kube-proxy $(BIN)/pause ## Build the kubelet and kube-proxy (tools/k8s, the control plane's version) and the pause binary into bin/.

TEST_TARGETS += test-realnode

.PHONY: test-realnode
test-realnode: $(REALNODE_CONTROL_PLANE) realnode-deps realnode-tools ## Bring up a cluster with one real node (root), run pods from imported archives against the API server and through Services, take it down.
	CI=$${CI:-true} $(GO) test -v -count=1 -timeout 20m -tags realnode -run 'TestRealNode' ./testbed/cluster/

.PHONY: test-agent-traffic
test-agent-traffic: $(REALNODE_CONTROL_PLANE) realnode-deps realnode-tools agent-deps build-pickyman ## On a real node, PyTorch pods read datasets every epoch from the cluster's dataset store (cluster up --dataset); the agent measures their traffic and the predictor their epoch times; prints "traffic prediction: epochs=N within10=K".
	CI=$${CI:-true} $(GO) test -v -count=1 -timeout 25m -tags 'realnode torch' -run 'TestTorchTrafficOnRealNode' ./testbed/cluster/
