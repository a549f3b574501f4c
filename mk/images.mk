# Container images with no container engine and no registry: tools/images (go-containerregistry)
# puts the operator on an empty base and the agent on this Debian host's glibc files, and writes
# each as a `docker save` archive in bin/images/, reproducibly (the same commit gives the same
# digests). With Docker, the Dockerfiles build the same images. See docs/images.md.

VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMG       ?= ghcr.io/pickyman/pickyman-operator:$(VERSION)
AGENT_IMG ?= ghcr.io/pickyman/pickyman-agent:$(VERSION)
# The testbed's agent (simulated training on kwok nodes): what config/overlays/testbed runs.
TESTBED_AGENT_IMG ?= ghcr.io/pickyman/pickyman-testbed-agent:$(VERSION)
# Every file's mtime and the images' created time: the commit's time (reproducible-builds.org).
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# Evaluated once, so that the tags and times cannot change halfway through a run.
VERSION           := $(VERSION)
SOURCE_DATE_EPOCH := $(SOURCE_DATE_EPOCH)

IMAGES_DIR         ?= $(BIN)/images
IMAGES_REBUILD_DIR ?= $(IMAGES_DIR)/rebuild
IMAGES_USER        ?= 65532:65532
IMAGES_GOFLAGS     ?= -trimpath -buildvcs=false
IMAGES_GOENV       := GOWORK=off GOOS=linux GOARCH=amd64
IMAGES_TOOL        := $(IMAGES_DIR)/pickyman-images
IMAGES_ABS         := $(abspath $(IMAGES_DIR))
IMAGES_REBUILD_ABS := $(abspath $(IMAGES_REBUILD_DIR))

TEST_TARGETS += test-images

##@ Images

.PHONY: images
images: ## Build the operator, agent and testbed-agent images as docker-save archives in bin/images/ (no container engine or registry; reproducible).
	@mkdir -p $(IMAGES_DIR)
	cd tools/images && $(IMAGES_GOENV) CGO_ENABLED=0 $(GO) build $(IMAGES_GOFLAGS) -o $(IMAGES_ABS)/pickyman-images .
	$(IMAGES_GOENV) CGO_ENABLED=0 $(GO) build $(IMAGES_GOFLAGS) -ldflags '-s -w' -o $(IMAGES_DIR)/pickyman-operator ./operator/cmd/pickyman-operator
	$(IMAGES_GOENV) CGO_ENABLED=1 $(GO) build $(IMAGES_GOFLAGS) -ldflags '-s -w' -o $(IMAGES_DIR)/pickyman-agent ./agent/cmd/pickyman-agent
	$(IMAGES_GOENV) CGO_ENABLED=1 $(GO) build $(IMAGES_GOFLAGS) -ldflags '-s -w' -o $(IMAGES_DIR)/pickyman-testbed-agent ./testbed/cmd/pickyman-testbed-agent
	$(IMAGES_TOOL) --binary $(IMAGES_DIR)/pickyman-operator --base scratch --user $(IMAGES_USER) \
	  --tag '$(IMG)' --epoch $(SOURCE_DATE_EPOCH) --out $(IMAGES_DIR)/pickyman-operator.tar > $(IMAGES_DIR)/digests.txt.tmp
	$(IMAGES_TOOL) --binary $(IMAGES_DIR)/pickyman-agent --base glibc --user $(IMAGES_USER) \
	  --tag '$(AGENT_IMG)' --epoch $(SOURCE_DATE_EPOCH) --out $(IMAGES_DIR)/pickyman-agent.tar >> $(IMAGES_DIR)/digests.txt.tmp
	$(IMAGES_TOOL) --binary $(IMAGES_DIR)/pickyman-testbed-agent --base glibc --user $(IMAGES_USER) \
	  --tag '$(TESTBED_AGENT_IMG)' --epoch $(SOURCE_DATE_EPOCH) --out $(IMAGES_DIR)/pickyman-testbed-agent.tar >> $(IMAGES_DIR)/digests.txt.tmp
	@mv $(IMAGES_DIR)/digests.txt.tmp $(IMAGES_DIR)/digests.txt
	@cat $(IMAGES_DIR)/digests.txt; ls -l $(IMAGES_DIR)/*.tar

# The second build runs in a copy of the tree (what git tracks or would track) at another path,
# with another umask and time zone, so that a path, mode, time or host name leaking into an
# image shows as a different digest. The Go build cache is shared: -trimpath keeps it valid.
.PHONY: test-images
test-images: images ## Build the images again from a copy of the tree and check both: same digests; tag, entrypoint, user, platform, libraries (tools/images tests).
	@rm -rf $(IMAGES_REBUILD_DIR) && mkdir -p $(IMAGES_REBUILD_DIR)
	src=$$(mktemp -d "$${TMPDIR:-/tmp}/pickyman-images.XXXXXX") && trap 'rm -rf "$$src"' EXIT && \
	  git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - | tar -xf - -C "$$src" && \
	  (umask 077 && TZ=Pacific/Kiritimati $(MAKE) -C "$$src" --no-print-directory images GO='$(GO)' \
	    IMAGES_DIR=$(IMAGES_REBUILD_ABS) VERSION='$(VERSION)' SOURCE_DATE_EPOCH='$(SOURCE_DATE_EPOCH)' IMG='$(IMG)' AGENT_IMG='$(AGENT_IMG)' TESTBED_AGENT_IMG='$(TESTBED_AGENT_IMG)')
	cd tools/images && GOWORK=off \
	  PICKYMAN_OPERATOR_ARCHIVE=$(IMAGES_ABS)/pickyman-operator.tar PICKYMAN_AGENT_ARCHIVE=$(IMAGES_ABS)/pickyman-agent.tar PICKYMAN_TESTBED_AGENT_ARCHIVE=$(IMAGES_ABS)/pickyman-testbed-agent.tar \
	  PICKYMAN_OPERATOR_TAG='$(IMG)' PICKYMAN_AGENT_TAG='$(AGENT_IMG)' PICKYMAN_TESTBED_AGENT_TAG='$(TESTBED_AGENT_IMG)' PICKYMAN_REBUILD_DIR=$(IMAGES_REBUILD_ABS) \
	  $(GO) test -count=1 -v ./...

.PHONY: docker-build
docker-build: ## Build both images with Docker from the Dockerfiles (needs a Docker daemon).
	docker build -t $(IMG) .
	docker build -f agent/Dockerfile -t $(AGENT_IMG) .

.PHONY: docker-push
docker-push: ## Push both images built by docker-build (needs Docker and registry credentials).
	docker push $(IMG)
	docker push $(AGENT_IMG)
