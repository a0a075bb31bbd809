# Laya. `make demo` completes code with the bundled model; `make test` runs every test that can run
# on this machine; `make app` (macOS only) builds build/Laya.app.
GO      ?= go
BIN     := bin/laya

.PHONY: all build demo test bench app check-darwin clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/laya

demo: build
	$(BIN) generate --prompt 'def fibonacci(n):' --max-tokens 48

test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

clean:
	rm -rf bin build/Laya.app build/out
