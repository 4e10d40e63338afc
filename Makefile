# toolsrv — see README.md. Every target works offline once modules are cached.
GO ?= go
BIN ?= bin/toolsrv

.PHONY: build test test-short test-npm-deps bench demo fuzz model model-base learn clean npm-deps conformance-deps

# Static binaries (no C library needed). toolsrv-sandbox, the sandbox helper
# on its own, makes each tool call cheaper when it sits next to toolsrv;
# toolsrv works without it.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/toolsrv
	CGO_ENABLED=0 $(GO) build -o $(dir $(BIN))toolsrv-sandbox ./cmd/toolsrv-sandbox

# The full suite, as CI runs it (.ci/run), and package exec's suite again
# with every call on a helper prepared for it (as serve and mcp run calls:
# exec.Options.Prepare). The MCP tests talk to real MCP servers and the MCP
# Inspector from npm (npm-deps), and run the official MCP conformance suite
# (conformance-deps), both installed first where npm is. Tests whose npm
# packages, conformance suite, OpenSSH, diod or PostgreSQL (Debian's
# postgresql package: the shared usage store's tests run a server of their
# own in a temporary directory) are missing skip, unless
# TOOLSRV_TEST_REQUIRE names them (.ci/run requires all five:
# npm,conformance,sshd,diod,postgres).
test: test-npm-deps
	$(GO) vet ./...
	$(GO) test -race -timeout 30m ./...
	TOOLSRV_TEST_PREPARE=1 $(GO) test -race -timeout 30m ./exec

# The quick suite: long tests (fork bombs, memory hogs, timeouts, real ssh
# logins) skip, and there is no race detector: under 2 minutes on 2 cores.
test-short:
	$(GO) test -short ./...

test-npm-deps:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory npm-deps conformance-deps; \
	else echo "make test: npm is not installed: the tests of the npm MCP servers and the MCP conformance suite skip (apt-get install -y nodejs npm, then make npm-deps conformance-deps)"; fi

# The npm MCP servers and the MCP Inspector the MCP tests use, at the
# versions pinned in mcp/testdata/npm/package-lock.json (npm ci; needs
# Node.js and npm, and the npm registry the first time only).
NPM_DIR = mcp/testdata/npm
npm-deps: $(NPM_DIR)/node_modules/.package-lock.json
$(NPM_DIR)/node_modules/.package-lock.json: $(NPM_DIR)/package-lock.json $(NPM_DIR)/package.json
	npm ci --prefix $(NPM_DIR) --no-audit --no-fund --loglevel=error

# The official MCP conformance suite and the Node.js 22 it runs on, pinned in
# mcp/testdata/conformance/package-lock.json (npm ci; the npm registry the
# first time only).
CONF_DIR = mcp/testdata/conformance
conformance-deps: $(CONF_DIR)/node_modules/.package-lock.json
$(CONF_DIR)/node_modules/.package-lock.json: $(CONF_DIR)/package-lock.json $(CONF_DIR)/package.json
	npm ci --prefix $(CONF_DIR) --no-audit --no-fund --loglevel=error

# Go benchmarks (short); `toolsrv bench` records the full figures in bench/RESULTS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./...

# Rank the bundled example tools for a few requests with the built-in embedder.
demo: build
	$(BIN) ls --tools examples/tools
	$(BIN) rank --tools examples/tools "show me what changed in my git working tree"
	$(BIN) rank --tools examples/tools "find every TODO in the go files"
	$(BIN) rank --tools examples/tools "what's the weather like on mars"

# Rebuild the rows of the built-in embedder's table (embed/builtin/model.bin +
# model.sha256) that the class terms (<num>, <pct>, <op>, …) have, from the
# request → tool data of train/data, every other row kept as committed:
# deterministic, from the repository alone (the committed table comes out
# byte for byte); see embed/MODEL.md.
model:
	$(GO) run ./train/cmd/embedding -base embed/builtin/model.bin -out embed/builtin/model.bin

# Rebuild the whole table from Debian packages, then its class rows: a new
# table of the same recipe, not byte for byte the committed one (the inputs
# are the installed system; embed/MODEL.md). Needs root for apt-get.
model-base:
	apt-get update -qq -o Acquire::Languages=en
	apt-get install -y -qq wordnet-base dict-foldoc dict-jargon dict-vera manpages-dev >/dev/null
	$(GO) run ./train/cmd/embedding -out embed/builtin/model.bin
	$(MAKE) --no-print-directory model

# Train the learned last step (learn/model.json: candidate and answerability
# models, the probe requests that calibrate the answerability per catalog) on
# the request → tool data in train/data, then re-tune the shipped thresholds
# on the training catalogs' held-out requests; see learn/MODEL.md. About a
# minute; the model file is deterministic.
LEARN_TMP ?= /tmp/toolsrv-learn
# The shipped thresholds are named after the table they were tuned with.
THRESHOLDS = thresholds/defaults/builtin_v1-$(shell cut -c1-8 embed/builtin/model.sha256).json
learn:
	rm -rf $(LEARN_TMP) && mkdir -p $(LEARN_TMP)
	$(GO) run ./train/cmd/learn extract -data train/data -out $(LEARN_TMP)/samples.gob
	$(GO) run ./train/cmd/learn fit -samples $(LEARN_TMP)/samples.gob -out learn/model.json
	$(GO) run ./train/cmd/learn export -data train/data -out $(LEARN_TMP)/corpora
	$(GO) run ./cmd/toolsrv tune --corpus $(LEARN_TMP)/corpora/train --abstain 0 --tolerance 0.005 \
		--out $(THRESHOLDS) --plot bench/tune-builtin.svg --curves $(LEARN_TMP)/curves.json
	$(GO) run ./bench/cmd/tuneplot $(LEARN_TMP)/curves.json bench/tune-builtin.png
	rm -f $(filter-out $(THRESHOLDS),$(wildcard thresholds/defaults/builtin_v1-*.json))

# Fuzz the .meta parser and the saved usage view's decoder for FUZZTIME (default 10m).
FUZZTIME ?= 10m
fuzz:
	$(GO) test -run '^$$' -fuzz 'FuzzParseMeta$$' -fuzztime $(FUZZTIME) ./registry/
	$(GO) test -run '^$$' -fuzz 'FuzzFastPaths$$' -fuzztime $(FUZZTIME) ./internal/jsonscan/
	$(GO) test -run '^$$' -fuzz 'FuzzCheck$$' -fuzztime $(FUZZTIME) ./internal/jsonscan/
	$(GO) test -run '^$$' -fuzz 'FuzzDecodeView$$' -fuzztime $(FUZZTIME) ./index/

clean:
	rm -rf bin $(NPM_DIR)/node_modules $(CONF_DIR)/node_modules
