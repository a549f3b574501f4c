# The report page in a browser: Debian's chromium renders report.html to a PNG, and a test
# loads a generated page headless and checks that its script ran without errors.

CHROMIUM          ?= chromium
REPORT_DIR        ?= out/demo
REPORT_PNG_WIDTH  ?= 1280
REPORT_PNG_HEIGHT ?= 3800

TEST_TARGETS += test-report-browser

##@ Report

.PHONY: report-deps
report-deps: ## Install Debian's chromium for the report's browser targets (no-op when present).
	@if command -v $(CHROMIUM) >/dev/null 2>&1; then \
	  echo "report-deps: $$(command -v $(CHROMIUM)) present"; \
	else \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends chromium; \
	fi

.PHONY: report-png
report-png: report-deps $(if $(filter out/demo,$(REPORT_DIR)),demo) ## Render REPORT_DIR/report.html (default out/demo, after `make demo`) to report.png in headless Chromium.
	@test -f $(REPORT_DIR)/report.html || { echo "report-png: no $(REPORT_DIR)/report.html (run pickyman simulate --out $(REPORT_DIR))"; exit 1; }
	@profile=$$(mktemp -d); trap 'rm -rf "$$profile"' EXIT; \
	if ! $(CHROMIUM) --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$$profile" \
	    --window-size=$(REPORT_PNG_WIDTH),$(REPORT_PNG_HEIGHT) --virtual-time-budget=5000 \
	    --screenshot=$(abspath $(REPORT_DIR))/report.png file://$(abspath $(REPORT_DIR))/report.html \
	    >$(REPORT_DIR)/chromium.log 2>&1; then cat $(REPORT_DIR)/chromium.log; exit 1; fi
	@echo "wrote $(REPORT_DIR)/report.png"

.PHONY: test-report-browser
test-report-browser: report-deps ## Load a generated report.html in headless Chromium: every plot set up, no script error (fails without chromium when CI is set).
	CHROMIUM=$(CHROMIUM) $(GO) test -tags browser -count=1 -run '^TestReportInBrowser$$' -v ./testbed/report/
