# toolsrv — see README.md. Every target works offline once modules are cached.
GO ?= go
BIN ?= bin/toolsrv

.PHONY: build test bench demo fuzz model clean

build:
	$(GO) build -o $(BIN) ./cmd/toolsrv

# The test command the README gives and CI runs.
test:
	$(GO) vet ./...
	$(GO) test -race ./...

# Go benchmarks (short); `toolsrv bench` records the full figures in bench/RESULTS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./...

# Rank the bundled example tools for a few requests with the built-in embedder.
demo: build
	$(BIN) ls --tools examples/tools
	$(BIN) rank --tools examples/tools "show me what changed in my git working tree"
	$(BIN) rank --tools examples/tools "find every TODO in the go files"
	$(BIN) rank --tools examples/tools "what's the weather like on mars"

# Rebuild the built-in embedder's table (embed/builtin/model.bin + model.sha256)
# from Debian packages; see embed/MODEL.md. Needs root for apt-get.
model:
	apt-get update -qq -o Acquire::Languages=en
	apt-get install -y -qq wordnet-base dict-foldoc dict-jargon dict-vera manpages-dev >/dev/null
	$(GO) run ./embed/train/cmd/train -out embed/builtin/model.bin

# Fuzz the .meta parser for FUZZTIME (default 10m).
FUZZTIME ?= 10m
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseMeta -fuzztime $(FUZZTIME) ./registry/

clean:
	rm -rf bin
