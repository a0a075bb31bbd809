#!/usr/bin/env bash
# make bench: laya against llama.cpp on the same machine, same threads, same run.
#
# Generates (once, not committed) a TinyLlama-1.1B-shaped model with random weights as a Q4_0
# GGUF file and as an MLX 4-bit directory, runs `laya bench` on both and llama.cpp (the prebuilt
# CPU build of node-llama-cpp) on the GGUF, and prints the numbers side by side with ratios. laya
# runs in both precision modes: the default (int8 activations plus an int8 remainder) and plain
# int8 (--backend cpu-int8, the precision llama.cpp uses).
#
# Environment: THREADS (2), PROMPT_TOKENS (128), GEN_TOKENS (64), RUNS (3), SHAPE (tinyllama;
# "small" checks the script in seconds), BENCH_DIR (.bench), LAYA_BENCH_CACHE (~/.cache/laya-bench,
# where the npm packages go), PREBUILT (a directory holding laya and genmodel binaries, for a
# machine without Go).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"

THREADS=${THREADS:-2}
PROMPT=${PROMPT_TOKENS:-128}
GEN=${GEN_TOKENS:-64}
RUNS=${RUNS:-3}
SHAPE=${SHAPE:-tinyllama}
DIR=${BENCH_DIR:-.bench}/$SHAPE
CACHE=${LAYA_BENCH_CACHE:-$HOME/.cache/laya-bench}

case "$(uname -s)-$(uname -m)" in
Linux-x86_64) LLAMA_PKG=@node-llama-cpp/linux-x64 ;;
Linux-aarch64) LLAMA_PKG=@node-llama-cpp/linux-arm64 ;;
Darwin-arm64) LLAMA_PKG=@node-llama-cpp/mac-arm64-metal ;;
Darwin-x86_64) LLAMA_PKG=@node-llama-cpp/mac-x64 ;;
*) echo "bench: no prebuilt llama.cpp package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac

if [ -n "${PREBUILT:-}" ]; then
	LAYA=$PREBUILT/laya
	GENMODEL=("$PREBUILT/genmodel")
else
	go build -o bin/laya ./cmd/laya
	LAYA=bin/laya
	GENMODEL=(go run ./build/bench/genmodel)
fi

if [ ! -f "$DIR/model.gguf" ] || [ ! -f "$DIR/mlx4/model.safetensors" ]; then
	echo "bench: generating the $SHAPE-shaped random models in $DIR" >&2
	"${GENMODEL[@]}" -out "$DIR" -shape "$SHAPE"
fi

NODE_DIR=$CACHE/node
if [ ! -d "$NODE_DIR/node_modules/node-llama-cpp" ] || [ ! -d "$NODE_DIR/node_modules/$LLAMA_PKG" ]; then
	echo "bench: installing node-llama-cpp 3.22.1 into $NODE_DIR" >&2
	mkdir -p "$NODE_DIR"
	[ -f "$NODE_DIR/package.json" ] || echo '{"name": "laya-bench-llama", "private": true}' >"$NODE_DIR/package.json"
	# No install scripts and no binary download: the prebuilt package carries llama.cpp.
	(cd "$NODE_DIR" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --ignore-scripts --no-audit --no-fund \
		node-llama-cpp@3.22.1 "$LLAMA_PKG@3.22.1" >&2)
fi
# Node resolves the package from the script's own directory.
cp build/bench/llama.mjs "$NODE_DIR/llama.mjs"

GGUF=$(cd "$DIR" && pwd)/model.gguf
MLX=$(cd "$DIR" && pwd)/mlx4
FLAGS=(--threads "$THREADS" --prompt-tokens "$PROMPT" --gen-tokens "$GEN" --runs 1)
# Rounds alternate the engines, and each configuration keeps its fastest round, so that a burst of
# load from other programs on a shared machine does not land on one engine only.
rm -f "$DIR"/result-*.json
for round in $(seq "$RUNS"); do
	echo "bench: round $round of $RUNS" >&2
	"$LAYA" bench --model "$GGUF" "${FLAGS[@]}" --json >"$DIR/result-laya-gguf.$round.json"
	node "$NODE_DIR/llama.mjs" --model "$GGUF" "${FLAGS[@]}" >"$DIR/result-llama.$round.json"
	"$LAYA" bench --model "$MLX" "${FLAGS[@]}" --json >"$DIR/result-laya-mlx.$round.json"
	# Plain int8 activations: llama.cpp's precision (the default keeps products within 1e-5).
	"$LAYA" bench --model "$GGUF" --backend cpu-int8 "${FLAGS[@]}" --json >"$DIR/result-laya-gguf-int8.$round.json"
	"$LAYA" bench --model "$MLX" --backend cpu-int8 "${FLAGS[@]}" --json >"$DIR/result-laya-mlx-int8.$round.json"
done

python3 build/bench/report.py "$DIR"
