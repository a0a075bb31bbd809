#!/usr/bin/env bash
# make bench (second part): laya replay, the product metric. Types texts through the app's
# controller and completion path with a simulated user and prints keystrokes saved, wrong
# suggestions and pause-to-visible latency, with confidence gating on (the default) and off:
#   - the bundled model over its held-out text (assets/models/laya-code/heldout.txt);
#   - the bundled model over app/controller/text.go, Go it never saw (it was trained on the Go
#     and Python sources MODEL_CARD.md lists; this file is Laya's own);
#   - for latency only, a random-weight model of Qwen2.5-0.5B's size (4-bit MLX), ungated,
#     since random weights are never sure of anything, over the first 600 characters.
#
# Environment: THREADS (2), REPLAY_LIMIT (characters of each text typed; 0 = all), QWEN_LIMIT
# (characters the random model types; 600), BENCH_DIR
# (.bench), PREBUILT (a directory holding laya and genmodel binaries).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"

THREADS=${THREADS:-2}
LIMIT=${REPLAY_LIMIT:-0}
DIR=${BENCH_DIR:-.bench}
OUT=$DIR/replay
mkdir -p "$OUT"

if [ -n "${PREBUILT:-}" ]; then
	LAYA=$PREBUILT/laya
	GENMODEL=("$PREBUILT/genmodel")
else
	go build -o bin/laya ./cmd/laya
	LAYA=bin/laya
	GENMODEL=(go run ./build/bench/genmodel)
fi
QWEN=$DIR/qwen0.5b
if [ ! -f "$QWEN/mlx4/model.safetensors" ]; then
	echo "bench: generating the qwen0.5b-shaped random model in $QWEN" >&2
	"${GENMODEL[@]}" -out "$QWEN" -shape qwen0.5b
fi

replay() { # name text [flags...]
	local name=$1 text=$2
	shift 2
	echo "bench: replay $name" >&2
	"$LAYA" replay --threads "$THREADS" --limit "$LIMIT" --json --text "$text" "$@" >"$OUT/$name.json"
}
HELDOUT=assets/models/laya-code/heldout.txt
GOFILE=app/controller/text.go
replay heldout-gated "$HELDOUT"
replay heldout-ungated "$HELDOUT" --gating=false
replay go-gated "$GOFILE"
replay go-ungated "$GOFILE" --gating=false
# Latency to the first visible character does not depend on the suggestion's length: 8 tokens
# keep this run short.
LIMIT=${QWEN_LIMIT:-600} replay qwen0.5b-ungated "$GOFILE" --gating=false --max-tokens 8 --model "$QWEN/mlx4"

python3 build/bench/replay_report.py "$OUT"/heldout-gated.json "$OUT"/heldout-ungated.json \
	"$OUT"/go-gated.json "$OUT"/go-ungated.json "$OUT"/qwen0.5b-ungated.json
