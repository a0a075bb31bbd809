# Laya. `make demo` completes code with the bundled model; `make test` runs every test that can run
# on this machine (Linux or macOS); `make bench` measures the CPU backend against llama.cpp;
# `make app` (macOS only) builds build/Laya.app.
GO      ?= go
BIN     := bin/laya

.PHONY: all build demo test test-go lint test-vscode test-arm64 bench bench-replay bench-archsimd app check-darwin check-metal clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/laya

# make install [PREFIX=/usr/local] [DESTDIR=staging]: laya in PREFIX/bin, the bundled model in
# PREFIX/share/laya/models/laya-code (where laya looks beside its bin directory), the zsh widget
# in PREFIX/share/laya/laya.zsh.
.PHONY: install uninstall
PREFIX        ?= /usr/local
SHARE         := $(DESTDIR)$(PREFIX)/share/laya
BUNDLED_FILES := config.json tokenizer.json tokenizer_config.json model.safetensors MODEL_CARD.md

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(SHARE)/models/laya-code
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/laya
	install -m 0644 $(addprefix assets/models/laya-code/,$(BUNDLED_FILES)) $(SHARE)/models/laya-code/
	install -m 0644 shell/laya.zsh $(SHARE)/laya.zsh

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/laya
	rm -rf $(SHARE)

demo: build
	$(BIN) generate --prompt "$$(printf 'def fibonacci(n):\n    if n')" --max-tokens 40
	@echo
	$(BIN) generate --prompt 'for i := 0; i < len(xs); ' --max-tokens 32

test: lint test-go check-darwin check-darwin-link check-metal test-vscode

# staticcheck at a pinned version, so a new release's checks cannot fail a tree that passed;
# `go run pkg@version` fetches it through the module proxy without adding it to go.mod.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# go.mod and go.sum must be what `go mod tidy` writes, and staticcheck must find nothing.
lint:
	$(GO) mod tidy -diff
	$(GO) run $(STATICCHECK) ./...

test-go:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./engine/cpu/
	# The optional HuggingFace tokenizers backend: vet needs only the module's C header, so this
	# compile-checks it without libtokenizers.a.
	$(GO) vet -tags hftokenizers ./engine/tokenizer/

# The archsimd kernel the C kernels were measured against (docs/performance.md); opt-in, as
# GOEXPERIMENT=simd rebuilds the standard library.
bench-archsimd:
	GOEXPERIMENT=simd $(GO) test -count=1 -run ArchSIMD -bench ArchSIMD ./engine/cpu/

# Every Metal kernel type-checked by clang as C++14 with Metal's address spaces kept apart
# (metal/internal/checkmetal); needs clang 15 or later, which .ci/run installs.
check-metal:
	$(GO) run ./metal/internal/checkmetal

# The CPU backend's NEON kernels as an arm64 binary under qemu (installs the cross toolchain and
# qemu-user with apt when missing); CI runs it after `make test`.
test-arm64:
	bash build/bench/arm64-test.sh

test-vscode:
	cd editors/vscode && npm ci --no-audit --no-fund && npm test

bench:
	bash build/bench/run.sh
	bash build/bench/replay.sh

# laya replay only: keystrokes saved and latency on the bundled model (REPLAY_LIMIT=N for a quick run).
bench-replay:
	bash build/bench/replay.sh

clean:
	rm -rf bin build/Laya.app build/out

include build/app.mk
