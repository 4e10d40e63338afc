# toolsrv — see README.md. Every target works offline once modules are cached.
GO ?= go
BIN ?= bin/toolsrv

.PHONY: build test bench demo fuzz model clean

build:
	$(GO) build -o $(BIN) ./cmd/toolsrv

# The test command the README gives and CI runs.
test:
	$(GO) vet ./...
	$(GO) test ./...

# Go benchmarks (short); `toolsrv bench` records the full figures in bench/RESULTS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./...

# Rank the bundled example tools for a few requests with the built-in embedder.
demo: build
	$(BIN) ls --tools examples/tools
	$(BIN) rank --tools examples/tools "show me what changed in my git working tree"
	$(BIN) rank --tools examples/tools "find every TODO in the go files"
	$(BIN) rank --tools examples/tools "what's the weather like on mars"

# Fuzz the .meta parser for FUZZTIME (default 10m).
FUZZTIME ?= 10m
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseMeta -fuzztime $(FUZZTIME) ./registry/

clean:
	rm -rf bin
